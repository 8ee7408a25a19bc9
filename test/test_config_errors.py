"""Malformed or inconsistent descriptions stop with an error naming file, key and expectation."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml

from musculo_control.errors import ConfigError, InputError
from musculo_control.model.robot import load_robot


def _edit_yaml(name: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / name
        data = yaml.safe_load(path.read_text())
        change(data)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return apply


def _edit_text(name: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / name
        text = path.read_text()
        assert old in text, f"fixture out of date: {old!r} not in {name}"
        path.write_text(text.replace(old, new, 1))
    return apply


def _muscle(data: dict, name: str) -> dict:
    return next(m for m in data["muscles"] if m["name"] == name)


def _set_path(name, path):
    return _edit_yaml("muscles.yaml", lambda d: _muscle(d, name).__setitem__("path", path))


def _drop_muscles(names):
    return _edit_yaml("muscles.yaml", lambda d: d.__setitem__(
        "muscles", [m for m in d["muscles"] if m["name"] not in names]))


# (id, mutation, file the message must name, key fragment, expectation fragment)
CASES = [
    ("unknown link in a route",
     _edit_yaml("muscles.yaml", lambda d: _muscle(d, "biceps")["path"][1].__setitem__("link", "uper_arm_link")),
     "muscles.yaml", "muscles[6].path[1].link", "a link of the URDF"),
    ("joint name typo",
     _edit_yaml("robot.yaml", lambda d: d["arm"]["joints"].__setitem__(3, "elbow_pitch")),
     "robot.yaml", "arm.joints[3]", "a joint of the URDF"),
    ("joints out of order",
     _edit_yaml("robot.yaml", lambda d: d["arm"].__setitem__(
         "joints", ["shoulder_r", "shoulder_p", *d["arm"]["joints"][2:]])),
     "robot.yaml", "arm.joints", "the URDF's joint order"),
    ("muscle with one via-point",
     _set_path("brachialis", [{"link": "upper_arm_link", "point_m": [0.02, 0, -0.15]}]),
     "muscles.yaml", "muscles[8].path", "at least 2 items"),
    ("muscle that spans no joint",
     _set_path("brachialis", [{"link": "upper_arm_link", "point_m": [0.02, 0, -0.15]},
                              {"link": "upper_arm_link", "point_m": [0.02, 0, -0.2]}]),
     "muscles.yaml", "muscles[8].path", "at least two links"),
    ("non-positive mass",
     _edit_text("arm.urdf", '<mass value="1.5"/>', '<mass value="0.0"/>'),
     "arm.urdf", "forearm_link", "a positive mass"),
    ("joint pulled from one side only",
     _drop_muscles({"pronator"}),
     "muscles.yaml", "muscles", "pull joint 'elbow_y' both ways"),
    ("point with two coordinates",
     _edit_yaml("muscles.yaml", lambda d: _muscle(d, "biceps")["path"][0].__setitem__("point_m", [0.1, 0.2])),
     "muscles.yaml", "muscles[6].path[0].point_m", "a list of 3 items"),
    ("point coordinate not a number",
     _edit_yaml("muscles.yaml", lambda d: _muscle(d, "biceps")["path"][0].__setitem__("point_m", [0.1, "x", 0.3])),
     "muscles.yaml", "muscles[6].path[0].point_m[1]", "a number"),
    ("duplicate muscle name",
     _edit_yaml("muscles.yaml", lambda d: _muscle(d, "brachialis").__setitem__("name", "biceps")),
     "muscles.yaml", "muscles[8].name", "a unique name"),
    ("duplicate actuator id",
     _edit_yaml("muscles.yaml", lambda d: _muscle(d, "brachialis").__setitem__("actuator_id", 7)),
     "muscles.yaml", "muscles[8].actuator_id", "a unique actuator_id"),
    ("uncontrolled muscle without a tension",
     _edit_yaml("muscles.yaml", lambda d: _muscle(d, "flexor_digitorum").pop("fixed_tension_n")),
     "muscles.yaml", "muscles[15].fixed_tension_n", "a tension for a muscle with controlled: false"),
    ("unknown key in a muscle",
     _edit_yaml("muscles.yaml", lambda d: _muscle(d, "biceps").__setitem__("tension_max", 3)),
     "muscles.yaml", "muscles[6].tension_max", "one of the known keys"),
    ("negative f_min",
     _edit_yaml("robot.yaml", lambda d: d["hill"].__setitem__("f_min_n", -5.0)),
     "robot.yaml", "hill.f_min_n", "a number > 0.0"),
    ("home pose with six values",
     _edit_yaml("robot.yaml", lambda d: d.__setitem__("home_pose_rad", [0.0] * 6)),
     "robot.yaml", "home_pose_rad", "7 joint angles"),
    ("missing URDF",
     _edit_yaml("robot.yaml", lambda d: d["arm"].__setitem__("urdf", "nope.urdf")),
     "robot.yaml", "arm.urdf", "an existing URDF file"),
    ("unknown task frame",
     _edit_yaml("robot.yaml", lambda d: d["arm"].__setitem__("task_frame", "hnd")),
     "robot.yaml", "arm.task_frame", "a frame of the URDF"),
    ("muscles file is not YAML",
     lambda folder: (folder / "muscles.yaml").write_text("muscles: [ {name: a\n"),
     "muscles.yaml", "<file>", "valid YAML"),
    ("muscles file missing",
     lambda folder: (folder / "muscles.yaml").unlink(),
     "muscles.yaml", "<file>", "a readable YAML file"),
    ("muscles is not a list",
     _edit_yaml("muscles.yaml", lambda d: d.__setitem__("muscles", {"biceps": 1})),
     "muscles.yaml", "muscles", "a list"),
    ("missing required key",
     _edit_yaml("muscles.yaml", lambda d: _muscle(d, "biceps").pop("actuator_id")),
     "muscles.yaml", "muscles[6].actuator_id", "a value"),
    ("boolean where a number belongs",
     _edit_yaml("robot.yaml", lambda d: d["hill"].__setitem__("f1_n", True)),
     "robot.yaml", "hill.f1_n", "a number"),
    ("measured length range reversed",
     _edit_yaml("muscles.yaml", lambda d: _muscle(d, "biceps").__setitem__("length_range_m", [0.3, 0.2])),
     "muscles.yaml", "muscles[6].length_range_m", "l_min < l_max"),
    ("URDF that does not parse",
     lambda folder: (folder / "arm.urdf").write_text("<robot name='x'><link name='a'>"),
     "arm.urdf", "<file>", "a URDF Pinocchio can parse"),
    ("gravity vector of two numbers",
     _edit_yaml("robot.yaml", lambda d: d["arm"].__setitem__("gravity_m_s2", [0.0, -9.81])),
     "robot.yaml", "arm.gravity_m_s2", "a list of 3 items"),
    ("robot.yaml missing",
     lambda folder: (folder / "robot.yaml").unlink(),
     "robot.yaml", "<file>", "robot.yaml in the config folder"),
]


@pytest.mark.parametrize("mutate, file, key, expected", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_description_names_file_key_and_expectation(tmp_path, config_dir, mutate, file, key,
                                                        expected):
    folder = tmp_path / "robot"
    shutil.copytree(config_dir, folder)
    mutate(folder)
    with pytest.raises(ConfigError) as info:
        load_robot(folder)
    err = info.value
    message = str(err)
    assert err.file.endswith(file), message
    assert key in err.key, message
    assert expected in err.expected, message
    assert re.search(re.escape(file), message)
    if key == "<file>" and "valid YAML" in expected:  # a syntax error says where it is
        assert re.search(r"line \d+, column \d+", message), message


def test_wrong_length_q_names_expected_joints(robot):
    with pytest.raises(InputError, match="shoulder_p"):
        robot.arm.check_q(np.zeros(5))
