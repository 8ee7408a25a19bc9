"""Launch test: the whole suite against the mock arm, as ``mock_arm.launch.py`` starts it (no
GUI, no rclcpp nodes), on simulated time in lockstep.

- every node comes up and the controller holds the released arm;
- over 4 simulated seconds no command is the safe state and no node reports an ERROR;
  ``joint_states`` and ``hw/tendon_commands`` at hardware.yaml's sensor and driver rates,
  ``muscle_commands`` and ``dynamics`` at controller.yaml's loop rates, each within 2 % by
  the stamps (the median interval), with at least 80 % of the samples received;
- the true hand (mock/hand) reaches a goal 10 cm away (hand_goal, PoseStamped) within the
  node-graph test's step tolerance (1 cm, test/graph_harness.py REACH_TOLERANCE_M) in 5 simulated
  seconds and is there at 5 s;
- every process exits cleanly at shutdown.

    launch_test launch_tests/test_mock_arm_launch.py

Under plain pytest without the launch tools the module is skipped with the reason.
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

sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    LOCKSTEP,
    MOCK_NODES,
    REACH_TOLERANCE_M,
    WAIT_TIMEOUT_S,
    CleanExit,  # noqa: F401 - launch_testing runs it after shutdown
    ObservedGraph,
    errors_after,
    launch,
    minimum_tension,
    on_grid,
    params_file,
    rate_by_count,
    rate_by_stamps,
    wait_nodes,
    wait_released,
)

#: Nominal window [simulated s] and the rates' tolerance.
WINDOW_S = 4.0
RATE_TOLERANCE = 0.02
#: Goal step [m] and time allowed [simulated s]; the tolerance is the node-graph test's: this is
#: the same graph (nodes/graph.py) with the same parameters, started by the launch file.
GOAL_STEP_M = np.array([0.0, 0.10, 0.0])
REACH_TIME_S = 5.0


@pytest.mark.launch_test
def generate_test_description():
    return launch(**LOCKSTEP, params_file=params_file())


class TestMockArm(ObservedGraph):
    """The tests run in name order on one graph."""

    def test_1_every_node_comes_up_and_the_controller_holds_the_arm(self):
        took = wait_nodes(self.obs, MOCK_NODES)
        print(f"\nall {len(MOCK_NODES)} nodes up after {took:.1f} s (wall)", flush=True)
        t = wait_released(self.obs)
        print(f"controller holding the released arm at {t:.2f} s (simulated)", flush=True)

    def test_2_nominal_run_keeps_every_rate_and_never_goes_to_the_safe_state(self):
        obs, p = self.obs, self.parts
        t0 = wait_released(obs)
        self.assertTrue(obs.wait_for(WINDOW_S, WAIT_TIMEOUT_S), "simulated time stalled")
        t1 = obs.now_s()
        f_min = p.robot.hill.f_min_n
        commands = obs.snapshot(obs.commands).since(t0)
        unsafe = [t for t, f in zip(commands.t, commands.values) if minimum_tension(f, f_min)]
        self.assertFalse(unsafe, (unsafe[:5], errors_after(obs, t0)[:5]))
        self.assertFalse(errors_after(obs, t0), errors_after(obs, t0)[:5])
        rates, loop = p.drivers.rates, p.controller.loop
        window = (t0 + 0.5, t1 - 0.5)
        # rates by the nodes' own counts; what the observer received lies on each grid
        for node, rec, nominal in (("potentiometer_node", obs.joint_states,
                                    rates.sensor_rate_hz),
                                   ("tendon_driver_node", obs.sent, rates.driver_rate_hz),
                                   ("activation_qp_node", obs.commands, loop.control_rate_hz),
                                   ("dynamics_node", obs.dynamics, loop.dynamics_rate_hz)):
            rate, resolution = rate_by_count(obs, node, *window)
            stamps = obs.snapshot(rec).stamp
            _, received = rate_by_stamps(stamps, *window)
            # a snapshot carries its joint sample's stamp, up to 2 sensor steps before the tick
            tolerance = 0.05 + (4.0 / rates.sensor_rate_hz * nominal if rec is obs.dynamics
                                else 0.0)
            share = on_grid(stamps, *window, 1.0 / nominal, tolerance)
            print(f"{node}: {rate:.2f} Hz by its count (nominal {nominal:g} Hz); "
                  f"{received:.0%} received, {share:.0%} of the intervals on the grid",
                  flush=True)
            self.assertLessEqual(abs(rate - nominal), RATE_TOLERANCE * nominal + resolution,
                                 node)
            self.assertGreater(share, 0.9, node)
        sent = np.asarray(obs.snapshot(obs.sent).values)
        self.assertTrue(np.isfinite(sent).all())
        self.assertLessEqual(sent.max(), p.drivers.tendons.config.max_tension_n + 1e-6)

    def test_3_the_hand_reaches_a_goal_10_cm_away_within_the_step_tolerance_in_5_s(self):
        obs = self.obs
        wait_released(obs)
        self.assertTrue(obs.wait_until(lambda: len(obs.hand) > 0 and len(obs.goals_in_force) > 0,
                                       WAIT_TIMEOUT_S), "no mock/hand or no goal in force")
        start = obs.snapshot(obs.hand).values[-1]
        _, orientation = obs.snapshot(obs.goals_in_force).values[-1]  # the held hand's
        goal = start + GOAL_STEP_M
        obs.send_goal_pose(goal, orientation)
        t_goal = obs.now_s()
        self.assertTrue(obs.wait_for(REACH_TIME_S, WAIT_TIMEOUT_S), "simulated time stalled")
        in_force = obs.snapshot(obs.goals_in_force).values[-1][0]
        np.testing.assert_allclose(in_force, goal, atol=1e-9)
        hand = obs.snapshot(obs.hand).since(t_goal)
        dist = np.linalg.norm(np.asarray(hand.values) - goal, axis=1)
        inside = np.asarray(hand.t)[dist < REACH_TOLERANCE_M]
        print(f"goal {np.round(goal, 3).tolist()} m, 10 cm from the hand: within "
              f"{REACH_TOLERANCE_M * 100:.1f} cm after "
              f"{inside[0] - t_goal if inside.size else float('nan'):.2f} s, "
              f"{dist[-1] * 100:.2f} cm off at {hand.t[-1] - t_goal:.2f} s", flush=True)
        self.assertTrue(inside.size and inside[0] - t_goal < REACH_TIME_S,
                        f"never within {REACH_TOLERANCE_M} m; closest {dist.min():.3f} m")
        self.assertLess(dist[-1], REACH_TOLERANCE_M)
