"""The node graph for real: every node in its own process on real rclpy (the ROS 2 wheels of the
test extra), started as ``mock_arm.launch.py`` starts it, watched from outside.

Simulated time (the mock arm publishes /clock at half real time and holds it for a lagging
node) unless a test says otherwise, so that the figures asserted are the loop's, not the load
of the machine's: rates and latencies are measured on the stamps.
"""

from __future__ import annotations

import math
import signal
import warnings

import numpy as np
import pytest
from graph_harness import (
    REACH_TOLERANCE_M,
    errors_after,
    first_after,
    first_diagnostic,
    first_rise,
    logs,
    minimum_tension,
    on_grid,
    rate_by_count,
    rate_by_stamps,
    running_graph,
    stopping,
    wait_running,
)

from musculo_control.loop.parts import load_parts
from musculo_control.nodes.node_config import NODE_PARAMS
from musculo_control.paths import default_config_dir
from musculo_control.sim.fault_matrix import FaultMatrixConfig
from musculo_control.sim.reliability_config import load_reliability_section
from musculo_control.testing.node_injection import STAND_INS

#: every test is bounded in wall time (a hung graph must fail, not hang the run)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def parts():
    return load_parts(default_config_dir())


@pytest.mark.parametrize("executor", ["events", "single_threaded"])
def test_nominal_run_never_goes_to_the_safe_state_and_every_stream_keeps_its_rate(parts,
                                                                                tmp_path,
                                                                                executor):
    """Under each executor the nodes can spin (nodes/executors.py: the EventsExecutor where
    rclpy has it, asked for here on simulated time too; the single-threaded one, Humble's)."""
    f_min = parts.robot.hill.f_min_n
    extra = {node: {"executor": executor} for node in NODE_PARAMS}
    with running_graph(parts, tmp_path, extra=extra) as (graph, obs):
        t0 = wait_running(graph, obs)
        assert obs.wait_for(4.0, 120.0), logs(graph)
        t1 = obs.now_s()
        # by stamps: a busy observer receives commands sent before the release after it
        commands = obs.snapshot(obs.commands)
        unsafe = [s for s, f in zip(commands.stamp, commands.values)
                  if s >= t0 and minimum_tension(f, f_min)]
        assert not unsafe, (f"{unsafe[:5]}\n" + "\n".join(map(str, errors_after(obs, t0)[:5]))
                            + "\n" + logs(graph))
        assert not errors_after(obs, t0), errors_after(obs, t0)[:5]
        # rates in simulated time over the window, by the nodes' own counts; what the observer
        # received of each stream lies on its grid (it may lose samples when it is busy)
        rates = parts.drivers.rates
        loop = parts.controller.loop
        window = (t0 + 0.5, t1 - 0.5)
        for node, rec, nominal in (("potentiometer_node", obs.joint_states, rates.sensor_rate_hz),
                                   ("tendon_driver_node", obs.sent, rates.driver_rate_hz),
                                   ("activation_qp_node", obs.commands, loop.control_rate_hz),
                                   ("dynamics_node", obs.dynamics, loop.dynamics_rate_hz)):
            rate, resolution = rate_by_count(obs, node, *window)
            assert abs(rate - nominal) <= 0.02 * nominal + resolution, (node, nominal, rate)
            stamps = obs.snapshot(rec).stamp
            # a snapshot carries its joint sample's stamp, up to 2 sensor steps before the tick
            tolerance = 0.05 + (4.0 / rates.sensor_rate_hz * nominal if rec is obs.dynamics
                                else 0.0)
            share = on_grid(stamps, *window, 1.0 / nominal, tolerance)
            assert share > 0.9, (node, share, np.diff(stamps)[:20])
        # the driver's clamp never acted: the controller keeps within the envelope itself
        driver = obs.diagnostics_of("tendon_driver_node")[-1]
        assert driver.values["ticks with a clamped tendon"] == "0", driver.values
        sent = np.asarray(obs.snapshot(obs.sent).values)
        assert np.isfinite(sent).all()
        assert sent.max() <= parts.drivers.tendons.config.max_tension_n + 1e-6


def test_a_goal_10_cm_away_is_reached_within_tolerance_in_5_s(parts, tmp_path):
    with running_graph(parts, tmp_path) as (graph, obs):
        wait_running(graph, obs)
        assert obs.wait_until(lambda: len(obs.hand) > 0 and len(obs.goals_in_force) > 0, 30.0)
        start = obs.snapshot(obs.hand).values[-1]
        _, orientation = obs.snapshot(obs.goals_in_force).values[-1]  # the hand's, held
        goal = start + np.array([0.0, 0.10, 0.0])
        obs.send_goal_pose(goal, orientation)
        t_goal = obs.now_s()
        assert obs.wait_for(5.0, 120.0), logs(graph)
        hand = obs.snapshot(obs.hand).since(t_goal)
        dist = np.linalg.norm(np.asarray(hand.values) - goal, axis=1)
        assert dist[-1] < REACH_TOLERANCE_M, (dist[-1], logs(graph))
        inside = np.asarray(hand.t)[dist < REACH_TOLERANCE_M]
        assert inside.size and inside[0] - t_goal < 5.0


@pytest.mark.parametrize("node, reason", [
    ("dynamics_node", "snapshot_stale"),
    ("potentiometer_node", "joint_state_stale"),
    ("tendon_driver_node", "driver_silent"),
])
def test_killing_a_node_ends_in_its_stop_within_100_ms_with_the_reason(
        parts, tmp_path, node, reason):
    with running_graph(parts, tmp_path) as (graph, obs):
        wait_running(graph, obs)
        assert obs.wait_for(1.0, 60.0)
        graph.send(node, signal.SIGKILL)
        assert obs.wait_for(0.5, 60.0), logs(graph)
        assert obs.caught_up(obs.commands, obs.now_s() - 0.05), logs(graph)
        # judged by the nodes' stamps from the killed node's last output (an observer that reads
        # late on a loaded computer receives commands sent before the kill after it, and reads
        # the simulated clock late too, so its own time of the kill would be early)
        output = {"dynamics_node": obs.dynamics, "potentiometer_node": obs.joint_states,
                  "tendon_driver_node": obs.sent}[node]
        t_kill = obs.newest_stamp(output)
        commands = obs.snapshot(obs.commands)
        diag = next((d for d in obs.diagnostics_of("activation_qp_node")
                     if d.stamp >= t_kill and d.level >= 2 and reason in d.message), None)
        assert diag is not None and diag.stamp - t_kill <= 0.1, (diag, obs.diagnostics[-5:])
        # an input lost: a hold (safety.yaml stops.rules), the arm keeps its posture
        assert "(hold)" in diag.message, diag.message
        if node == "tendon_driver_node":
            # nobody forwards the QP's commands now: the actuator modules' own watchdog
            # (the mock arm's node runs on the wall clock and stamps its reports so: asked only
            # to report it; when, the mock arm's own tests judge)
            mock = first_diagnostic(obs, diag.t, "mock_hardware_node", 2, ("watchdog",))
            assert mock is not None, obs.diagnostics[-5:]
        # and it stays stopped once the controller names the reason (before that, a sample
        # late on a loaded computer may have stopped for a tick and recovered: by design)
        later = [f for s, f in zip(commands.stamp, commands.values) if s >= diag.stamp]
        assert stopping(later), later[:3]


def test_bad_goals_are_refused_and_the_arm_keeps_its_goal(parts, tmp_path):
    f_min = parts.robot.hill.f_min_n
    with running_graph(parts, tmp_path) as (graph, obs):
        t0 = wait_running(graph, obs)
        assert obs.wait_until(lambda: len(obs.goals_in_force) > 0, 30.0)
        held, orientation = obs.snapshot(obs.goals_in_force).values[-1]
        good = held + np.array([0.0, 0.02, 0.0])
        obs.send_goal_pose(good, orientation)
        assert obs.wait_until(lambda: np.allclose(obs.goals_in_force.values[-1][0], good), 30.0)
        stamp_good = obs.now_s()
        from musculo_control.stamps import Stamp

        cases = [
            (dict(position_m=[0.3, math.nan, 0.3]), "goal_invalid"),
            (dict(position_m=held + [0.8, 0.0, 0.0]), "goal_outside_workspace"),
            (dict(position_m=held, frame_id="world"), "goal_invalid"),
            (dict(position_m=held, stamp=Stamp.from_seconds(stamp_good - 0.5)), "goal_invalid"),
        ]
        for kwargs, rule in cases:
            t = obs.now_s()
            position = kwargs.pop("position_m")
            obs.send_goal_pose(position, orientation, **kwargs)
            assert obs.wait_until(lambda t=t, rule=rule: first_diagnostic(
                obs, t, "activation_qp_node", 1, (rule,)) is not None, 30.0), (rule, kwargs)
        assert obs.wait_for(0.3, 30.0)
        assert np.allclose(obs.snapshot(obs.goals_in_force).values[-1][0], good)
        qp = obs.diagnostics_of("activation_qp_node")[-1]
        assert int(qp.values["goals refused"]) >= len(cases), qp.values
        commands = obs.snapshot(obs.commands).since(t0)
        assert not any(minimum_tension(f, f_min) for f in commands.values)


# -- a node that cannot start --------------------------------------------------------------------
def _start_alone(node: str, *ros_args: str) -> tuple[int, str]:
    """Run node ``node`` as the launcher starts it; (exit code, output)."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", f"musculo_control.nodes.{node}",
                             "--ros-args", *ros_args], capture_output=True, text=True,
                            timeout=120, check=False)
    return result.returncode, result.stdout + result.stderr


def test_a_missing_parameter_file_stops_the_node_naming_the_file(tmp_path):
    missing = tmp_path / "no_such_params.yaml"
    code, out = _start_alone("activation_qp_node", "--params-file", str(missing))
    assert code != 0 and str(missing) in out and "<file>" in out, out


@pytest.mark.parametrize("text, key", [
    ("activation_qp_node:\n  ros__parameters:\n    tendon_queue: deep\n",
     "activation_qp_node.ros__parameters.tendon_queue"),
    ("activation_qp_node:\n  ros__parameters:\n    rate_hz: 125.0\n",
     "activation_qp_node.ros__parameters.rate_hz"),
    ("activation_qp_node:\n  ros__parameters: [1, 2\n", "<file>"),
])
def test_a_malformed_parameter_file_stops_the_node_naming_file_and_key(tmp_path, text, key):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    code, out = _start_alone("activation_qp_node", "--params-file", str(path))
    assert code != 0 and str(path) in out and key in out, out


@pytest.mark.parametrize("node", ["dynamics_node", "tendon_driver_node"])  # the driver: its
def test_a_bad_config_folder_stops_the_node_naming_the_file(tmp_path, node):  # helper process
    code, out = _start_alone(node, "-p", f"config_dir:={tmp_path}")
    assert code != 0 and str(tmp_path / "robot.yaml") in out, out


def test_a_malformed_parameter_file_stops_the_whole_graph_before_any_node(tmp_path, parts):
    from musculo_control.errors import ConfigError
    from musculo_control.nodes.graph import GraphOptions
    from musculo_control.nodes.launcher import GraphProcesses

    path = tmp_path / "params.yaml"
    path.write_text("dynamics_node:\n  ros__parameters:\n    warn_throttle_s: -1.0\n")
    with pytest.raises(ConfigError) as err:
        GraphProcesses(GraphOptions(parts.config_dir, params_file=path), tmp_path)
    assert err.value.file == str(path)
    assert err.value.key == "dynamics_node.ros__parameters.warn_throttle_s"


# -- a snapped tendon: detected, latched, acknowledged over the service, resumed -----------------
def test_a_snapped_tendon_latches_until_acknowledged_then_control_resumes(parts, tmp_path):
    f_min = parts.robot.hill.f_min_n
    # simulated time of the mock's clock (it starts at 1 s) [s]: late enough that the controller
    # has taken the arm over first (a CI run whose six processes started slowly snapped the
    # tendon at 2.5 s, before the mock had let the arm go, and the graph never 'started')
    inject_at, lasts = 4.0, 0.3
    extra = {"mock_hardware_node": {"inject_fault": "tendon_snap", "inject_at_s": inject_at,
                                    "inject_for_s": lasts}}
    # the mock arm that injects is the test side's stand-in (the production node has no
    # injection)
    stand_in = {"mock_hardware_node": STAND_INS["mock_hardware_node"]}
    with running_graph(parts, tmp_path, extra=extra, stand_ins=stand_in) as (graph, obs):
        wait_running(graph, obs)
        assert obs.wait_until(lambda: obs.now_s() > inject_at + lasts + 0.5, 180.0), logs(graph)
        tendon_rules = ("tendon_snapped", "tendon_runaway", "tendon_slack", "actuator_lagging",
                        "actuator_tracking", "consistency")
        fault = next((d for d in obs.diagnostics_of("activation_qp_node")
                      if d.t >= inject_at and d.level >= 2
                      and any(r in d.message for r in tendon_rules)), None)
        # Within 100 ms, as a killed node's fault (above). The 24 ms target is the fault matrix's
        # to judge (doc/safety.md, with its misses under load). Measured: 8 ms alone, 10-18 ms
        # with a busy loop per core; two fresh-clone CI runs, before the lockstep awaited the
        # tendon samples (the driver's of the mock's, the QP node's of the driver's), took 40
        # and 48 ms. Stamps are sums of periods: compared to the microsecond.
        assert fault is not None and round(fault.t - inject_at, 6) <= 0.1, \
            (fault, obs.diagnostics[-10:])
        commands = obs.snapshot(obs.commands)
        # its stop from the fault on: a descend (an unbalanced arm), escalated to a cut when the
        # free winch runs away (tendon_runaway, latched); the commands never rise
        stop = commands.since(fault.stamp)
        states = obs.snapshot(obs.controller_state)
        assert stopping(stop.values), "\n".join([
            first_rise(stop),
            str([(round(t, 3), v["supervisor_state"]) for t, v in zip(states.t, states.values)
                 if fault.stamp <= t <= fault.stamp + 0.8]),
            *(f"{d.t:.3f} {d.level} {d.message[:200]}" for d in obs.diagnostics_of(
                "activation_qp_node") if d.t >= fault.stamp)])
        # the tendon is mended, but the fault stays latched: its stop until acknowledged
        states = obs.snapshot(obs.controller_state)
        latched = [v for t, v in zip(states.t, states.values) if t > inject_at + lasts + 0.2]
        assert latched and all(v["supervisor_state"] == 3.0 for v in latched[-10:]), \
            "\n".join([str([v["supervisor_state"] for v in latched[-10:]]),
                       *(f"{d.t:.3f} {d.level} {d.message[:300]}" for d in obs.diagnostics_of(
                           "activation_qp_node") if d.t >= inject_at + lasts)][-12:])
        assert minimum_tension(commands.values[-1], f_min), commands.values[-1]
        ok, message = obs.acknowledge()
        assert ok and "tendon_runaway" in message, message
        t_ack = obs.now_s()
        assert obs.wait_for(0.3, 180.0), logs(graph)
        resumed = first_after(obs.snapshot(obs.commands), t_ack,
                              lambda f: not minimum_tension(f, f_min))
        assert resumed is not None and resumed - t_ack < 0.2
        # Pulling back an arm that hung at minimum tension for a second (its pose near the
        # singular straight arm, actuators commanded up to their 1500 N) latched a tendon rule
        # again in about one graph run in four; an operator acknowledges again. Said as a
        # warning (the reason, for the record), failed only if it does not settle.
        for attempt in range(3):
            assert obs.wait_for(3.0, 180.0), logs(graph)
            state = obs.snapshot(obs.controller_state).values[-1]["supervisor_state"]
            if state == 0.0 or attempt == 2:
                break
            again = [d.message[:300] for d in obs.diagnostics_of("activation_qp_node")
                     if d.t >= t_ack and d.level >= 2]
            warnings.warn(f"the recovery latched again: {again[:3]}", stacklevel=1)
            ok, message = obs.acknowledge()
            assert ok, message
            t_ack = obs.now_s()
        after = obs.snapshot(obs.controller_state).since(t_ack + 0.2)
        assert after.values and after.values[-1]["supervisor_state"] == 0.0, \
            [(round(d.t, 3), d.name[16:], d.level, d.message[:200]) for d in obs.diagnostics
             if d.t >= t_ack - 0.1 and d.level > 0]
        # on the ramp from where the hand was, back to the goal, as the fault matrix counts a
        # recovery (reliability.yaml): the wires' friction may hold the hand a few cm short
        # (1.4-1.9 cm on the runner, 0.03-3.3 cm over six graph runs), an arm left stuck by
        # the controller stays 20 cm off (README, experiment C)
        tolerance = load_reliability_section(default_config_dir(), "faults",
                                             FaultMatrixConfig).recovery_tolerance_m
        goal = obs.snapshot(obs.goals_in_force).values[-1][0]
        hands = obs.snapshot(obs.hand).since(t_ack)
        hand = hands.values[-1]
        assert np.linalg.norm(hand - goal) < tolerance, (
            np.linalg.norm(hand - goal),
            [(round(t, 2), np.round(h, 3)) for t, h in zip(hands.t[::25], hands.values[::25])],
            [(round(d.t, 2), d.message[:150]) for d in obs.diagnostics_of("activation_qp_node")
             if d.t >= t_ack - 0.1])


# -- a late snapshot degrades gracefully -----------------------------------------------------------
def test_a_late_snapshot_is_reported_and_nothing_stops(parts, tmp_path):
    """The dynamics node freezes long enough for its snapshot to pass snapshot_late_s but not
    snapshot_timeout_s: a warning on /diagnostics, control goes on (a fifth of real time and a
    short lockstep timeout, so that the freeze shows in simulated time)."""
    f_min = parts.robot.hill.f_min_n
    extra = {"mock_hardware_node": {"lockstep_timeout_s": 0.3}}
    with running_graph(parts, tmp_path, rtf=0.2, extra=extra) as (graph, obs):
        t0 = wait_running(graph, obs)
        assert obs.wait_for(0.5, 60.0)
        graph.send("dynamics_node", signal.SIGSTOP)
        t_stop = obs.now_s()
        late = obs.wait_until(lambda: first_diagnostic(obs, t_stop, "activation_qp_node", 1,
                                                  ("snapshot_late",)) is not None, 60.0)
        graph.send("dynamics_node", signal.SIGCONT)
        assert late, obs.diagnostics[-5:]
        assert obs.wait_for(0.5, 60.0)
        commands = obs.snapshot(obs.commands).since(t0)
        assert not any(minimum_tension(f, f_min) for f in commands.values), \
            errors_after(obs, t0)[:5]
        assert not [d for d in obs.diagnostics_of("activation_qp_node")
                    if d.t >= t0 and d.level >= 2]


# -- experiment B over the graph --------------------------------------------------------------------
def test_trajectory_b_from_pose_a_tracks_like_the_runner(parts, tmp_path):
    import yaml

    from musculo_control.sim.experiments import run_trajectory
    from musculo_control.sim.setup import Overrides, load_setup, start_pose

    setup = load_setup(parts.config_dir, Overrides.parse([]))
    cfg = setup.experiments.trajectory
    runner = run_trajectory(setup, "osc", cfg.start_poses[0]).metrics["mean_tracking_error_m"]
    q0 = start_pose(setup.robot, cfg.start_poses[0])
    trajectory = tmp_path / "trajectory_b.yaml"
    trajectory.write_text(yaml.safe_dump({
        "frame_id": parts.robot.arm.base_frame, "relative": False, "loop": False,
        "waypoints": [{"time_s": 0.0, "position_m": list(cfg.start_m)},
                      {"time_s": cfg.move_s, "position_m": list(cfg.end_m)}]}))
    extra = {"mock_hardware_node": {"initial_pose_rad": [float(v) for v in q0]},
             "goal_node": {"start_delay_s": cfg.settle_s}}
    with running_graph(parts, tmp_path, goal_mode="trajectory", trajectory_file=str(trajectory),
                       goal_orientation=False, extra=extra) as (graph, obs):
        wait_running(graph, obs)
        assert obs.wait_until(lambda: len(obs.goal_points) > 0, 120.0), logs(graph)
        t_move = obs.snapshot(obs.goal_points).stamp[0]
        # the goal node counts its delay from the controller's first goal, not from its own
        # start: on a loaded machine the QP node may come up seconds after the arm's clock
        t_held = obs.snapshot(obs.goals_in_force).stamp[0]
        assert t_move >= t_held + cfg.settle_s - 0.05, (t_move, t_held)
        end = t_move + cfg.move_s + cfg.hold_s
        assert obs.wait_until(lambda: obs.now_s() > end + 0.1, 240.0), logs(graph)
        goals = obs.snapshot(obs.goal_points)
        hand = obs.snapshot(obs.hand)
    g_t, g_p = np.asarray(goals.stamp), np.asarray(goals.values)
    h_t, h_p = np.asarray(hand.stamp), np.asarray(hand.values)
    scored = (h_t >= t_move) & (h_t <= end)
    goal_at = np.column_stack([np.interp(h_t[scored], g_t, g_p[:, i]) for i in range(3)])
    graph_error = float(np.linalg.norm(h_p[scored] - goal_at, axis=1).mean())
    print(f"trajectory B mean tracking error: graph {graph_error * 1e3:.2f} mm, "
          f"runner {runner * 1e3:.2f} mm")
    # same controller, same feed-forward (hand_goal/trajectory): within twice the runner's error
    # and the experiment's 2 cm (measured 0.96-1.03x on a quiet machine; a fresh CI machine once
    # gave 1.74x, 11.0 against 6.3 mm: the messages' timing under load adds some)
    target = next(t.below for t in setup.experiments.targets if (t.experiment, t.controller,
                  t.metric) == ("trajectory", "osc", "mean_tracking_error_m"))
    err = np.linalg.norm(h_p[scored] - goal_at, axis=1)
    profile = [(round(float(t - t_move), 2), round(float(e) * 1e3, 1))
               for t, e in zip(h_t[scored][::50], err[::50])]
    assert graph_error <= min(2.0 * runner, target), (graph_error, runner, target, profile,
                                                      logs(graph))


# -- the fault matrix on the graph ------------------------------------------------------------------
@pytest.mark.timeout(1200)
def test_the_graph_fault_matrix_detects_injected_faults_and_writes_the_runners_json(tmp_path):
    """``musculo simulate faults --graph`` on two faults, one the mock arm injects and one the
    controller node does, both started over the ``~/inject_fault`` services of their test-side
    stand-ins; and on the rows of command authority and the operator stop: a stray publisher of
    ``muscle_commands`` and one of ``hw/tendon_commands`` (nodes of the observer's), the
    operator stop set and released."""
    import json
    import subprocess
    import sys

    out = tmp_path / "out"
    # qp_failure: a fault whose stop holds, so no minimum tension marks its detection (a
    # wall-stamped start-up status of the mock arm that names the controller was once taken
    # for it)
    cases = ["pot_dropout", "qp_failure", "command_nan", "foreign_commander",
             "foreign_actuator_writer", "operator_stop"]
    done = subprocess.run(
        [sys.executable, "-m", "musculo_control.cli", "simulate", "faults", "--graph",
         "--out", str(out), "--set", f"reliability.faults.cases=[{', '.join(cases)}]"],
        capture_output=True, text=True, timeout=1100)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads((out / "faults.json").read_text())
    assert doc["loop"] == "node graph"
    rows = {r["name"]: r for r in doc["faults"]}
    assert set(rows) == set(cases)
    limit = doc["target"]["max_command_N"]

    def why(row):
        """A row and what its case's nodes logged last (graph_runs/<case>/<node>.log)."""
        folder = out / "graph_runs" / row["name"]
        return row, {p.stem: p.read_text()[-1500:] for p in sorted(folder.glob("*_node.log"))
                     if p.stem in ("tendon_driver_node", "activation_qp_node",
                                   "mock_hardware_node")}

    for row in rows.values():
        assert row["detected"] and row["detection_time_ms"] is not None, why(row)
        # detection is read where an operator reads it, on /diagnostics as received: the delivery
        # is in the figure, and the bound leaves room for a loaded machine
        assert row["detection_time_ms"] <= 2 * doc["target"]["detection_time_ms"], why(row)
        assert not row["any_nan"] and row["max_command_N"] <= limit + 1e-6, why(row)
        assert row["recovered"], why(row)
    # the controller's own rule, or (when the hold came before any /diagnostics status that
    # named it reached the observer: seen on a fresh CI machine) the command topic going to
    # minimum tension, which is the rule's action
    assert rows["command_nan"]["rule"] in ("command_invalid", "minimum tension"), rows
    # the stray commander named by the driver (only a status naming its node counts), its 900 N
    # never obeyed: the controller's samples pass (each sample's publisher id), no minimum
    # tension, the hand where the fault-free run had it
    commander = rows["foreign_commander"]
    assert commander["rule"] == "tendon_driver_node" and "/stray_commander" in \
        commander["message"], commander
    assert commander["safe_state_ms"] is None and commander["max_deviation_m"] < 0.01, commander
    # a second writer to the actuators: named, the controller at minimum tension (latched,
    # acknowledged after the stray is gone)
    actuators = rows["foreign_actuator_writer"]
    assert "/stray_actuator_writer" in actuators["message"], actuators
    assert actuators["safe_state_ms"] is not None
    assert actuators["safe_state_ms"] <= doc["target"]["detection_time_ms"], actuators
    # the operator stop: every tendon at minimum tension, back after the release
    stop = rows["operator_stop"]
    assert stop["safe_state_ms"] is not None
    assert stop["safe_state_ms"] <= doc["target"]["detection_time_ms"], stop
    assert doc["fault_free_run"]["alarms"] == 0, doc["fault_free_run"]
    assert doc["fault_free_run"]["alarm_messages"] == [], doc["fault_free_run"]


# -- the other shipped robot -------------------------------------------------------------------------
def test_the_planar_arm_runs_on_the_graph_and_reaches_a_goal(tmp_path):
    """The second shipped robot (MJCF, wrapping tendons, 2 joints) through the same nodes: no
    safe-state command after start-up, and a goal 5 cm away along its first task row reached
    within 2 cm in 5 s."""
    from musculo_control.paths import config_root

    planar = load_parts(config_root() / "planar_arm")
    f_min = planar.robot.hill.f_min_n
    axis = {"vx": 0, "vy": 1, "vz": 2}[planar.controller.task.rows[0]]
    with running_graph(planar, tmp_path) as (graph, obs):
        t0 = wait_running(graph, obs)
        assert obs.wait_until(lambda: len(obs.hand) > 0 and len(obs.goals_in_force) > 0, 30.0)
        start = obs.snapshot(obs.hand).values[-1]
        goal = np.array(start, dtype=float)
        goal[axis] += 0.05
        obs.send_goal_pose(goal)
        t_goal = obs.now_s()
        assert obs.wait_for(5.0, 120.0), logs(graph)
        commands = obs.snapshot(obs.commands).since(t0)
        unsafe = [t for t, f in zip(commands.t, commands.values) if minimum_tension(f, f_min)]
        assert not unsafe, (unsafe[:5], errors_after(obs, t0)[:5], logs(graph))
        hand = obs.snapshot(obs.hand).since(t_goal)
        dist = np.linalg.norm(np.asarray(hand.values) - goal, axis=1)
        assert dist[-1] < 0.02, (dist[-1], logs(graph))


# -- the shared layout: the drivers in hardware_process, the controller in control_process --------
#: Simulated seconds per wall second for the shared layout: one thread there does the work of
#: three processes, so in lockstep on 2 cores it gets more wall time per simulated second
#: (at the others' 0.5, with another job busy on the machine, a lockstep wait of 5 s for the
#: dynamics snapshot was seen once in 4 runs of a single process for all).
ONE_PROCESS_RATE = 0.25


def test_one_process_holds_the_arm_keeps_the_rates_and_reaches_a_goal(parts, tmp_path):
    f_min = parts.robot.hill.f_min_n
    with running_graph(parts, tmp_path, rtf=ONE_PROCESS_RATE, one_process=True) as (graph, obs):
        assert sorted(graph.processes) == ["control_process", "hardware_process",
                                           "mock_hardware_node"]
        t0 = wait_running(graph, obs)
        assert obs.wait_for(2.0, 120.0), logs(graph)
        t1 = obs.now_s()
        commands = obs.snapshot(obs.commands).since(t0)
        assert not [t for t, f in zip(commands.t, commands.values) if minimum_tension(f, f_min)], \
            [(d.t, d.name, d.message) for d in obs.diagnostics
             if d.level > 0 and "mock_hardware_node" not in d.name][:8]
        assert not errors_after(obs, t0), errors_after(obs, t0)[:5]
        rates, loop = parts.drivers.rates, parts.controller.loop
        for rec, nominal in ((obs.joint_states, rates.sensor_rate_hz),
                             (obs.sent, rates.driver_rate_hz),
                             (obs.commands, loop.control_rate_hz),
                             (obs.dynamics, loop.dynamics_rate_hz)):
            rate, received = rate_by_stamps(obs.snapshot(rec).stamp, t0 + 0.5, t1 - 0.5)
            assert rate == pytest.approx(nominal, rel=0.02), (nominal, rate)
        start = obs.snapshot(obs.hand).values[-1]
        _, orientation = obs.snapshot(obs.goals_in_force).values[-1]
        goal = start + np.array([0.0, 0.10, 0.0])
        obs.send_goal_pose(goal, orientation)
        assert obs.wait_for(5.0, 120.0), logs(graph)
        dist = np.linalg.norm(obs.snapshot(obs.hand).values[-1] - goal)
        assert dist < REACH_TOLERANCE_M, (dist, logs(graph))


def test_killing_the_drivers_process_leaves_the_arm_to_the_actuators_watchdog(parts, tmp_path):
    with running_graph(parts, tmp_path, rtf=ONE_PROCESS_RATE, one_process=True) as (graph, obs):
        wait_running(graph, obs)
        assert obs.wait_for(1.0, 60.0)
        t_kill = obs.now_s()
        graph.send("tendon_driver_node", signal.SIGKILL)  # and with it the potentiometer node
        assert obs.wait_for(0.5, 60.0), logs(graph)
        assert not graph.alive("potentiometer_node") and graph.alive("mock_hardware_node")
        assert graph.alive("activation_qp_node")  # the controller's process is another
        mock = first_diagnostic(obs, t_kill, "mock_hardware_node", 2, ("watchdog",))
        assert mock is not None and mock.t - t_kill <= 0.1, obs.diagnostics[-5:]


def test_freezing_the_controllers_process_leaves_the_driver_to_stop_the_arm(parts, tmp_path):
    """The controller's process frozen (SIGSTOP; the mock arm gives up holding the clock for it
    after lockstep_timeout_s): the drivers' process goes on, so the tendon driver, the last
    line of defence, stops the arm itself on its own watchdog (command_watchdog: a hold, then a
    descend to minimum tension), its commands at 500 Hz all along and the actuator modules' own
    watchdog never needed."""
    f_min = parts.robot.hill.f_min_n
    stops = parts.safety.stops
    command_hold_s = parts.safety.inputs.muscle_commands.hold_s
    extra = {"mock_hardware_node": {"lockstep_timeout_s": 0.5}}
    with running_graph(parts, tmp_path, rtf=ONE_PROCESS_RATE, one_process=True,
                       extra=extra) as (graph, obs):
        wait_running(graph, obs)
        assert obs.wait_for(1.0, 60.0), logs(graph)
        graph.send("activation_qp_node", signal.SIGSTOP)  # and the dynamics and goal nodes
        t_frozen = obs.now_s()
        assert obs.wait_for(stops.hold_s + stops.descend_s + 0.5, 180.0), logs(graph)
        t1 = obs.now_s()
        assert graph.alive("tendon_driver_node") and graph.alive("potentiometer_node")
        assert obs.caught_up(obs.sent, t1 - 0.05), logs(graph)
        t_last = obs.newest_stamp(obs.commands)  # the frozen controller's last command
        assert t_last <= t_frozen + 0.1, (t_last, t_frozen)
        sent = obs.snapshot(obs.sent)
        rate, _ = rate_by_stamps(sent.stamp, t_last + 0.1, t1 - 0.05)
        assert rate == pytest.approx(parts.drivers.rates.driver_rate_hz, rel=0.02), rate
        # past the commands' hold bound: a stop, down to minimum tension
        after = [f for st, f in zip(sent.stamp, sent.values)
                 if st >= t_last + command_hold_s + 0.01]
        assert after and stopping(after), after[:3]
        assert minimum_tension(after[-1], f_min), after[-1]
        reason = first_diagnostic(obs, t_last, "tendon_driver_node", 2, ("last command",))
        assert reason is not None, [d for d in obs.diagnostics_of("tendon_driver_node")
                                    if d.t >= t_last][:5]
        assert first_diagnostic(obs, t_frozen, "mock_hardware_node", 2, ("watchdog",)) is None


# -- musculo graph: the graph without ros2 launch -------------------------------------------------
def test_musculo_graph_runs_the_nodes_and_stops_them_cleanly(tmp_path):
    import subprocess
    import sys

    logs = tmp_path / "logs"
    done = subprocess.run([sys.executable, "-m", "musculo_control.cli", "graph", "--sim-time",
                           "--real-time-factor", "0.5", "--duration", "20", "--logs", str(logs)],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    import re

    # on simulated time the default layout is a process per node
    codes = re.findall(r"(\w+_(?:node|process)) (-?\d+)", done.stdout.split("exit codes:")[-1])
    assert len(codes) == 6 and all(code == "0" for _, code in codes), done.stdout
    qp = (logs / "activation_qp_node.log").read_text()
    assert "running" in qp, qp[-2000:]  # the controller came to hold the arm


def test_musculo_graph_refuses_a_bad_config_folder_before_starting_anything(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "musculo_control.cli", "graph", "--config",
                           str(tmp_path / "missing"), "--logs", str(tmp_path / "logs")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "ros_params.yaml" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "logs" / "activation_qp_node.log").exists()
