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

pytestmark = pytest.mark.slow


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
