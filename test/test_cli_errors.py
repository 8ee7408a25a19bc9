"""No traceback for a user's mistake: each one below stops the command before any simulation
with exit status 2 and a sentence naming the option or file, key, line and column.

The list is issue 10's, tried as a new user would. A test fails when the simulation starts
(``run_experiment`` is replaced by a tripwire) or when a traceback reaches the terminal.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from musculo_control.cli import join_negative_values, main
from musculo_control.paths import default_config_dir
from musculo_control.sim.setup import Overrides, load_setup

Q_DES = "-0.43,0.48,-0.43,-1.8,0.68,0.5,0.4"


@pytest.fixture()
def no_simulation(monkeypatch):
    """Any experiment run is a failure: the mistake had to be caught before."""
    def tripwire(*args, **kwargs):
        raise AssertionError("a simulation started before the input was checked")

    for module in ("musculo_control.commands.simulate", "musculo_control.commands.report",
                   "musculo_control.commands.sweep"):
        monkeypatch.setattr(f"{module}.run_experiment", tripwire)


def _fails(capsys, argv: list[str], *words: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "error:" in err
    for w in words:
        assert w in err, err
    return err


@pytest.fixture()
def a_file(tmp_path) -> Path:
    path = tmp_path / "a_file"
    path.write_text("not a folder")
    return path


def _unwritable(tmp_path: Path) -> Path:
    if os.geteuid() == 0:  # root writes anywhere a permission bit would stop another user
        return Path("/proc/musculo-cannot-write-here/out")
    ro = tmp_path / "read_only"
    ro.mkdir()
    ro.chmod(0o500)
    return ro / "out"


def test_out_under_a_file(capsys, no_simulation, a_file):
    _fails(capsys, ["simulate", "disturbance", "--out", str(a_file / "out")], "--out",
           "is a file")


def test_out_unwritable(capsys, no_simulation, tmp_path):
    _fails(capsys, ["simulate", "nullspace", "--out", str(_unwritable(tmp_path))], "--out",
           "a writable folder")


def test_json_under_a_file(capsys, no_simulation, a_file, tmp_path):
    _fails(capsys, ["simulate", "disturbance", "--out", str(tmp_path / "out"),
                    "--json", str(a_file / "m.json")], "--json", "is a file")


def test_json_that_is_a_folder(capsys, no_simulation, tmp_path):
    _fails(capsys, ["simulate", "disturbance", "--out", str(tmp_path / "out"),
                    "--json", str(tmp_path)], "--json", "is a folder")


def test_report_out_under_a_file(capsys, no_simulation, a_file):
    _fails(capsys, ["report", "--out", str(a_file / "out")], "--out", "is a file")


def test_report_unknown_experiment_before_any_run(capsys, no_simulation, tmp_path):
    _fails(capsys, ["report", "--out", str(tmp_path), "--experiments", "disturbance,wobble"],
           "--experiments", "wobble")


@pytest.mark.parametrize("text", ["", ",", "disturbance,,nullspace", "nullspace,nullspace"])
def test_report_empty_or_repeated_experiments(capsys, no_simulation, tmp_path, text):
    _fails(capsys, ["report", "--out", str(tmp_path), "--experiments", text], "--experiments")


def test_report_unknown_controller(capsys, no_simulation, tmp_path):
    _fails(capsys, ["report", "--out", str(tmp_path), "--controllers", "osc,pid"],
           "--controllers", "pid")


def _broken_config(tmp_path: Path, file: str, old: str, new: str) -> Path:
    folder = tmp_path / "cfg"
    shutil.copytree(default_config_dir(), folder)
    path = folder / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return folder


def test_malformed_yaml_names_line_and_column(capsys, no_simulation, tmp_path):
    cfg = _broken_config(tmp_path, "experiments.yaml", "  settle_s: 1.0 ",
                         "  settle_s: [1.0 ")
    err = _fails(capsys, ["simulate", "nullspace", "--config", str(cfg),
                          "--out", str(tmp_path / "out")], "experiments.yaml", "line ",
                 "column ", "valid YAML")
    line = next(i for i, t in enumerate((cfg / "experiments.yaml").read_text().splitlines(), 1)
                if "settle_s: [1.0" in t)
    assert f"line {line}," in err or f"line {line + 1}," in err


def test_a_wrong_value_in_a_file_names_key_line_and_column(capsys, no_simulation, tmp_path):
    cfg = _broken_config(tmp_path, "experiments.yaml", "  push_s: 1.0 ", "  push_s: fast ")
    line = next(i for i, t in enumerate((cfg / "experiments.yaml").read_text().splitlines(), 1)
                if "push_s: fast" in t)
    _fails(capsys, ["simulate", "disturbance", "--config", str(cfg),
                    "--out", str(tmp_path / "out")], "disturbance.push_s",
           f"line {line}, column 11", "a number")


def test_a_wrong_value_on_the_command_line_says_so(capsys, no_simulation, tmp_path):
    _fails(capsys, ["simulate", "disturbance", "--out", str(tmp_path),
                    "--set", "experiments.disturbance.push_s=fast"],
           "disturbance.push_s (set on the command line)", "a number")


def test_exponent_notation_is_a_number():
    """YAML 1.1 (PyYAML) reads 1e-2 as a string; the project reads YAML 1.2 numbers."""
    setup = load_setup(default_config_dir(), Overrides.parse(["controller.qp.k=1e-2",
                                                              "controller.qp.r=3E-1"]))
    assert setup.controller_config.qp.k == 0.01
    assert setup.controller_config.qp.r == 0.3


def test_negative_seed_refused_before_any_run(capsys, no_simulation, tmp_path):
    _fails(capsys, ["simulate", "disturbance", "--out", str(tmp_path), "--seed", "-1"],
           "seed", ">= 0")


def test_sweep_checks_every_value_before_the_first_run(capsys, no_simulation, tmp_path):
    _fails(capsys, ["sweep", "nullspace", "--out", str(tmp_path),
                    "--param", "controller.qp.r=0.1,abc"], "qp.r", "a number")


def test_model_report_refuses_angles_outside_the_joint_limits(capsys):
    _fails(capsys, ["model-report", "--q", "-0.43,0.48,-0.43,-1.8,0.68,0.5,4"], "--q",
           "wrist_p", "joint limits")


def test_model_report_takes_a_list_that_starts_with_a_minus(capsys):
    assert join_negative_values(["model-report", "--q", Q_DES]) == ["model-report",
                                                                    f"--q={Q_DES}"]
    assert join_negative_values(["simulate", "nullspace", "--seed", "-1"])[-1] == "--seed=-1"
    assert join_negative_values(["--out", "-dir"]) == ["--out", "-dir"]
    assert main(["model-report", "--q", Q_DES]) == 0
    out = capsys.readouterr().out
    assert "q = -0.430" in out


def test_model_report_header_names_each_joint_once(capsys, robot):
    assert main(["model-report"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines()
                  if line.startswith("muscle"))
    words = header.split()
    for name in robot.arm.joint_names:
        assert words.count(name) == 1, header


def test_model_report_json_under_a_file(capsys, a_file):
    _fails(capsys, ["model-report", "--json", str(a_file / "r.json")], "--json")


def test_publish_without_a_report(capsys, tmp_path):
    _fails(capsys, ["publish", str(tmp_path / "nothing")], "results.json")


def test_experiment_refuses_bag_folders_that_exist_and_unknown_poses_before_any_graph(
        capsys, tmp_path, monkeypatch):
    def tripwire(*args, **kwargs):
        raise AssertionError("a graph started before the input was checked")

    monkeypatch.setattr("musculo_control.commands.experiment._with_mock_graph", tripwire)
    (tmp_path / "nullspace_osc" / "bag").mkdir(parents=True)
    _fails(capsys, ["experiment", "nullspace", "--graph", "--out", str(tmp_path)], "--out",
           "nullspace_osc")
    _fails(capsys, ["experiment", "trajectory", "--graph", "--pose", "B", "--out",
                    str(tmp_path)], "--pose", "trajectory_b")
    # what the graph's nodes would not see is refused, not ignored
    _fails(capsys, ["experiment", "trajectory", "--graph", "--seed", "3", "--set",
                    "mock_arm.actuator.time_constant_s=0.05", "--out", str(tmp_path / "o")],
           "--set / --seed", "mock_arm.seed=3", "mock_arm.actuator.time_constant_s")
    # the excitation tour: through the QP only
    _fails(capsys, ["experiment", "excitation", "--graph", "--controller", "joint-stiffness",
                    "--out", str(tmp_path / "o")], "--controller", "joint-stiffness")


def test_a_mock_overlay_missing_or_with_a_wrong_key_or_value_names_the_overlay(
        capsys, no_simulation, tmp_path):
    overlay = tmp_path / "fit.yaml"
    _fails(capsys, ["simulate", "trajectory", "--out", str(tmp_path / "out"),
                    "--mock-overlay", str(overlay)], "--mock-overlay", str(overlay),
           "No such file")
    # the loader's words for a key mock_arm.yaml does not know, and the overlay's line
    overlay.write_text("actuator:\n  time_constant_s: 0.03\nphysics:\n  joint_dampng: 0.4\n")
    _fails(capsys, ["simulate", "trajectory", "--out", str(tmp_path / "out"),
                    "--mock-overlay", str(overlay)], str(overlay), "physics.joint_dampng",
           "line 4", "known keys", "joint_damping_nm_s_rad")
    overlay.write_text("actuator:\n  time_constant_s: -0.03\n")
    err = _fails(capsys, ["simulate", "trajectory", "--out", str(tmp_path / "out"),
                          "--mock-overlay", str(overlay)], str(overlay),
                 "actuator.time_constant_s (line 2", "> 0")
    assert "mock_arm.yaml" not in err and "command line" not in err
