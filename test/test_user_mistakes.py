"""What a user describing a new arm gets wrong is caught before anything runs (issue 13): a task
row no joint moves, more task rows than joints, a trajectory beyond the arm's reach, a workspace
gate larger than the arm, a nullspace experiment on an arm with no nullspace. Each error names
the file, the key and the values.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from musculo_control.control.controller_config import load_controller_config
from musculo_control.errors import ConfigError, ConfigWarning
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.model.checks import check_workspace
from musculo_control.model.robot import load_robot
from musculo_control.model.task import TaskConfig
from musculo_control.paths import config_root
from musculo_control.sim.setup import Overrides, load_setup


@pytest.fixture(scope="module")
def planar():
    return load_robot(config_root() / "planar_arm")


@pytest.fixture()
def planar_copy(tmp_path) -> Path:
    folder = tmp_path / "planar_arm"
    shutil.copytree(config_root() / "planar_arm", folder)
    return folder


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_a_task_row_no_joint_moves_is_an_error(planar):
    """The planar arm moves in x-z: a vy row is never moved."""
    task = TaskConfig(rows=("vx", "vy"), mask=((True, True), (True, True)))
    with pytest.raises(ConfigError) as info:
        task.check_robot(planar, "controller.yaml")
    err = info.value
    assert err.key == "task.rows[1]" and err.received == "vy"
    assert "'hand'" in err.expected and "['shoulder', 'elbow']" in err.expected


def test_a_task_row_masked_off_every_joint_that_moves_it_is_an_error():
    """On the stand-in arm, a vx row allowed only the forearm roll and wrist roll (which turn
    about the forearm's axis, through the hand point) is never moved."""
    robot = load_robot(config_root() / "musashi_left_arm")
    task = TaskConfig(rows=("vx",), mask=((False, False, False, False, True, True, False),))
    with pytest.raises(ConfigError) as info:
        task.check_robot(robot, "controller.yaml")
    assert info.value.key == "task.rows[0]"
    assert "['elbow_y', 'wrist_r']" in info.value.expected


def test_more_task_rows_than_joints_is_an_error(planar):
    task = TaskConfig(rows=("vx", "vy", "vz"), mask=((True, True),) * 3)
    with pytest.raises(ConfigError) as info:
        DynamicsEstimator(planar, task, "controller.yaml")
    assert info.value.key == "task.rows"
    assert "at most 2 rows" in info.value.expected and "['shoulder', 'elbow']" in info.value.expected


def test_the_shipped_tasks_pass(planar):
    for folder in ("planar_arm", "musashi_left_arm"):
        robot = planar if folder == "planar_arm" else load_robot(config_root() / folder)
        load_controller_config(config_root() / folder).task.check_robot(robot, "controller.yaml")


def test_a_trajectory_beyond_reach_names_the_end_and_how_short_it_falls(planar_copy):
    _edit(planar_copy / "experiments.yaml",
          lambda d: d["trajectory"].__setitem__("end_m", [0.40, 0.0, 0.45]))
    with pytest.raises(ConfigError) as info:
        load_setup(planar_copy, Overrides.parse([]))
    err = info.value
    assert Path(err.file).name == "experiments.yaml" and err.key == "trajectory.end_m"
    assert err.received == [0.4, 0.0, 0.45]
    assert "mm short" in err.expected


def test_a_trajectory_out_of_the_arms_plane_is_unreachable(planar_copy):
    _edit(planar_copy / "experiments.yaml",
          lambda d: d["trajectory"].__setitem__("end_m", [0.40, 0.05, -0.05]))
    with pytest.raises(ConfigError) as info:
        load_setup(planar_copy, Overrides.parse([]))
    assert info.value.key == "trajectory.end_m"


def test_a_workspace_larger_than_the_arm_warns(planar):
    ws = load_controller_config(config_root() / "planar_arm").workspace
    with pytest.warns(ConfigWarning, match=r"workspace\.reach_m.*hand gets at most 0\.5"):
        check_workspace(planar, ws.center_m, 0.9, "controller.yaml")


def test_a_nullspace_experiment_without_a_nullspace_is_an_error(planar_copy):
    _edit(planar_copy / "experiments.yaml", lambda d: d.__setitem__(
        "nullspace", {"start_pose": "home", "drift_joint": "shoulder", "duration_s": 2.0,
                      "window_s": 0.5,
                      "start_skip_s": 0.1}))
    with pytest.raises(ConfigError) as info:
        load_setup(planar_copy, Overrides.parse([]))
    assert info.value.key == "nullspace"
    assert "2 rows for 2 joints" in info.value.expected


def test_defaults_that_fit_only_the_stand_in_arm_are_required(planar_copy):
    """The push axis and the task rows have no default: each arm says its own."""
    _edit(planar_copy / "experiments.yaml", lambda d: d["disturbance"].pop("axis"))
    with pytest.raises(ConfigError) as info:
        load_setup(planar_copy, Overrides.parse([]))
    assert info.value.key == "disturbance.axis" and info.value.received == "missing"
    shutil.copy(config_root() / "planar_arm" / "experiments.yaml", planar_copy)
    _edit(planar_copy / "controller.yaml", lambda d: d["task"].pop("rows"))
    with pytest.raises(ConfigError) as info:
        load_setup(planar_copy, Overrides.parse([]))
    assert info.value.key == "task.rows" and info.value.received == "missing"
