"""Launch test: the RViz goal marker and the force gauge, without RViz (``goal_mode:=
interactive``, simulated time in lockstep).

- goal_node serves an interactive marker at the hand; a drag reported on the marker's
  feedback topic (``hand_goal/feedback``, as RViz sends it) becomes the goal in force
  (``controller/goal``) exactly;
- the mock arm's force gauge (``mock/gauge``), its tip 1 cm into the arm's surface at the
  elbow, pushes (``mock/gauge_force`` > 0) and stops after ``mock/clear_gauge`` (0 N).

Needs the ``interactive_markers`` package (a ROS 2 distribution has it; without it goal_node
refuses interactive mode and says so).

    launch_test launch_tests/test_goal_sources.py
"""

from __future__ import annotations

import os
import sys

import pytest

rclpy = pytest.importorskip(
    "rclpy", reason="launch tests need ROS 2 (rclpy): source a ROS 2 Humble (or newer) setup "
                    "and the colcon install of musculo_control, then run launch_test on this file")
pytest.importorskip("launch_testing", reason="launch_testing is not installed")
pytest.importorskip("interactive_markers", reason="goal_node's interactive mode needs it")

import numpy as np
import pinocchio as pin
from visualization_msgs.msg import InteractiveMarkerFeedback

sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    CONFIG_DIR,
    LOCKSTEP,
    WAIT_TIMEOUT_S,
    CleanExit,  # noqa: F401 - launch_testing runs it after shutdown
    ObservedGraph,
    launch,
    params_file,
    wait_released,
)

from musculo_control import messages
from musculo_control.nodes.ros_common import MSGS
from musculo_control.sim.mock_arm import load_mock_config
from musculo_control.sim.setup import Overrides, experiment_config, load_setup

DRAG_M = np.array([0.0, 0.05, 0.0])
#: How far the gauge's tip is set into the arm's surface [m].
PENETRATION_M = 0.01
#: How long the gauge is held [simulated s].
PUSH_S = 0.5


@pytest.mark.launch_test
def generate_test_description():
    return launch(**LOCKSTEP, goal_mode="interactive", params_file=params_file())


class TestGoalSources(ObservedGraph):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.feedback = cls.obs.node.create_publisher(InteractiveMarkerFeedback,
                                                     "hand_goal/feedback", 10)

    def _marker_ready(self) -> bool:
        goal = self.obs.diagnostics_of("goal_node")
        return bool(goal) and goal[-1].message.startswith("interactive marker ready")

    def test_1_dragging_the_marker_sets_the_goal(self):
        obs = self.obs
        wait_released(obs)
        self.assertTrue(obs.wait_until(self._marker_ready, WAIT_TIMEOUT_S),
                        f"no marker: {obs.diagnostics_of('goal_node')[-1:]}")
        self.assertTrue(obs.wait_until(lambda: len(obs.goals_in_force) > 0, WAIT_TIMEOUT_S))
        held, orientation = obs.snapshot(obs.goals_in_force).values[-1]
        target = held + DRAG_M
        msg = InteractiveMarkerFeedback()
        msg.header.frame_id = self.parts.robot.arm.base_frame
        msg.client_id = "/rviz/InteractiveMarkers"
        msg.marker_name = "hand_goal"
        msg.control_name = "move_3d"
        msg.event_type = InteractiveMarkerFeedback.POSE_UPDATE
        msg.pose = messages.pose_msg(MSGS, target, orientation)

        def dragged() -> bool:  # (re)sent until the goal node has matched the publisher
            self.feedback.publish(msg)
            return np.allclose(obs.goals_in_force.values[-1][0], target, atol=1e-9)

        self.assertTrue(obs.wait_until(dragged, WAIT_TIMEOUT_S, poll_s=0.2),
                        "the dragged pose never became the goal in force")
        print(f"\ndragged the marker {np.linalg.norm(DRAG_M) * 100:.0f} cm: goal in force "
              f"{np.round(obs.snapshot(obs.goals_in_force).values[-1][0], 3).tolist()} m",
              flush=True)

    def test_2_the_force_gauge_pushes_and_lets_go(self):
        obs, robot = self.obs, self.parts.robot
        wait_released(obs)
        mock = load_mock_config(robot, CONFIG_DIR / "mock_arm.yaml")
        setup = load_setup(CONFIG_DIR, Overrides.parse([]))
        axis = np.asarray(experiment_config(setup, "disturbance").axis, dtype=float)
        axis /= np.linalg.norm(axis)
        q = obs.snapshot(obs.joint_states).values[-1]
        model = robot.arm.model
        data = model.createData()
        pin.framesForwardKinematics(model, data, q)
        elbow = data.oMf[model.getFrameId(mock.elbow_link)].act(np.asarray(mock.elbow_point_m))
        tip = elbow - (mock.gauge.contact_radius_m - PENETRATION_M) * axis
        t_push = obs.now_s()
        obs.push_gauge(tip, axis)
        self.assertTrue(obs.wait_for(PUSH_S, WAIT_TIMEOUT_S), "simulated time stalled")
        pushing = obs.snapshot(obs.gauge_force).since(t_push).values
        self.assertTrue(pushing and max(pushing) > 0.0, "the gauge never pushed")
        ok, message = obs.clear_gauge()
        self.assertTrue(ok, message)
        self.assertTrue(obs.wait_for(0.2, WAIT_TIMEOUT_S))
        t_clear = obs.now_s()
        self.assertTrue(obs.wait_for(0.3, WAIT_TIMEOUT_S))
        after = obs.snapshot(obs.gauge_force).since(t_clear).values
        print(f"gauge {PENETRATION_M * 100:.0f} cm into the elbow along "
              f"{np.round(axis, 2).tolist()}: up to {max(pushing):.1f} N; after "
              f"mock/clear_gauge ('{message}') at most {max(after, default=float('nan')):.1f} N",
              flush=True)
        self.assertTrue(after and max(after) == 0.0, f"force after clearing: {after[-3:]}")
