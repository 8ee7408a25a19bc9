"""Launch test: the suite on simulated time. The mock arm publishes /clock at half real time;
every other node runs its timers on it, and the rates hold per simulated second.

    launch_test launch_tests/test_sim_time.py
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
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    STARTUP_TIMEOUT_S,
    DiagnosticsLog,
    Probe,
    mock_arm_launch,
)

from musculo_control.nodes import conversions as cv

REAL_TIME_FACTOR = 0.5
WINDOW_S = 6.0  # wall seconds


@pytest.mark.launch_test
def generate_test_description():
    return mock_arm_launch(use_sim_time="true", real_time_factor=str(REAL_TIME_FACTOR))


def _sim_seconds(msg) -> float:
    return msg.clock.sec + msg.clock.nanosec * 1e-9


class TestSimTime(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.probe = Probe("musculo_sim_time_test")
        cls.diag = DiagnosticsLog(cls.probe)
        cls.clock = cls.probe.queue(Clock, "/clock")
        cls.joints = cls.probe.queue(JointState, "joint_states")
        cls.commands = cls.probe.queue(JointState, "muscle_commands")

    @classmethod
    def tearDownClass(cls):
        cls.probe.destroy()
        rclpy.shutdown()

    def test_rates_per_simulated_second(self):
        def controlling():
            qp = self.diag.latest("activation_qp_node")
            mock = self.diag.latest("mock_hardware_node")
            return (qp is not None and qp.level == cv.OK and mock is not None
                    and mock.message == "running")

        self.probe.wait_for("the controller on simulated time", controlling, STARTUP_TIMEOUT_S)
        for q in (self.clock, self.joints, self.commands):
            q.take_all()
        t0 = time.time()
        time.sleep(WINDOW_S)
        clocks = self.clock.take_all()
        joints = self.joints.take_all()
        commands = self.commands.take_all()
        wall = time.time() - t0
        self.assertGreater(len(clocks), 1, "no /clock")
        sim = _sim_seconds(clocks[-1][0]) - _sim_seconds(clocks[0][0])
        in_window = [m for m, _ in joints
                     if _sim_seconds(clocks[0][0]) <= cv.stamp_of(m).seconds
                     <= _sim_seconds(clocks[-1][0])]
        cmd_window = [m for m, _ in commands
                      if _sim_seconds(clocks[0][0]) <= cv.stamp_of(m).seconds
                      <= _sim_seconds(clocks[-1][0])]
        print(f"\n{sim:.2f} simulated s in {wall:.2f} wall s (factor {sim / wall:.2f}); "
              f"joint_states {len(in_window) / sim:.1f} and muscle_commands "
              f"{len(cmd_window) / sim:.1f} per simulated second", flush=True)
        self.assertGreater(sim / wall, 0.5 * REAL_TIME_FACTOR)
        self.assertGreaterEqual(len(in_window) / sim, 400.0)
        self.assertAlmostEqual(len(cmd_window) / sim, 125.0, delta=10.0)
        qp = self.diag.latest("activation_qp_node")
        self.assertEqual(qp.level, cv.OK, qp.message)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_every_process_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
