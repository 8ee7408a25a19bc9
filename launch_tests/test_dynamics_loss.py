"""Launch test: killing the dynamics node makes the QP node send minimum tension within 100 ms
and say so on /diagnostics.

The QP node notices the silence by receipt time (``dynamics_timeout_s``, 75 ms), sooner than
the last snapshot's own age limit (``qp.snapshot_max_age_s``, 100 ms) would.

    launch_test launch_tests/test_dynamics_loss.py
"""

from __future__ import annotations

import os
import signal
import sys
import time
import unittest

import pytest

rclpy = pytest.importorskip(
    "rclpy", reason="launch tests need ROS 2 (rclpy): source a ROS 2 Humble (or newer) setup "
                    "and the colcon install of musculo_control, then run launch_test on this file")
pytest.importorskip("launch_testing", reason="launch_testing is not installed")
psutil = pytest.importorskip("psutil", reason="the test finds the node's process with psutil")

import launch_testing.asserts
import numpy as np
from sensor_msgs.msg import JointState

sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    STARTUP_TIMEOUT_S,
    DiagnosticsLog,
    Probe,
    mock_arm_launch,
)

from musculo_control.model.config import load
from musculo_control.model.robot import RobotConfig
from musculo_control.nodes import conversions as cv
from musculo_control.paths import default_config_dir

#: The issue's limit: minimum tension within this long after the dynamics node dies [s].
REACTION_LIMIT_S = 0.100
#: Watch this long after the kill [s].
WATCH_S = 1.0
F_MIN_N = load(RobotConfig, default_config_dir() / "robot.yaml").hill.f_min_n
KILLED = "dynamics_node"


@pytest.mark.launch_test
def generate_test_description():
    return mock_arm_launch()


def _node_process(executable: str) -> psutil.Process:
    """The launched process running ``lib/musculo_control/<executable>`` (a child of this one)."""
    for proc in psutil.Process().children(recursive=True):
        try:
            if any(arg.endswith(f"/{executable}") for arg in proc.cmdline()):
                return proc
        except psutil.NoSuchProcess:
            continue
    raise AssertionError(f"no running process for {executable}")


class TestDynamicsLoss(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.probe = Probe("musculo_dynamics_loss_test")
        cls.diag = DiagnosticsLog(cls.probe)
        cls.commands = cls.probe.queue(JointState, "muscle_commands")

    @classmethod
    def tearDownClass(cls):
        cls.probe.destroy()
        rclpy.shutdown()

    def test_killing_dynamics_gives_minimum_tension_and_a_diagnostic(self):
        def controlling():
            qp = self.diag.latest("activation_qp_node")
            mock = self.diag.latest("mock_hardware_node")
            return (qp is not None and qp.level == cv.OK and mock is not None
                    and mock.message == "running")

        self.probe.wait_for("the controller holding the released arm", controlling,
                            STARTUP_TIMEOUT_S)
        time.sleep(1.0)
        self.commands.take_all()
        self.diag.update()
        n_diag = len(self.diag.entries)
        proc = _node_process(KILLED)
        t_kill = time.time()
        os.kill(proc.pid, signal.SIGKILL)
        time.sleep(WATCH_S)
        commands = [(cv.stamp_of(m).seconds, cv.float_array(m.effort))
                    for m, _ in self.commands.take_all()]
        self.assertTrue(commands, "no muscle_commands after the kill")
        safe = [t for t, f in commands if t >= t_kill and np.all(f == F_MIN_N)]
        self.assertTrue(safe, "the QP node never sent minimum tension after the dynamics node "
                              "died")
        first = safe[0] - t_kill
        after = [f for t, f in commands if t >= safe[0]]
        diag = [(t, s) for t, s in self.diag.update()[n_diag:]
                if s.name.endswith(": activation_qp_node") and s.level == cv.ERROR
                and "dynamics" in s.message]
        print(f"\nkilled {KILLED} (pid {proc.pid}); first minimum-tension command "
              f"{first * 1e3:.1f} ms later", flush=True)
        self.assertLessEqual(first, REACTION_LIMIT_S)
        self.assertTrue(all(np.all(f == F_MIN_N) for f in after),
                        "tension above the minimum again without dynamics")
        self.assertTrue(diag, "no ERROR about the dynamics on /diagnostics")
        print(f"/diagnostics {(diag[0][0] - t_kill) * 1e3:.1f} ms after the kill: "
              f"'{diag[0][1].message}'", flush=True)
        self.assertLessEqual(diag[0][0] - t_kill, REACTION_LIMIT_S)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_processes_exit_cleanly_but_the_killed_one(self, proc_info):
        for name in proc_info.process_names():
            codes = [-signal.SIGKILL] if name.startswith(KILLED) else [0]
            launch_testing.asserts.assertExitCodes(proc_info, codes, process=name)
