"""A missing or malformed parameter file stops a node (and the launch) at start, with an error
naming the file and the key. Needs ROS 2 and the colcon install (skipped otherwise); plain
pytest tests, run with ``python3 -m pytest test/ros/test_parameter_errors.py``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="needs ROS 2 (rclpy) and the colcon install of "
                                    "musculo_control")
ament = pytest.importorskip("ament_index_python.packages",
                            reason="needs ament_index_python (ROS 2)")

NODE = "activation_qp_node"
TIMEOUT_S = 60


def _prefix() -> Path:
    try:
        return Path(ament.get_package_prefix("musculo_control"))
    except ament.PackageNotFoundError:
        pytest.skip("musculo_control is not installed with colcon (source install/setup.bash)")


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=dict(os.environ), check=False)


def _node(params_file: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    exe = _prefix() / "lib" / "musculo_control" / NODE
    return _run([str(exe), "--ros-args", "--params-file", str(params_file), *extra])


def test_a_missing_parameter_file_stops_the_node_naming_the_file(tmp_path):
    missing = tmp_path / "no_such_params.yaml"
    result = _node(missing)
    assert result.returncode != 0
    assert str(missing) in result.stderr and "<file>" in result.stderr


@pytest.mark.parametrize("text, key", [
    (f"{NODE}:\n  ros__parameters:\n    rate_hz: fast\n", f"{NODE}.ros__parameters.rate_hz"),
    (f"{NODE}:\n  ros__parameters:\n    rate_hzz: 125.0\n", f"{NODE}.ros__parameters.rate_hzz"),
    (f"{NODE}:\n  ros__parameters: [1, 2\n", "<file>"),
])
def test_a_malformed_parameter_file_stops_the_node_naming_file_and_key(tmp_path, text, key):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    result = _node(path)
    assert result.returncode != 0
    assert str(path) in result.stderr and key in result.stderr, result.stderr


def test_a_bad_config_folder_stops_the_node_naming_the_file(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(f"{NODE}:\n  ros__parameters:\n    rate_hz: 125.0\n")
    result = _node(path, "-p", f"config_dir:={tmp_path}")
    assert result.returncode != 0
    assert str(tmp_path / "robot.yaml") in result.stderr, result.stderr


def test_a_malformed_parameter_file_stops_the_launch_naming_file_and_key(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("dynamics_node:\n  ros__parameters:\n    rate_hz: -20.0\n")
    result = _run(["ros2", "launch", "musculo_control", "mock_arm.launch.py", "use_rviz:=false",
                   "use_robot_state_publisher:=false", f"params_file:={path}"])
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert str(path) in out and "dynamics_node.ros__parameters.rate_hz" in out, out
