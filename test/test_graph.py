"""The node graph for real: every node in its own process on real rclpy (the ROS 2 wheels of the
test extra), started as ``mock_arm.launch.py`` starts it, watched from outside.

Simulated time (the mock arm publishes /clock at half real time and holds it for a lagging
node) unless a test says otherwise, so that the figures asserted are the loop's, not the load
of the machine's: rates and latencies are measured on the stamps.
"""

from __future__ import annotations

import math
import signal

import numpy as np
import pytest
from graph_harness import logs, minimum_tension, running_graph, wait_running

from musculo_control.loop.build import load_parts
from musculo_control.paths import default_config_dir

#: every test is bounded in wall time (a hung graph must fail, not hang the run)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def parts():
    return load_parts(default_config_dir())


def _rate(stamps: list[float], t0: float, t1: float) -> tuple[float, float]:
    """(the publisher's rate from the median stamp interval [Hz], the share of its samples the
    observer received) over [t0, t1): the observer itself may drop samples when it is busy."""
    s = np.asarray(stamps)
    s = s[(s >= t0) & (s < t1)]
    rate = 1.0 / float(np.median(np.diff(s)))
    return rate, s.size / ((t1 - t0) * rate)


def _errors_after(obs, t0: float) -> list:
    return [d for d in obs.diagnostics if d.t >= t0 and d.level >= 2]


def test_nominal_run_never_goes_to_the_safe_state_and_every_stream_keeps_its_rate(parts,
                                                                                tmp_path):
    f_min = parts.robot.hill.f_min_n
    with running_graph(parts, tmp_path) as (graph, obs):
        t0 = wait_running(graph, obs)
        assert obs.wait_for(4.0, 120.0), logs(graph)
        t1 = obs.now_s()
        commands = obs.snapshot(obs.commands).since(t0)
        unsafe = [t for t, f in zip(commands.t, commands.values) if minimum_tension(f, f_min)]
        assert not unsafe, (unsafe[:5], _errors_after(obs, t0)[:5])
        assert not _errors_after(obs, t0), _errors_after(obs, t0)[:5]
        # rates by stamps, in simulated time, over the window
        rates = parts.drivers.rates
        loop = parts.controller.loop
        window = (t0 + 0.5, t1 - 0.5)
        for rec, nominal in ((obs.joint_states, rates.sensor_rate_hz),
                             (obs.sent, rates.driver_rate_hz),
                             (obs.commands, loop.control_rate_hz),
                             (obs.dynamics, loop.dynamics_rate_hz)):
            rate, received = _rate(obs.snapshot(rec).stamp, *window)
            assert rate == pytest.approx(nominal, rel=0.02), (nominal, rate)
            assert received > 0.8, (nominal, received)
        # the driver's clamp never acted: the controller keeps within the envelope itself
        driver = obs.diagnostics_of("tendon_driver_node")[-1]
        assert driver.values["ticks with a clamped tendon"] == "0", driver.values
        sent = np.asarray(obs.snapshot(obs.sent).values)
        assert np.isfinite(sent).all()
        assert sent.max() <= parts.drivers.tendons.config.max_tension_n + 1e-6


def test_a_goal_10_cm_away_is_reached_within_2_cm_in_5_s(parts, tmp_path):
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
        assert dist[-1] < 0.02, (dist[-1], logs(graph))
        inside = np.asarray(hand.t)[dist < 0.02]
        assert inside.size and inside[0] - t_goal < 5.0


def _first(recording, t0: float, condition) -> float | None:
    """The first receive time at or after ``t0`` whose value meets ``condition``."""
    for t, value in zip(recording.t, recording.values):
        if t >= t0 and condition(value):
            return t
    return None


def _first_diag(obs, t0: float, node: str, level: int, words: tuple[str, ...] = ()):
    for d in obs.diagnostics_of(node):
        if d.t >= t0 and d.level >= level and all(w in d.message for w in words):
            return d
    return None


@pytest.mark.parametrize("node, reason", [
    ("dynamics_node", "snapshot_stale"),
    ("potentiometer_node", "joint_state_stale"),
    ("tendon_driver_node", "driver_silent"),
])
def test_killing_a_node_ends_in_minimum_tension_within_100_ms_with_the_reason(
        parts, tmp_path, node, reason):
    f_min = parts.robot.hill.f_min_n
    with running_graph(parts, tmp_path) as (graph, obs):
        wait_running(graph, obs)
        assert obs.wait_for(1.0, 60.0)
        t_kill = obs.now_s()
        graph.send(node, signal.SIGKILL)
        assert obs.wait_for(0.5, 60.0), logs(graph)
        commands = obs.snapshot(obs.commands)
        safe_t = _first(commands, t_kill, lambda f: minimum_tension(f, f_min))
        diag = _first_diag(obs, t_kill, "activation_qp_node", 2, (reason,))
        assert safe_t is not None and safe_t - t_kill <= 0.1, (safe_t, t_kill, logs(graph))
        assert diag is not None and diag.t - t_kill <= 0.1, (diag, obs.diagnostics[-5:])
        if node == "tendon_driver_node":
            # nobody forwards the QP's minimum tension now: the actuator modules' own watchdog
            mock = _first_diag(obs, t_kill, "mock_hardware_node", 2, ("watchdog",))
            assert mock is not None and mock.t - t_kill <= 0.1, obs.diagnostics[-5:]
        # and it stays safe
        later = commands.since(safe_t)
        assert all(minimum_tension(f, f_min) for f in later.values)


def test_killing_the_mock_arm_ends_in_minimum_tension_within_100_ms(parts, tmp_path):
    """Wall-clock time (the mock arm is the clock of a simulation): the driver sees the arm's
    tendon states stop and sends minimum tension; the controller sees its inputs go stale."""
    f_min = parts.robot.hill.f_min_n
    with running_graph(parts, tmp_path, sim=False) as (graph, obs):
        wait_running(graph, obs)
        assert obs.wait_for(1.0, 60.0)
        t_kill = obs.now_s()
        graph.send("mock_hardware_node", signal.SIGKILL)
        assert obs.wait_for(0.5, 60.0)
        sent_safe = _first(obs.snapshot(obs.sent), t_kill, lambda f: minimum_tension(f, f_min))
        cmd_safe = _first(obs.snapshot(obs.commands), t_kill,
                          lambda f: minimum_tension(f, f_min))
        driver = _first_diag(obs, t_kill, "tendon_driver_node", 2, ("tendon state",))
        assert sent_safe is not None and sent_safe - t_kill <= 0.1, (sent_safe, t_kill)
        assert cmd_safe is not None and cmd_safe - t_kill <= 0.1, (cmd_safe, t_kill)
        assert driver is not None and driver.t - t_kill <= 0.1, obs.diagnostics[-5:]


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
            assert obs.wait_until(lambda t=t, rule=rule: _first_diag(
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


def test_a_bad_config_folder_stops_the_node_naming_the_file(tmp_path):
    code, out = _start_alone("dynamics_node", "-p", f"config_dir:={tmp_path}")
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
