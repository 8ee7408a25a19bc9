"""A config folder's mistakes come all at once: every error of every file in one ConfigErrors, one
line each with file, line, key, expected and received; a renamed or removed key names its new
home (musculo_control/config/renamed.py), and every entry of that table is true of the schema.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import types
import typing
from pathlib import Path

import pytest
import yaml

from musculo_control.cli import main
from musculo_control.config.renamed import MOVED
from musculo_control.control.controller_config import ControllerConfig
from musculo_control.errors import ConfigError, ConfigErrors, ErrorCollector
from musculo_control.hardware.drivers import SECTIONS, HardwareRates
from musculo_control.hardware.potentiometer import PotentiometerReaderConfig
from musculo_control.hardware.tendon_driver import TendonDriverConfig
from musculo_control.loop.parts import load_parts
from musculo_control.model.robot import RobotConfig
from musculo_control.nodes.node_config import NODE_PARAMS, check_params_file
from musculo_control.safety.config import SafetyConfig
from musculo_control.sim.mock_arm import MockArmConfig
from musculo_control.sim.setup import ExperimentsConfig, check_run_files

#: (file, text in the shipped file, its replacement, the key the error names, what it says)
MISTAKES = [
    ("robot.yaml", "  operating_point:\n    pose: high_elbow\n",
     "  operating_point:\n    pose: high_elbow\n    activation_weight: 0.01\n",
     "poses.operating_point.activation_weight", "moved to controller.yaml qp.k"),
    ("robot.yaml", "  f1_n: 200.0 ", "  f1_n: lots ", "hill.f1_n", "a number"),
    ("controller.yaml", "  k: 0.01 ", "  k: -0.01 ", "qp.k", ">= 0.0"),
    ("controller.yaml", "\nqp:\n", "\nqp:\n  nulspace_weight: 0.1\n  q: 0.01\n",
     "qp.nulspace_weight", "one of the known keys"),
    ("hardware.yaml", "  sensor_rate_hz: 500.0 ", "  sensor_rate_hz: 0.0 ",
     "rates.sensor_rate_hz", "> 0.0"),
    ("muscles.yaml", "  - name: biceps ", "  - tension_max: 3\n    name: biceps ",
     "muscles[6].tension_max", "one of the known keys"),
    ("safety.yaml", "recovery_hold_s: 0.05 ", "recovery_hold: 0.05 ",
     "recovery_hold", "closest: 'recovery_hold_s'"),
]


@pytest.fixture()
def broken(tmp_path, config_dir) -> Path:
    """The shipped folder with every mistake of MISTAKES made."""
    folder = tmp_path / "old_arm"
    shutil.copytree(config_dir, folder)
    for file, old, new, _key, _says in MISTAKES:
        path = folder / file
        text = path.read_text()
        assert old in text, f"fixture out of date: {old!r} not in {file}"
        path.write_text(text.replace(old, new, 1))
    return folder


def _line_of(folder: Path, file: str, key: str) -> int:
    """The line of ``key``'s last part in ``file``, found by text (not by the parser's code)."""
    leaf = re.sub(r"\[\d+\]", "", key).rsplit(".", 1)[-1]
    lines = (folder / file).read_text().splitlines()
    hits = [i for i, line in enumerate(lines, 1) if re.match(rf"\s*(- )?{leaf}:", line)]
    if key == "qp.k":  # the QP's k, not daqp's k below it
        hits = hits[:1]
    assert len(hits) == 1, (file, key, hits)
    return hits[0]


#: What the mistakes also cause: the stray 'q' of controller.yaml, and safety.yaml's misspelt
#: key leaves the real one missing.
CONSEQUENCES = {"qp.q", "recovery_hold_s"}


def _check_every_mistake(err: ConfigError, folder: Path) -> None:
    assert isinstance(err, ConfigErrors), err
    by_key = {e.key: e for e in err.errors}
    assert set(by_key) == {m[3] for m in MISTAKES} | CONSEQUENCES, str(err)
    assert len(err.errors) == len(by_key)
    for file, _old, _new, key, says in MISTAKES:
        e = by_key[key]
        assert Path(e.file).name == file
        assert says in e.expected, str(e)
        assert e.where.startswith(f"line {_line_of(folder, file, key)}, column"), (key, e.where)
    lines = str(err).splitlines()
    assert lines[0] == f"{len(err.errors)} configuration errors:"
    for e, line in zip(err.errors, lines[1:]):  # one line each: file, line, key, expected, got
        assert e.file in line and e.where in line and e.key in line and e.expected in line
        assert "received" in line


def test_every_mistake_of_every_file_comes_in_one_error(broken):
    with pytest.raises(ConfigError) as info:
        load_parts(broken)
    _check_every_mistake(info.value, broken)


def test_the_loops_loader_and_a_run_report_them_all_too(broken, capsys):
    with pytest.raises(ConfigErrors) as info:
        load_parts(broken)
    _check_every_mistake(info.value, broken)
    code = main(["simulate", "nullspace", "--config", str(broken), "--out",
                 str(broken / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{len(MISTAKES) + len(CONSEQUENCES)} configuration errors:" in err
    assert all(key in err for _f, _o, _n, key, _s in MISTAKES)


def test_a_renamed_key_names_its_new_home_and_keeps_its_line(tmp_path, config_dir):
    folder = tmp_path / "arm"
    shutil.copytree(config_dir, folder)
    path = folder / "controller.yaml"
    path.write_text(path.read_text().replace("  k: 0.01 ", "  snapshot_max_age_s: 0.1\n  k: 0.01 ",
                                             1))
    with pytest.raises(ConfigError) as info:
        load_parts(folder)
    err = info.value
    assert not isinstance(err, ConfigErrors)  # the one mistake, as a plain error
    assert err.key == "qp.snapshot_max_age_s" and err.received == 0.1
    assert "moved to safety.yaml inputs.snapshot.hold_s" in str(err)
    assert err.where == f"line {_line_of(folder, 'controller.yaml', 'snapshot_max_age_s')}, column 3"


def test_a_missing_key_points_at_its_section(tmp_path, config_dir):
    folder = tmp_path / "arm"
    shutil.copytree(config_dir, folder)
    path = folder / "hardware.yaml"
    path.write_text(path.read_text().replace("  sensor_rate_hz: 500.0 ", "  # gone ", 1))
    with pytest.raises(ConfigError) as info:
        load_parts(folder)
    assert info.value.key == "rates.sensor_rate_hz" and info.value.received == "missing"
    assert info.value.where == f"in the section at line {_line_of(folder, 'hardware.yaml', 'rates')}, column 1"


# --- the table of moved keys ----------------------------------------------------------------

def _hardware(section: str) -> type:
    return {"rates": HardwareRates, "driver": TendonDriverConfig,
            "potentiometer_reader": PotentiometerReaderConfig}[section]


#: file -> its schema (hardware.yaml: per section)
SCHEMAS: dict[str, typing.Any] = {
    "robot.yaml": RobotConfig, "controller.yaml": ControllerConfig,
    "safety.yaml": SafetyConfig, "mock_arm.yaml": MockArmConfig,
    "experiments.yaml": ExperimentsConfig,
}


def _accepts(file: str, key: str) -> bool:
    """Whether the current schema of ``file`` has the dotted ``key`` (dataclass fields)."""
    parts = key.split(".")
    if file == "hardware.yaml":
        assert parts[0] in SECTIONS
        cls, parts = _hardware(parts[0]), parts[1:]
    elif file == "ros_params.yaml":
        cls, parts = NODE_PARAMS[parts[0]], parts[1:]
    else:
        cls = SCHEMAS[file]
    for i, part in enumerate(parts):
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if part not in fields:
            return False
        tp = typing.get_type_hints(cls)[part]
        if typing.get_origin(tp) in (typing.Union, types.UnionType):
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        if i < len(parts) - 1:
            if not dataclasses.is_dataclass(tp):
                return False
            cls = tp
    return True


@pytest.mark.parametrize("entry", MOVED, ids=lambda m: f"{m.file}:{m.key}")
def test_every_moved_key_is_gone_and_its_new_home_exists(entry):
    # the driver's floor is a field the loader fills from robot.yaml, refused in the file
    if (entry.file, entry.key) != ("hardware.yaml", "driver.min_tension_n"):
        assert not _accepts(entry.file, entry.key), "the old key is still valid"
    if entry.new_key:
        assert _accepts(entry.new_file, entry.new_key), "the new key does not exist"
    else:
        assert entry.why, "a removed key says what replaced it"


def _put(data: dict, dotted: str, value) -> None:
    *path, last = dotted.split(".")
    for part in path:
        data = data.setdefault(part, {})
    data[last] = value


@pytest.mark.parametrize("entry", [m for m in MOVED if m.file != "ros_params.yaml"],
                         ids=lambda m: f"{m.file}:{m.key}")
def test_an_old_folders_moved_key_is_refused_naming_its_new_home(tmp_path, config_dir, entry):
    folder = tmp_path / "arm"
    shutil.copytree(config_dir, folder)
    path = folder / entry.file
    data = yaml.safe_load(path.read_text())
    _put(data, entry.key, 1.0)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    found = ErrorCollector()
    check_run_files(folder, {}, found)
    with pytest.raises(ConfigError) as info:
        found.raise_any()
    err = info.value
    assert err.key == entry.key and Path(err.file).name == entry.file, str(err)
    assert f"{entry.new_file} {entry.new_key}" in err.expected, str(err)
    assert err.where.startswith("line "), str(err)


@pytest.mark.parametrize("entry", [m for m in MOVED if m.file == "ros_params.yaml"],
                         ids=lambda m: m.key)
def test_an_old_parameter_file_is_refused_naming_the_new_home(tmp_path, entry):
    node, name = entry.key.split(".")
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({node: {"ros__parameters": {name: 1.0}}}))
    with pytest.raises(ConfigError) as info:
        check_params_file(path, node, NODE_PARAMS[node])
    err = info.value
    assert err.key == f"{node}.ros__parameters.{name}"
    says = f"moved to {entry.new_file} {entry.new_key}" if entry.new_key else "removed"
    assert says in err.expected and err.where == "line 3, column 5", str(err)


def _edit(folder: Path, file: str, old: str, new: str) -> None:
    path = folder / file
    text = path.read_text()
    assert old in text, f"fixture out of date: {old!r} not in {file}"
    path.write_text(text.replace(old, new, 1))


def _line_with(folder: Path, file: str, text: str) -> int:
    hits = [i for i, line in enumerate((folder / file).read_text().splitlines(), 1)
            if text in line]
    assert len(hits) == 1, (file, text, hits)
    return hits[0]


def test_checks_across_files_come_together_with_the_schemas_and_with_their_lines(
        tmp_path, config_dir):
    """Two via-points on links the URDF lacks, a home pose past a joint limit and a schema
    error in another file: one run names all four, each at its line."""
    folder = tmp_path / "arm"
    shutil.copytree(config_dir, folder)
    _edit(folder, "muscles.yaml", "{link: upper_arm_link, point_m: [-0.003,",
          "{link: upper_arm, point_m: [-0.003,")
    _edit(folder, "muscles.yaml", "{link: upper_arm_link, point_m: [-0.013,",
          "{link: uper_arm_link, point_m: [-0.013,")
    _edit(folder, "robot.yaml", "home_pose_rad: [-0.43, 0.48,", "home_pose_rad: [-9.0, 0.48,")
    _edit(folder, "hardware.yaml", "  sensor_rate_hz: 500.0 ", "  sensor_rate_hz: 0.0 ")
    with pytest.raises(ConfigErrors) as info:
        load_parts(folder)
    by_key = {e.key: e for e in info.value.errors}
    assert set(by_key) == {"rates.sensor_rate_hz", "home_pose_rad[0]",
                           "muscles[0].path[1].link", "muscles[1].path[1].link"}, str(info.value)
    assert by_key["muscles[0].path[1].link"].received == "upper_arm"
    assert by_key["muscles[1].path[1].link"].received == "uper_arm_link"
    for key, file, text in (("muscles[0].path[1].link", "muscles.yaml", "link: upper_arm,"),
                            ("muscles[1].path[1].link", "muscles.yaml", "link: uper_arm_link"),
                            ("home_pose_rad[0]", "robot.yaml", "home_pose_rad:")):
        e = by_key[key]
        assert Path(e.file).name == file
        assert e.where.startswith(f"line {_line_with(folder, file, text)}, column"), (key, e)


def test_an_experiments_mistakes_come_together_with_a_controller_schema_error(
        tmp_path, config_dir):
    """experiments.yaml's checks against the robot run although controller.yaml failed."""
    from musculo_control.sim.setup import Overrides, load_setup

    folder = tmp_path / "arm"
    shutil.copytree(config_dir, folder)
    _edit(folder, "experiments.yaml", "start_pose: high_elbow ", "start_pose: hi_elbow ")
    _edit(folder, "experiments.yaml", "drift_joint: shoulder_r ", "drift_joint: shoulder_q ")
    _edit(folder, "controller.yaml", "  k: 0.01 ", "  k: -0.01 ")
    with pytest.raises(ConfigErrors) as info:
        load_setup(folder, Overrides())
    by_key = {e.key: e for e in info.value.errors}
    assert set(by_key) == {"qp.k", "nullspace.start_pose", "nullspace.drift_joint"}, \
        str(info.value)
    for key, text in (("nullspace.start_pose", "start_pose: hi_elbow"),
                      ("nullspace.drift_joint", "drift_joint: shoulder_q")):
        assert by_key[key].where.startswith(
            f"line {_line_with(folder, 'experiments.yaml', text)}, column"), by_key[key]
