"""Launch test: ``goal_mode:=trajectory`` plays the parameter file's trajectory
(``trajectories/reach_10cm.yaml``: 10 cm out, hold, back) from where the hand is, on
``hand_goal/trajectory`` (MultiDOFJointTrajectory with the feed-forward of paper eq. 14), on
simulated time in lockstep:

- the goal points come at goal_node's ``publish_rate_hz`` (by their stamps, within 2 %), span
  the file's 10 cm and end where they started; goal_node says the trajectory is done;
- the true hand follows them: mean distance to the goal over the trajectory below 2 cm, and
  within 2 cm of the last goal 1 s after it.

    launch_test launch_tests/test_goal_trajectory.py
"""

from __future__ import annotations

import os
import sys

import pytest

rclpy = pytest.importorskip(
    "rclpy", reason="launch tests need ROS 2 (rclpy): source a ROS 2 Humble (or newer) setup "
                    "and the colcon install of musculo_control, then run launch_test on this file")
pytest.importorskip("launch_testing", reason="launch_testing is not installed")

import numpy as np
import yaml

sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    CONFIG_DIR,
    LOCKSTEP,
    WAIT_TIMEOUT_S,
    CleanExit,  # noqa: F401 - launch_testing runs it after shutdown
    ObservedGraph,
    launch,
    params_file,
    rate_by_stamps,
    wait_released,
)

from musculo_control.loop.trajectory_file import load_trajectory
from musculo_control.nodes.node_config import GOAL_NODE, ROS_PARAMS_FILE

GOAL_PARAMS = yaml.safe_load((CONFIG_DIR / ROS_PARAMS_FILE).read_text())[GOAL_NODE][
    "ros__parameters"]
TRAJECTORY = load_trajectory(CONFIG_DIR / GOAL_PARAMS["trajectory_file"])
TOLERANCE_M = 0.02
SETTLE_S = 1.0


@pytest.mark.launch_test
def generate_test_description():
    return launch(**LOCKSTEP, goal_mode="trajectory", params_file=params_file())


class TestGoalTrajectory(ObservedGraph):

    def test_the_trajectory_plays_and_the_hand_follows(self):
        obs = self.obs
        wait_released(obs)
        self.assertTrue(obs.wait_until(lambda: len(obs.goal_points) > 0, WAIT_TIMEOUT_S),
                        f"no goal point: {obs.diagnostics_of('goal_node')[-1:]}")
        t_start = obs.snapshot(obs.goal_points).stamp[0]
        duration = TRAJECTORY.waypoints[-1].time_s
        end = t_start + duration
        self.assertTrue(obs.wait_until(lambda: obs.now_s() > end + SETTLE_S, WAIT_TIMEOUT_S),
                        "simulated time stalled")
        goals, hand = obs.snapshot(obs.goal_points), obs.snapshot(obs.hand)
        g_t, g_p = np.asarray(goals.stamp), np.asarray(goals.values)
        rate, received = rate_by_stamps(goals.stamp, t_start, end)
        span = float(np.max(np.linalg.norm(g_p - g_p[0], axis=1)))
        file_span = max(float(np.linalg.norm(np.subtract(w.position_m,
                                                         TRAJECTORY.waypoints[0].position_m)))
                        for w in TRAJECTORY.waypoints)
        print(f"\n{len(goals)} goal points from {t_start:.3f} s at {rate:.2f} Hz by stamps "
              f"({received:.0%} received), spanning {span * 100:.2f} cm (file "
              f"{file_span * 100:.2f} cm)", flush=True)
        self.assertAlmostEqual(rate, GOAL_PARAMS["publish_rate_hz"],
                               delta=0.02 * GOAL_PARAMS["publish_rate_hz"])
        self.assertAlmostEqual(span, file_span, delta=1e-3)
        self.assertLess(np.linalg.norm(g_p[-1] - g_p[0]), 1e-3, "does not end where it began")
        done = [d for d in obs.diagnostics_of(GOAL_NODE) if "trajectory done" in d.message]
        self.assertTrue(done, obs.diagnostics_of(GOAL_NODE)[-1:])
        h_t, h_p = np.asarray(hand.stamp), np.asarray(hand.values)
        scored = (h_t >= t_start) & (h_t <= end)
        goal_at = np.column_stack([np.interp(h_t[scored], g_t, g_p[:, i]) for i in range(3)])
        error = np.linalg.norm(h_p[scored] - goal_at, axis=1)
        final = float(np.linalg.norm(h_p[-1] - g_p[-1]))
        print(f"hand to goal: mean {error.mean() * 100:.2f} cm, max {error.max() * 100:.2f} cm "
              f"over the trajectory; {final * 100:.2f} cm from the last goal at "
              f"{h_t[-1] - end:.2f} s after it", flush=True)
        self.assertLess(error.mean(), TOLERANCE_M)
        self.assertLess(final, TOLERANCE_M)
