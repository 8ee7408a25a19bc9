"""Command authority and the operator stop, without ROS: who may write a command stream, what
the tendon driver sends when someone else does, and the stop's latch, as the supervisor and the
driver apply them (the node graph's tests are in test_graph_authority.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_safety import TICK, FakeController, World, assert_minimum, make_supervisor, tick

from musculo_control.hardware.drivers import load_drivers
from musculo_control.loop import build
from musculo_control.loop.parts import load_parts
from musculo_control.safety.authority import AuthorityConfig, Writer, WriterWatch, node_name
from musculo_control.safety.config import load_safety_config
from musculo_control.safety.operator_stop import OperatorStop
from musculo_control.safety.supervisor_state import SupervisorState

DT = 0.002  # driver tick [s]
CTRL = "/activation_qp_node"
GID_CTRL = bytes(range(1, 17))
GID_STRAY = bytes(range(101, 117))
CFG = AuthorityConfig(unknown_writer_s=0.5)


@pytest.fixture(scope="module")
def parts(config_dir):
    return load_parts(config_dir)


@pytest.fixture(scope="module")
def drivers(robot):
    return load_drivers(robot)


@pytest.fixture(scope="module")
def safety_cfg(config_dir, drivers):
    return load_safety_config(config_dir, drivers.tendons.config)


@pytest.fixture(scope="module")
def ctrl_cfg(config_dir):
    from musculo_control.control.controller_config import load_controller_config

    return load_controller_config(config_dir)


@pytest.fixture(scope="module")
def home(robot, task):
    from musculo_control.control.goal import HandGoal
    from musculo_control.estimation.snapshot import DynamicsEstimator

    snap = DynamicsEstimator(robot, task).compute(robot.home_pose_rad, np.zeros(7), 0.0)
    return snap, HandGoal.hold(snap.hand_position_m, snap.hand_rotation)


# -- the writers of a stream ---------------------------------------------------------------------
def test_node_names_from_the_graph():
    assert node_name("/", "activation_qp_node") == "/activation_qp_node"
    assert node_name("/arm", "tendon_driver_node") == "/arm/tendon_driver_node"
    # rmw's placeholders while discovery has not named an endpoint's node yet
    assert node_name("_NODE_NAMESPACE_UNKNOWN_", "_NODE_NAME_UNKNOWN_") == ""


def test_only_the_authorised_writer_is_admitted_and_a_foreign_one_is_named():
    watch = WriterWatch("muscle_commands", {CTRL}, CFG)
    ok = watch.judge([Writer(CTRL, GID_CTRL)], 0.0)
    assert ok.admit and not ok.foreign and ok.message == ""
    bad = watch.judge([Writer(CTRL, GID_CTRL), Writer("/stray", GID_STRAY)], 0.1)
    assert not bad.admit and bad.foreign == ("/stray",)
    assert "/stray" in bad.message
    # without a sample's writer id its samples cannot be told apart: none is admitted
    assert not watch.admits(None)
    # with ids the graph lists, exactly the authorised writer's pass
    assert watch.admits(GID_CTRL) and watch.identified
    assert not watch.admits(GID_STRAY) and watch.identified
    # an id the graph does not list (another middleware's numbering): the graph decides
    assert not watch.admits(b"\x09" * 16) and not watch.identified
    # the intruder gone: admitted again, and remembered
    again = watch.judge([Writer(CTRL, GID_CTRL)], 0.2)
    assert again.admit and watch.admits(None) and watch.foreign_seen == ["/stray"]


def test_a_writer_the_graph_does_not_list_yet_is_refused_once_ids_match():
    """A stray's first samples can come before discovery lists it: once the controller's
    samples matched the graph's ids, an unlisted id is refused even on a clean graph; before
    any match (a middleware whose sample ids are not its graph's) the graph decides."""
    watch = WriterWatch("muscle_commands", {CTRL}, CFG)
    assert watch.judge([Writer(CTRL, GID_CTRL)], 0.0).admit
    assert watch.admits(b"\x09" * 16) and not watch.ids_match  # no match seen yet
    assert watch.admits(GID_CTRL) and watch.ids_match
    assert not watch.admits(GID_STRAY)  # clean graph, id not listed: refused
    assert watch.admits(None)  # no id at all: the graph decides (clean)
    watch.judge([Writer(CTRL, GID_CTRL), Writer("/stray", GID_STRAY)], 0.1)
    assert not watch.admits(GID_STRAY) and watch.admits(GID_CTRL)


def test_ids_compare_without_rmw_padding():
    """Humble stores 24 bytes, later distributions 16: the same endpoint either way."""
    watch = WriterWatch("muscle_commands", {CTRL}, CFG)
    watch.judge([Writer(CTRL, GID_CTRL + bytes(8)), Writer("/stray", GID_STRAY)], 0.0)
    assert watch.admits(GID_CTRL) and not watch.admits(GID_STRAY + bytes(8))


def test_an_unnamed_writer_is_withheld_then_foreign():
    watch = WriterWatch("muscle_commands", {CTRL}, CFG)
    unnamed = Writer("", GID_STRAY)
    v = watch.judge([Writer(CTRL, GID_CTRL), unnamed], 1.0)
    assert not v.admit and not v.foreign and v.withheld  # not trusted, not yet a fault
    v = watch.judge([Writer(CTRL, GID_CTRL), unnamed], 1.0 + CFG.unknown_writer_s - 1e-3)
    assert not v.admit and not v.foreign
    v = watch.judge([Writer(CTRL, GID_CTRL), unnamed], 1.0 + CFG.unknown_writer_s)
    assert v.foreign and "unnamed" in v.foreign[0]
    # named at last: judged by its name (here the controller's own, restarted)
    v = watch.judge([Writer(CTRL, GID_STRAY)], 2.0)
    assert v.admit


# -- the tendon driver ---------------------------------------------------------------------------
def _driver_stage(parts):
    stage = build.tendon_stage(parts)
    stage.writers = WriterWatch("muscle_commands", {CTRL}, parts.safety.authority)
    return stage


def _run(stage, t, writers, samples, m):
    """One driver tick at ``t``: tendon state, the graph, the samples (tension, gid) in order."""
    stage.driver._read_stamp = t  # the arm's tendon states are fresh
    stage.judge_writers(writers, t)
    for k, (tension, gid) in enumerate(samples):
        stage.receive_command(t - 1e-4 * (len(samples) - k), np.full(m, tension), gid)
    return stage.output(t)


def _hold_controller(stage, m, f_ctrl, t_end):
    t = 0.0
    while t < t_end:
        out = _run(stage, t, [Writer(CTRL, GID_CTRL)], [(f_ctrl, GID_CTRL)], m)
        t += DT
    return t, out


@pytest.mark.parametrize("ids", [True, False], ids=["sample ids", "graph only"])
def test_a_foreign_commander_never_reaches_the_actuators(parts, robot, ids):
    """900 N from a stray publisher at every tick for 3 s: with each sample's writer known the
    controller's commands pass; with the graph alone minimum tension, at the first tick."""
    m, f_min = robot.n_muscles, robot.hill.f_min_n
    stage = _driver_stage(parts)
    f_ctrl = 40.0
    t, out = _hold_controller(stage, m, f_ctrl, 1.0)
    assert np.allclose(out.tension_n, f_ctrl)
    both = [Writer(CTRL, GID_CTRL), Writer("/stray_commander", GID_STRAY)]
    first = True
    sent_max = 0.0
    while t < 4.0:
        samples = [(f_ctrl, GID_CTRL if ids else None), (900.0, GID_STRAY if ids else None)]
        out = _run(stage, t, both, samples, m)
        sent_max = max(sent_max, float(out.tension_n.max()))
        if first:  # the first tick with the intruder listed: named, and never obeyed
            assert "/stray_commander" in stage.health.message
            assert stage.health.level == 2
            first = False
        t += DT
    if ids:
        assert np.allclose(out.tension_n, f_ctrl) and sent_max == pytest.approx(f_ctrl)
    else:
        assert sent_max == pytest.approx(f_min) and not out.ok
        assert any("cannot be told apart" in f for f in out.faults)
    assert stage.foreign_refused > 0
    # the intruder gone: the controller's commands again, ramped from where the output was
    out = _run(stage, t, [Writer(CTRL, GID_CTRL)], [(f_ctrl, GID_CTRL)], m)
    assert out.ok and stage.health.level < 2
    assert np.all(out.tension_n <= f_ctrl + 1e-9)


def test_the_operator_stop_at_the_driver(parts, robot):
    m, f_min = robot.n_muscles, robot.hill.f_min_n
    stage = _driver_stage(parts)
    f_ctrl = 60.0
    t, out = _hold_controller(stage, m, f_ctrl, 1.0)
    stage.operator_stop(True, t, "test stop")
    out = _run(stage, t, [Writer(CTRL, GID_CTRL)], [(f_ctrl, GID_CTRL)], m)
    assert np.allclose(out.tension_n, f_min), "minimum tension at the first tick"
    assert "operator stop" in stage.health.message and "test stop" in stage.health.message
    stage.reset()  # a restart of the stage does not release it
    for _ in range(100):
        t += DT
        out = _run(stage, t, [Writer(CTRL, GID_CTRL)], [(f_ctrl, GID_CTRL)], m)
        assert np.allclose(out.tension_n, f_min)
    stage.operator_stop(False, t)
    t += DT
    out = _run(stage, t, [Writer(CTRL, GID_CTRL)], [(f_ctrl, GID_CTRL)], m)
    rate = parts.drivers.tendons.config.rate_limit_n_s
    assert out.ok and np.allclose(out.tension_n, min(f_ctrl, f_min + rate * DT))


# -- the operator stop at the controller ---------------------------------------------------------
def test_the_stop_latches_until_its_own_release(robot, safety_cfg, ctrl_cfg, drivers, home):
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    out, _ = tick(sup, world, ctrl, TICK, goal)
    assert out.ok
    sup.stop.stop(TICK, "operator stop on operator_stop")
    out, report = tick(sup, world, ctrl, 2 * TICK, None)
    assert_minimum(out, sup)
    assert "operator_stop" in report.rules and report.state == SupervisorState.FAULT
    # goals and acknowledges are refused while stopped, and say so
    moved = goal._replace(position_m=goal.position_m + 0.01) if hasattr(goal, "_replace") \
        else goal
    assert sup.offer_goal(moved, 3 * TICK, 3 * TICK) is False
    assert sup.acknowledge() == ()
    t = 3 * TICK
    for _ in range(50):
        t += TICK
        out, report = tick(sup, world, ctrl, t, None)
        assert_minimum(out, sup)
    assert "1 goal(s) refused" in report.summary() and "1 acknowledge(s)" in report.summary()
    sup.stop.release(t)
    resets = len(ctrl.resets)
    t += TICK
    out, report = tick(sup, world, ctrl, t, None)
    assert_minimum(out, sup)  # recovery_hold_s first
    assert report.state == SupervisorState.HOLDING
    t += safety_cfg.recovery_hold_s + TICK
    out, report = tick(sup, world, ctrl, t, None)
    assert out.ok and report.state == SupervisorState.RUNNING
    assert len(ctrl.resets) == resets + 1  # resumed afresh, on the resume ramp
    assert sup._ramp is not None and sup._ramp.active(t)


def test_a_second_writer_to_the_actuators_is_latched(robot, safety_cfg, ctrl_cfg, drivers,
                                                     home):
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    tick(sup, world, ctrl, TICK, goal)
    sup.condition("foreign_actuator_writer", "hw/tendon_commands: foreign writer(s) /stray")
    out, report = tick(sup, world, ctrl, 2 * TICK, None)
    assert_minimum(out, sup)
    assert "/stray" in report.summary() and report.latched
    sup.condition("foreign_actuator_writer", "")  # gone, but latched
    t = 2 * TICK
    for _ in range(20):
        t += TICK
        out, report = tick(sup, world, ctrl, t, None)
    assert_minimum(out, sup)
    assert report.state == SupervisorState.LATCHED
    assert [f.rule for f in sup.acknowledge()] == ["foreign_actuator_writer"]
    t += safety_cfg.recovery_hold_s + TICK
    out, report = tick(sup, world, ctrl, t, None)
    assert out.ok


def test_operator_stop_object():
    stop = OperatorStop()
    assert not stop.refuse("goal")
    stop.stop(1.0, "")
    stop.stop(2.0, "later")  # the first stop stands
    assert stop.stopped and stop.since_s == 1.0 and stop.reason == "operator stop"
    assert stop.refuse("goal") and stop.refuse("acknowledge")
    assert stop.release(3.0) and not stop.stopped and math.isnan(stop.since_s)
    assert not stop.release(4.0)


# -- discovery range -----------------------------------------------------------------------------
def test_the_mock_graph_stays_on_this_machine(tmp_path, config_dir):
    from musculo_control.nodes.discovery import localhost_discovery
    from musculo_control.nodes.graph import GraphOptions
    from musculo_control.nodes.launcher import GraphProcesses

    assert localhost_discovery({}) == {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    assert localhost_discovery({"ROS_DISTRO": "jazzy"}) == {
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    assert localhost_discovery({"ROS_DISTRO": "humble"}) == {"ROS_LOCALHOST_ONLY": "1"}
    # the caller's own choice stands (a lab network)
    assert localhost_discovery({"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}) == {}
    assert localhost_discovery({"ROS_DISTRO": "humble", "ROS_LOCALHOST_ONLY": "0"}) == {}
    mock = GraphProcesses(GraphOptions(config_dir), tmp_path, env={"ROS_DISTRO": "kilted"})
    assert mock.env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    robot = GraphProcesses(GraphOptions(config_dir, mock=False), tmp_path, env={})
    assert "ROS_AUTOMATIC_DISCOVERY_RANGE" not in robot.env
    assert "ROS_LOCALHOST_ONLY" not in robot.env


# -- SROS2 ---------------------------------------------------------------------------------------
def test_the_shipped_policy_is_the_generated_one_and_each_stream_has_one_writer():
    from pathlib import Path

    from musculo_control.nodes.security import INTERFACES, policy_xml

    shipped = Path(__file__).resolve().parents[1] / "config" / "sros2" / "policy.xml"
    assert shipped.read_text() == policy_xml(), \
        "config/sros2/policy.xml: write musculo_control.nodes.security.policy_xml() again"
    writers: dict[str, list[str]] = {}
    for node, iface in INTERFACES.items():
        for name in iface.endpoints(("use_sim_time", "lockstep"))["publish"]:
            writers.setdefault(name, []).append(node)
    assert writers["muscle_commands"] == ["activation_qp_node"]
    assert writers["hw/tendon_commands"] == ["tendon_driver_node"]
    assert writers["dynamics"] == ["dynamics_node"]
    assert writers["joint_states"] == ["potentiometer_node"]
    assert "operator_stop" not in writers  # an operator's, outside the suite


def test_the_policy_parses_as_sros2_reads_it():
    import xml.etree.ElementTree as ET

    from musculo_control.nodes.security import policy_xml

    root = ET.fromstring(policy_xml())
    assert root.tag == "policy" and root.get("version") == "0.2.0"
    paths = [e.get("path") for e in root.iter("enclave")]
    assert "/musculo_control/tendon_driver_node" in paths
    assert "/musculo_control/control_process" in paths
    for profile in root.iter("profile"):
        assert profile.get("ns") == "/" and profile.get("node")


def test_each_shared_process_has_an_enclave_of_its_own_nodes_only():
    """The shared layout's processes (nodes/graph.py SHARED_PROCESSES) each run in their own
    enclave with their nodes' profiles and no other: the controller's process may not write
    the actuators, the drivers' process may not command the muscles."""
    import xml.etree.ElementTree as ET

    from musculo_control.nodes.graph import SHARED_PROCESSES
    from musculo_control.nodes.security import enclave_of, policy_xml

    root = ET.fromstring(policy_xml())
    enclaves = {e.get("path"): e for e in root.iter("enclave")}

    def published(process: str) -> set[str]:
        return {t.text for topics in enclaves[enclave_of(process)].iter("topics")
                if topics.get("publish") == "ALLOW" for t in topics.iter("topic")}

    for process, nodes in SHARED_PROCESSES.items():
        profiles = {p.get("node") for p in enclaves[enclave_of(process)].iter("profile")}
        assert {n for n in profiles if not n.startswith("_")} == set(nodes), process
    assert set(SHARED_PROCESSES) == {"hardware_process", "control_process"}
    assert "hw/tendon_commands" in published("hardware_process")
    assert "muscle_commands" not in published("hardware_process")
    assert "muscle_commands" in published("control_process")
    assert "hw/tendon_commands" not in published("control_process")
