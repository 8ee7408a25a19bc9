"""Launch test: the RViz goal marker and the force gauge, without RViz.

- goal_node (mode interactive) serves a marker at the hand; a drag reported on the marker's
  feedback topic (as RViz sends it) becomes the goal in force;
- the mock arm's force gauge pushes the elbow when placed and stops when cleared.

    launch_test launch_tests/test_goal_sources.py
"""

from __future__ import annotations

import os
import sys
import time
import unittest

import pytest

rclpy = pytest.importorskip(
    "rclpy", reason="launch tests need ROS 2 (rclpy): source a ROS 2 Humble (or newer) setup "
                    "and the colcon install of musculo_control, then run launch_test on this file")
pytest.importorskip("launch_testing", reason="launch_testing is not installed")

import launch_testing.asserts
import numpy as np
from geometry_msgs.msg import PointStamped, PoseStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import Trigger
from visualization_msgs.msg import InteractiveMarkerFeedback, InteractiveMarkerUpdate

sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    STARTUP_TIMEOUT_S,
    DiagnosticsLog,
    Probe,
    mock_arm_launch,
)

from musculo_control.hardware.mock_arm import load_mock_config
from musculo_control.model.robot import load_robot
from musculo_control.nodes import conversions as cv
from musculo_control.nodes.ros_common import MSGS, QOS_GOAL
from musculo_control.paths import default_config_dir
from musculo_control.stamps import Stamp

DRAG_M = np.array([0.0, 0.05, 0.0])
ROBOT = load_robot(default_config_dir())
MOCK = load_mock_config(ROBOT, default_config_dir() / "mock_arm.yaml")
GAUGE_RADIUS_M = MOCK.gauge.contact_radius_m  # the tip touches at this distance from the elbow
PENETRATION_M = 0.01


@pytest.mark.launch_test
def generate_test_description():
    return mock_arm_launch(goal_mode="interactive")


class TestGoalSources(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.probe = Probe("musculo_goal_sources_test")
        cls.diag = DiagnosticsLog(cls.probe)
        node = cls.probe.node
        cls.updates = cls.probe.queue(InteractiveMarkerUpdate, "hand_goal/update", depth=100,
                                      qos=rclpy.qos.QoSProfile(depth=100))
        cls.feedback = node.create_publisher(InteractiveMarkerFeedback, "hand_goal/feedback", 1)
        cls.goal_echo = cls.probe.queue(PoseStamped, "controller/goal", depth=20, qos=QOS_GOAL)
        cls.gauge = node.create_publisher(PoseStamped, "mock/gauge", 10)
        cls.force = cls.probe.queue(Float64, "mock/gauge_force")
        cls.hand = cls.probe.queue(PointStamped, "mock/hand")

    @classmethod
    def tearDownClass(cls):
        cls.probe.destroy()
        rclpy.shutdown()

    def _controlling(self) -> bool:
        qp = self.diag.latest("activation_qp_node")
        mock = self.diag.latest("mock_hardware_node")
        goal = self.diag.latest("goal_node")
        return (qp is not None and qp.level == cv.OK and mock is not None
                and mock.message == "running" and goal is not None
                and goal.message.startswith("interactive marker ready"))

    def test_1_dragging_the_marker_sets_the_goal(self):
        self.probe.wait_for("the controller and the goal marker", self._controlling,
                            STARTUP_TIMEOUT_S)
        echoes = self.goal_echo.take_all()
        self.assertTrue(echoes, "no goal in force")
        held = cv.read_pose_stamped(echoes[-1][0])
        msg = InteractiveMarkerFeedback()
        msg.header.frame_id = "base_link"
        msg.client_id = "/rviz/InteractiveMarkers"
        msg.marker_name = "hand_goal"
        msg.control_name = "move_3d"
        msg.event_type = InteractiveMarkerFeedback.POSE_UPDATE
        msg.pose = cv.pose_msg(MSGS, held.position_m + DRAG_M, held.quaternion_xyzw)
        self.feedback.publish(msg)
        got: list = []
        self.probe.wait_for("the dragged goal on controller/goal",
                            lambda: bool(got.extend(self.goal_echo.take_all()) or got), 10.0)
        new = cv.read_pose_stamped(got[-1][0])
        np.testing.assert_allclose(new.position_m, held.position_m + DRAG_M, atol=1e-9)
        print(f"\ndragged the marker {DRAG_M[1] * 100:.0f} cm: goal in force "
              f"{np.round(new.position_m, 3).tolist()} m", flush=True)

    def test_2_the_force_gauge_pushes_and_lets_go(self):
        self.probe.wait_for("the controller", self._controlling, STARTUP_TIMEOUT_S)
        truth = self.probe.queue(JointState, "mock/joint_states")
        got: list = []
        self.probe.wait_for("mock/joint_states", lambda: bool(got.extend(truth.take_all()) or got),
                            5.0)
        elbow = _elbow(cv.float_array(got[-1][0].position))
        # push medially (-y), the tip 1 cm inside the arm's surface at the elbow
        axis = np.array([0.0, -1.0, 0.0])
        tip = elbow - (GAUGE_RADIUS_M - PENETRATION_M) * axis
        axis_quat = (0.0, 0.0, -np.sqrt(0.5), np.sqrt(0.5))  # the pose's x axis turned to -y
        self.force.take_all()
        self.gauge.publish(cv.pose_stamped_msg(MSGS, Stamp.from_seconds(time.time()),
                                               "base_link", tip, axis_quat))
        time.sleep(0.5)
        pushing = [m.data for m, _ in self.force.take_all()]
        self.assertTrue(pushing and max(pushing) > 0.0, "the gauge never pushed")
        client = self.probe.node.create_client(Trigger, "mock/clear_gauge")
        self.assertTrue(client.wait_for_service(timeout_sec=10.0))
        future = client.call_async(Trigger.Request())
        rclpy.spin_until_future_complete(self.probe.node, future, timeout_sec=10.0)
        self.assertTrue(future.result() is not None and future.result().success)
        time.sleep(0.3)
        self.force.take_all()
        time.sleep(0.3)
        after = [m.data for m, _ in self.force.take_all()]
        self.assertTrue(after and max(after) == 0.0, f"force after clearing: {after[-3:]}")
        print(f"gauge 1 cm into the elbow: up to {max(pushing):.1f} N; 0 N after mock/clear_gauge",
              flush=True)


def _elbow(q):
    """World position of the mock's elbow point (mock_arm.yaml elbow_link origin) at q."""
    import pinocchio as pin

    model = ROBOT.arm.model
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    return data.oMf[model.getFrameId(MOCK.elbow_link)].act(np.array(MOCK.elbow_point_m))


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_every_process_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
