"""Launch test: bad parameters stop the launch, or the node, with a non-zero exit code and a
sentence naming the file and the key.

- ``ros2 launch musculo_control mock_arm.launch.py params_file:=<bad>``: the launch checks the
  file for every node before any starts, exits non-zero and names the file and
  ``<node>.ros__parameters.<key>`` (a value out of range, an unknown key);
- ``config_dir:=<a folder without a robot>``: non-zero, naming the missing parameter file;
- ``controller:=<no such controller>``: non-zero, naming the valid choices;
- a node started by launch with a bad parameter file (as launch_ros passes it,
  ``--params-file``) exits with code 2 naming the file and the key.

    launch_test launch_tests/test_parameter_errors.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import unittest
from pathlib import Path

import pytest

rclpy = pytest.importorskip(
    "rclpy", reason="launch tests need ROS 2 (rclpy): source a ROS 2 Humble (or newer) setup "
                    "and the colcon install of musculo_control, then run launch_test on this file")
pytest.importorskip("launch_testing", reason="launch_testing is not installed")

import launch_testing.actions
import launch_testing.asserts
from launch.actions import ExecuteProcess
from launch_ros.actions import Node

from launch import LaunchDescription

sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import PACKAGE

WORK = Path(tempfile.mkdtemp(prefix="musculo_parameter_errors_"))
OUT_OF_RANGE = WORK / "out_of_range.yaml"
OUT_OF_RANGE.write_text("dynamics_node:\n  ros__parameters:\n    warn_throttle_s: -1.0\n")
UNKNOWN_KEY = WORK / "unknown_key.yaml"
UNKNOWN_KEY.write_text("activation_qp_node:\n  ros__parameters:\n    rate_hz: 125.0\n")
NO_ROBOT = WORK / "no_robot"
NO_ROBOT.mkdir()
NODE_BAD = WORK / "node_bad.yaml"
NODE_BAD.write_text("activation_qp_node:\n  ros__parameters:\n    tendon_queue: deep\n")

#: (name, launch arguments, words the output must hold, allowed exit codes)
LAUNCHES = (
    ("launch_out_of_range", [f"params_file:={OUT_OF_RANGE}"],
     (str(OUT_OF_RANGE), "dynamics_node.ros__parameters.warn_throttle_s"), None),
    ("launch_unknown_key", [f"params_file:={UNKNOWN_KEY}"],
     (str(UNKNOWN_KEY), "activation_qp_node.ros__parameters.rate_hz"), None),
    ("launch_no_robot", [f"config_dir:={NO_ROBOT}"], (str(NO_ROBOT / "ros_params.yaml"),), None),
    ("launch_bad_controller", ["controller:=no_such_controller"],
     ("no_such_controller", "osc-no-nullspace"), None),
)
#: Exit code of a node that stops on a bad parameter file (nodes/process.py run).
NODE_EXIT_CODE = 2


def _ros2_launch(name: str, arguments: list[str]) -> ExecuteProcess:
    return ExecuteProcess(
        cmd=["ros2", "launch", PACKAGE, "mock_arm.launch.py", "use_rviz:=false",
             "use_robot_state_publisher:=false", "goal_mode:=none", *arguments],
        name=name, output="screen")


@pytest.mark.launch_test
def generate_test_description():
    launches = {name: _ros2_launch(name, args) for name, args, _, _ in LAUNCHES}
    node = Node(package=PACKAGE, executable="activation_qp_node", name="activation_qp_node",
                parameters=[str(NODE_BAD)], output="screen")
    return LaunchDescription([*launches.values(), node,
                              launch_testing.actions.ReadyToTest()]), {
        "launches": launches, "node": node}


class TestParameterErrors(unittest.TestCase):

    def test_every_process_stops_by_itself(self, proc_info, launches, node):
        for action in [*launches.values(), node]:
            proc_info.assertWaitForShutdown(process=action, timeout=180)


@launch_testing.post_shutdown_test()
class TestExitCodesAndMessages(unittest.TestCase):

    def test_a_bad_launch_exits_non_zero_naming_what_is_wrong(self, proc_info, proc_output,
                                                              launches):
        for name, _, words, _ in LAUNCHES:
            code = proc_info[launches[name]].returncode
            text = "".join(o.text.decode() for o in proc_output[launches[name]])
            print(f"\n{name}: exit code {code}: {text.strip().splitlines()[-1]}", flush=True)
            self.assertNotEqual(code, 0, name)
            for w in words:
                self.assertIn(w, text, name)

    def test_a_node_with_a_bad_parameter_file_exits_2_naming_file_and_key(self, proc_info,
                                                                          proc_output, node):
        launch_testing.asserts.assertExitCodes(proc_info, [NODE_EXIT_CODE], process=node)
        text = "".join(o.text.decode() for o in proc_output[node])
        print(f"\nnode: {text.strip()}", flush=True)
        for w in (str(NODE_BAD), "activation_qp_node.ros__parameters.tendon_queue"):
            self.assertIn(w, text)
