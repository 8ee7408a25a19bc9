"""Launch test: bad input is refused with a warning naming the topic and the fault, and never
reaches the controller, which keeps commanding and keeps its goal.

Sent while the arm is under control: goals with NaN, outside the workspace, in another frame,
out of order; joint states with the wrong number of names, unknown names, an old stamp; muscle
commands with unknown names.

    launch_test launch_tests/test_bad_input.py
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
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    STARTUP_TIMEOUT_S,
    DiagnosticsLog,
    Probe,
    mock_arm_launch,
)

from musculo_control.nodes import conversions as cv
from musculo_control.nodes.ros_common import MSGS, QOS_GOAL
from musculo_control.stamps import Stamp

JOINTS = ["shoulder_p", "shoulder_r", "shoulder_y", "elbow_p", "elbow_y", "wrist_r", "wrist_p"]
#: Bad joint states are repeated this often so that the polling nodes see some as the newest.
REPEATS = 60
WAIT_S = 10.0


@pytest.mark.launch_test
def generate_test_description():
    return mock_arm_launch()


class TestBadInput(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.probe = Probe("musculo_bad_input_test")
        cls.diag = DiagnosticsLog(cls.probe)
        node = cls.probe.node
        cls.goal_pub = node.create_publisher(PoseStamped, "hand_goal", QOS_GOAL)
        cls.joint_pub = node.create_publisher(JointState, "joint_states", 10)
        cls.command_pub = node.create_publisher(JointState, "muscle_commands", 10)
        cls.goal_echo = cls.probe.queue(PoseStamped, "controller/goal", depth=20, qos=QOS_GOAL)
        cls.commands = cls.probe.queue(JointState, "muscle_commands")

    @classmethod
    def tearDownClass(cls):
        cls.probe.destroy()
        rclpy.shutdown()

    def _controlling(self) -> bool:
        qp = self.diag.latest("activation_qp_node")
        mock = self.diag.latest("mock_hardware_node")
        return (qp is not None and qp.level == cv.OK and mock is not None
                and mock.message == "running")

    def _goal(self, position, frame="base_link", quat=(0.0, 0.0, 0.0, 1.0), stamp=None):
        stamp = stamp or Stamp.from_seconds(time.time())
        self.goal_pub.publish(cv.pose_stamped_msg(MSGS, stamp, frame, position, quat))
        time.sleep(0.1)

    def _joints(self, names, stamp=None):
        for _ in range(REPEATS):
            st = stamp or Stamp.from_seconds(time.time())
            self.joint_pub.publish(cv.joint_state_msg(MSGS, st, names, np.zeros(len(names)),
                                                      np.zeros(len(names))))
            time.sleep(0.005)

    def test_bad_input_is_refused_and_control_goes_on(self, proc_output):
        self.probe.wait_for("the controller", self._controlling, STARTUP_TIMEOUT_S)
        self.goal_echo.take_all()
        good = np.array([0.30, 0.30, 0.32])
        self._goal(good)
        self.probe.wait_for("the good goal in force", lambda: bool(self.goal_echo.take_all()),
                            5.0)
        self.commands.take_all()

        def warned(text):
            proc_output.assertWaitFor(text, timeout=WAIT_S, stream="stderr")

        self._goal([0.3, float("nan"), 0.3])
        warned("refused a message on hand_goal: position [0.3, nan, 0.3] is not 3 finite values")
        time.sleep(1.1)  # past the warning throttle of the topic (one warning per second)
        self._goal([1.5, 0.2, 0.3])
        warned("beyond the reach")
        time.sleep(1.1)
        self._goal(good, frame="world")
        warned("frame_id 'world', expected the base frame 'base_link'")
        time.sleep(1.1)
        self._goal(good, stamp=Stamp(1, 0))
        warned("(out of order)")
        self._joints(JOINTS[:6])
        warned("refused a message on joint_states: 6 joint names, expected 7")
        time.sleep(1.1)
        self._joints(JOINTS[:6] + ["wrist_x"])
        warned("unknown joint names ['wrist_x']")
        time.sleep(1.1)
        self._joints(JOINTS, stamp=Stamp(1, 0))
        warned("joint_states: stamp 1.000000 s before the previous")
        for _ in range(REPEATS):
            self.command_pub.publish(cv.joint_state_msg(
                MSGS, Stamp.from_seconds(time.time()), ["biceps"] * 18, effort=np.full(18, 300.0)))
            time.sleep(0.005)
        warned("refused a message on muscle_commands")
        # none of it reached the controller: the good goal is still the one in force, and the
        # controller kept commanding its tensions
        self.assertEqual(self.goal_echo.take_all(), [], "a refused goal replaced the good one")
        f_min = min(float(np.min(cv.float_array(m.effort))) for m, _ in self.commands.take_all())
        self.assertGreater(f_min, 0.0)
        qp = self.diag.latest("activation_qp_node")
        self.assertEqual(qp.level, cv.OK, qp.message)
        print(f"\ncontroller still OK after the bad input: '{qp.message}'", flush=True)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_every_process_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
