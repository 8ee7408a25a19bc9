"""Launch test: ``mock_arm.launch.py one_process:=true``, the shared layout (the potentiometer and
tendon driver nodes in ``hardware_process``, the dynamics, QP and goal nodes in
``control_process``), held to the checks of ``test_mock_arm_launch.py`` (every node comes up, the
controller holds the arm, the rates, no safe state, a goal 10 cm away reached, clean exits).

    launch_test launch_tests/test_one_process_launch.py

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

sys.path.insert(0, os.path.dirname(__file__))
import test_mock_arm_launch as one_per_node  # noqa: E402
from launch_helpers import (  # noqa: E402
    LOCKSTEP,
    CleanExit,  # noqa: F401 - launch_testing runs it after shutdown
    launch,
    params_file,
)


@pytest.mark.launch_test
def generate_test_description():
    return launch(**LOCKSTEP, params_file=params_file(), one_process="true")


class TestOneProcess(one_per_node.TestMockArm):
    """The same tests, in name order, on the graph of the shared layout."""
