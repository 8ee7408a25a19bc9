"""What a newcomer with a new MJCF arm runs into, each caught where it is written: a frame name
the description does not have (one rule for the controller, the pose solver and the mock), a
home pose outside the joint limits, a trajectory on an arm in a tilted plane (start held and
error scored on the task's axes), an experiment the arm cannot have, and warnings that name the
file and key instead of a Python source line."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from musculo_control.cli import main
from musculo_control.errors import ConfigError, InputError
from musculo_control.model.robot import load_robot
from musculo_control.paths import config_root
from musculo_control.sim.experiments import run_experiment
from musculo_control.sim.scaffold import write_config
from musculo_control.sim.setup import Overrides, experiment_config, load_setup

MODELS = Path(__file__).parent / "mjcf"


@pytest.fixture()
def planar(tmp_path):
    folder = tmp_path / "planar_arm"
    shutil.copytree(config_root() / "planar_arm", folder)
    return folder


def _edit(folder: Path, name: str, change) -> None:
    path = folder / name
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_an_unnamed_body_has_no_name_anywhere(planar):
    """Take the forearm's name away: the controller, the pose solver and the mock refuse a
    made-up name alike, listing bodies, sites and joints and saying how to name one."""
    xml = planar / "arm.xml"
    xml.write_text(xml.read_text().replace('<body name="forearm" pos="0 0 -0.3">',
                                           '<body pos="0 0 -0.3">'))
    _edit(planar, "robot.yaml", lambda d: d["arm"].__setitem__("task_frame", "BisBis"))
    with pytest.raises(ConfigError) as info:
        load_robot(planar)
    assert info.value.key == "arm.task_frame"
    text = info.value.expected
    assert "a frame of the MJCF" in text and "sites [" in text and "joints [" in text
    assert "'elbow'" in text and "unnamed body has no name" in text
    # the joint's anchor and the site serve instead, in every file
    _edit(planar, "robot.yaml", lambda d: (d["arm"].__setitem__("task_frame", "hand"),
                                           d["poses"].__setitem__("elbow_frame", "elbow")))
    _edit(planar, "mock_arm.yaml", lambda d: d.__setitem__("elbow_link", "elbow"))
    setup = load_setup(planar, Overrides())
    assert setup.robot.poses is not None
    elbow = setup.robot.poses.elbow_position(setup.robot.home_pose_rad)
    np.testing.assert_allclose(elbow, [0.3 * np.sin(0.6), 0.0, -0.3 * np.cos(0.6)], atol=1e-12)
    _edit(planar, "mock_arm.yaml", lambda d: d.__setitem__("elbow_link", "BisBis"))
    assert main(["simulate", "disturbance", "--config", str(planar), "--out",
                 str(planar / "out")]) == 2


def test_a_home_pose_outside_the_limits_is_refused_at_load(planar, capsys):
    _edit(planar, "robot.yaml", lambda d: d.__setitem__("home_pose_rad", [0.6, 2.6]))
    assert main(["model-report", "--config", str(planar)]) == 2
    err = capsys.readouterr().err
    assert "robot.yaml: home_pose_rad[1]" in err and "'elbow' within its limits" in err


def test_an_arm_without_a_nullspace_says_so():
    setup = load_setup(config_root() / "planar_arm", Overrides())
    with pytest.raises(InputError) as info:
        experiment_config(setup, "nullspace")
    assert "2 rows leave the arm's 2 joints no nullspace" in str(info.value)


def test_a_config_warning_names_file_and_key_not_a_source_line(planar, capsys):
    _edit(planar, "controller.yaml", lambda d: d["workspace"].__setitem__("reach_m", 0.9))
    assert main(["simulate", "nullspace", "--config", str(planar), "--out",
                 str(planar / "out")]) == 2  # the nullspace error comes after the warning
    err = capsys.readouterr().err
    assert "musculo simulate: warning:" in err and "controller.yaml: workspace.reach_m" in err
    assert "warnings.warn" not in err and ".py:" not in err


@pytest.mark.slow
def test_a_tilted_planar_arm_is_held_and_scored_on_its_task_axes(tmp_path):
    """The joint-less chain's arm moves in a plane turned 0.3 rad about z: the start pose
    meets x and z (poses.hand_axes), and the error is the task's (x, z); in 3-D the hand
    leaves the goal's y as it moves in its plane."""
    folder = tmp_path / "tilted"
    write_config(MODELS / "jointless_chain.xml", folder, move_m=0.1)
    robot = yaml.safe_load((folder / "robot.yaml").read_text())
    assert robot["poses"]["hand_axes"] == ["x", "z"]
    setup = load_setup(folder, Overrides.parse(["experiments.trajectory.settle_s=0.5",
                                                "experiments.trajectory.move_s=1.5",
                                                "experiments.trajectory.hold_s=0.5"]))
    run = run_experiment(setup, "trajectory", "osc", progress=False)[0]
    assert run.metrics["final_error_m"] < 0.02
    hand, goal = run.recorder.array("hand_m"), run.recorder.array("hand_goal_m")
    in_3d = float(np.linalg.norm(hand[-1] - goal[-1]))
    assert run.metrics["final_error_m"] == pytest.approx(
        float(np.linalg.norm((hand[-1] - goal[-1])[[0, 2]])))
    assert in_3d > run.metrics["final_error_m"]
