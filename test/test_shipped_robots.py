"""Every robot shipped in config/ loads, compiles and steps cleanly (as MuJoCo Menagerie tests
its models): a second of random tension commands, no simulator warning, a finite state; and its
experiments file sets up (poses solve, trajectories reachable, tasks followable).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from musculo_control.model.robot import load_robot
from musculo_control.paths import config_root
from musculo_control.sim.mock_arm import load_mock_arm
from musculo_control.sim.setup import Overrides, load_setup


def shipped_folders() -> list[Path]:
    return sorted(p for p in config_root().iterdir() if (p / "robot.yaml").is_file())


@pytest.mark.parametrize("folder", shipped_folders(), ids=lambda p: p.name)
def test_every_shipped_robot_steps_a_second_of_random_tensions_without_warnings(folder):
    robot = load_robot(folder)
    mock = load_mock_arm(robot)
    mock.reset(robot.home_pose_rad, robot.hill.f_min_n)
    rng = np.random.default_rng(0)
    # commands change every 10 ms, anywhere between f_min and a quarter of the envelope
    high = 0.25 * float(mock.max_tension_n.min())
    steps = int(round(1.0 / mock.dt_s))
    for k in range(steps):
        if k % 10 == 0:
            tension = rng.uniform(robot.hill.f_min_n, high, robot.n_muscles)
            mock.set_command(mock.calibration.n_to_driver(tension))
        mock.step()
    assert mock.time_s == pytest.approx(1.0)
    assert mock.warnings() == {}, mock.warnings()
    assert np.all(np.isfinite(mock.q_rad)) and np.all(np.isfinite(mock.qd_rad_s))
    lo, hi = robot.arm.lower_rad, robot.arm.upper_rad
    assert np.all(mock.q_rad > lo - 0.1) and np.all(mock.q_rad < hi + 0.1)  # stops hold


def test_the_warning_check_can_fail(tmp_path, monkeypatch):
    """A warning is seen: a timestep far too long for stiff joint stops makes MuJoCo warn or
    blow up; the check above would then fail."""
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warnings to MUJOCO_LOG.TXT here
    robot = load_robot(config_root() / "planar_arm")
    mock = load_mock_arm(robot)
    mock.model.opt.timestep = 0.5
    mock.reset(robot.home_pose_rad, robot.hill.f_min_n)
    mock.set_command(mock.calibration.n_to_driver(np.full(robot.n_muscles, 1500.0)))
    for _ in range(200):
        mock.step()
    assert mock.warnings() or not np.all(np.isfinite(mock.q_rad))


@pytest.mark.parametrize("folder", shipped_folders(), ids=lambda p: p.name)
def test_every_shipped_robot_sets_up_its_experiments(folder):
    setup = load_setup(folder, Overrides.parse([]))
    assert setup.experiments.configured()
