"""Shared fixtures: the shipped robot, its dynamics estimator and seeded random poses."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from musculo_control.config.parser import load
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.model.robot import Robot, load_robot
from musculo_control.model.task import TaskConfig
from musculo_control.paths import default_config_dir

# what only the benchmark scripts use lives beside them in benchmarks/, outside the installed
# package (benchmarks/solver_field.py); the tests that check it import it from the checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


@pytest.fixture
def ros():
    """rclpy initialised on a domain of its own for one test (the ROS 2 wheels of the test
    extra), shut down after it."""
    rclpy = pytest.importorskip("rclpy")
    from graph_harness import domain_id

    rclpy.init(domain_id=domain_id())
    try:
        yield
    finally:
        rclpy.try_shutdown()


@pytest.fixture(scope="session")
def config_dir():
    return default_config_dir()


@pytest.fixture(scope="session")
def robot(config_dir) -> Robot:
    return load_robot(config_dir)


@pytest.fixture(scope="session")
def task(config_dir) -> TaskConfig:
    return load(TaskConfig, config_dir / "controller.yaml", "task")


@pytest.fixture()
def estimator(robot, task) -> DynamicsEstimator:
    return DynamicsEstimator(robot, task)


def random_poses(robot: Robot, count: int, seed: int, margin_rad: float = 0.05) -> np.ndarray:
    """Seeded uniform poses strictly inside the joint limits."""
    rng = np.random.default_rng(seed)
    lo, hi = robot.arm.lower_rad + margin_rad, robot.arm.upper_rad - margin_rad
    return lo + (hi - lo) * rng.random((count, robot.arm.n_joints))
