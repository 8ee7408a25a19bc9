"""``musculo init``: a runnable config folder from an MJCF alone.

On the shipped planar arm's MJCF and on the small feature models of test/mjcf/ (a coupled joint
pair, a two-hinge body, joint-less chains, wrapping tendons): the folder is written, loads as
every command loads it, documents every key it writes, and the controller it describes reaches
a hand goal on the mock arm with no file edited.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml

from musculo_control.cli import main
from musculo_control.commands.init import validate
from musculo_control.config.parser import load
from musculo_control.control.controller_config import load_controller_config
from musculo_control.errors import ConfigError
from musculo_control.model.robot import load_robot
from musculo_control.paths import config_root
from musculo_control.safety.config import SafetyConfig
from musculo_control.sim.experiments import run_experiment
from musculo_control.sim.mock_arm import MockArmConfig
from musculo_control.sim.scaffold import write_config
from musculo_control.sim.setup import ExperimentsConfig, Overrides, load_setup

MODELS = Path(__file__).parent / "mjcf"
SOURCES = {name: MODELS / f"{name}.xml" for name in
           ("coupled_pair", "two_hinge_body", "jointless_chain", "wrapping_tendon")}
SOURCES["planar_arm"] = config_root() / "planar_arm" / "arm.xml"


@pytest.fixture(scope="module", params=sorted(SOURCES))
def folder(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "config"
    write_config(SOURCES[request.param], out, move_m=0.1)
    return out


def test_the_folder_loads_as_the_commands_load_it(folder):
    setup = validate(folder)
    robot = setup.robot
    assert robot.n_muscles >= 4
    assert "trajectory" in setup.experiments.configured()
    for name in ("hardware.yaml", "bench.yaml", "mapping.yaml", "ros_params.yaml",
                 "trajectories/reach_10cm.yaml"):
        assert (folder / name).is_file(), name


def _docs(cls: type, value: object) -> set[str]:
    """The documentation of every field of a config dataclass, nested sections included."""
    out = set()
    for f in dataclasses.fields(cls):
        if f.metadata.get("doc"):
            out.add(" ".join(str(f.metadata["doc"]).split()))
        inner = getattr(value, f.name)
        items = inner if isinstance(inner, tuple) else (inner,)
        for item in items:
            if dataclasses.is_dataclass(item) and not isinstance(item, type):
                out |= _docs(type(item), item)
    return out


def test_every_written_key_is_documented(folder):
    """Every field's documentation (units included) stands in the file as a comment."""
    robot = load_robot(folder)
    parts = {"robot.yaml": robot.config, "muscles.yaml": robot.muscles_config,
             "controller.yaml": load_controller_config(folder),
             "experiments.yaml": load(ExperimentsConfig, folder / "experiments.yaml"),
             "mock_arm.yaml": load(MockArmConfig, folder / "mock_arm.yaml"),
             "safety.yaml": load(SafetyConfig, folder / "safety.yaml")}
    for name, value in parts.items():
        comments = " ".join(line.split("#", 1)[1].strip()
                            for line in (folder / name).read_text().splitlines() if "#" in line)
        comments = " ".join(comments.split())
        for doc in _docs(type(value), value):
            assert doc in comments, f"{name}: {doc}"


def test_the_model_features_are_read_as_they_are(tmp_path):
    """Coupled joints are no coordinates; the tilted planar arm gets its in-plane rows; the
    two-hinge arm its three joints and rows; each task frame is the palm site."""
    cases = {"coupled_pair": (["shoulder", "elbow"], ["vx", "vz"]),
             "jointless_chain": (["shoulder", "elbow"], ["vx", "vz"]),
             "two_hinge_body": (["flex", "abduct", "elbow"], ["vx", "vy", "vz"]),
             "wrapping_tendon": (["shoulder", "elbow"], ["vx", "vz"])}
    for name, (joints, rows) in cases.items():
        out = tmp_path / name
        scaffold = write_config(SOURCES[name], out, move_m=0.1)
        robot = yaml.safe_load((out / "robot.yaml").read_text())
        controller = yaml.safe_load((out / "controller.yaml").read_text())
        assert robot["arm"]["joints"] == joints, name
        assert robot["arm"]["task_frame"] == "palm", name
        assert controller["task"]["rows"] == rows, name
        assert any("nullspace" in why for why in scaffold.switched_off), name
    tilted = yaml.safe_load((tmp_path / "jointless_chain" / "robot.yaml").read_text())
    assert tilted["poses"]["hand_axes"] == ["x", "z"]


def test_an_existing_folder_is_kept_unless_forced(tmp_path):
    write_config(SOURCES["planar_arm"], tmp_path)
    with pytest.raises(ConfigError) as info:
        write_config(SOURCES["planar_arm"], tmp_path)
    assert "--force" in info.value.expected
    write_config(SOURCES["planar_arm"], tmp_path, overwrite=True)


def test_init_command_prints_its_choices_and_the_validation(tmp_path, capsys):
    out = tmp_path / "arm"
    assert main(["init", str(SOURCES["coupled_pair"]), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "task frame 'palm'" in text
    assert "1 coupled" in text and "validation: every file loads" in text
    assert "switched off: nullspace" in text
    assert main(["init", str(SOURCES["coupled_pair"]), "--out", str(tmp_path / "other"),
                 "--task-frame", "nope"]) == 2
    assert "a frame of the MJCF" in capsys.readouterr().err


@pytest.mark.slow
def test_the_written_folder_reaches_a_hand_goal_on_the_mock(folder):
    """Experiment B as written (a 10 cm move from the home pose), shortened: the hand ends
    within 2 cm of the goal with no tick at minimum tension, no file edited."""
    setup = load_setup(folder, Overrides.parse(["experiments.trajectory.settle_s=0.5",
                                                "experiments.trajectory.move_s=1.5",
                                                "experiments.trajectory.hold_s=1.0"]))
    run = run_experiment(setup, "trajectory", "osc", progress=False)[0]
    assert run.metrics["start_held"], run.metrics
    assert run.metrics["unsafe_ticks"] == 0, run.metrics
    assert run.metrics["final_error_m"] < 0.02, run.metrics
    assert np.isfinite(run.metrics["mean_tracking_error_m"])
