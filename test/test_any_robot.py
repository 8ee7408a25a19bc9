"""Nothing in the code knows which robot it drives (issue 13): no name of the stand-in arm's
joints, links, muscles or poses appears as a string in the package, and the commands run on the
second shipped robot, a two-joint MJCF arm, saying what does not apply to it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from musculo_control import cli
from musculo_control.paths import config_root

PACKAGE = Path(__file__).resolve().parent.parent / "musculo_control"
PLANAR = config_root() / "planar_arm"


def _stand_in_names() -> set[str]:
    folder = config_root() / "musashi_left_arm"
    robot = yaml.safe_load((folder / "robot.yaml").read_text())
    muscles = yaml.safe_load((folder / "muscles.yaml").read_text())["muscles"]
    names = set(robot["arm"]["joints"]) | {m["name"] for m in muscles}
    names |= {p["name"] for p in robot["poses"]["named"]}
    names |= {vp["link"] for m in muscles for vp in m["path"]}
    return names - _config_keys(folder)


def _config_keys(folder: Path) -> set[str]:
    """Every mapping key of the folder's YAML files: a key may share a name with a link."""
    keys: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            keys.update(map(str, node))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in folder.glob("*.yaml"):
        walk(yaml.safe_load(path.read_text()))
    return keys


def test_no_stand_in_name_is_written_in_the_code():
    names = _stand_in_names()
    assert "shoulder_r" in names and "base_link" in names and "high_elbow" in names
    pattern = re.compile(r"""["']([A-Za-z_][A-Za-z0-9_]*)["']""")
    found = []
    for path in PACKAGE.rglob("*.py"):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            found += [f"{path.relative_to(PACKAGE)}:{lineno}: {m}"
                      for m in pattern.findall(line) if m in names]
    assert not found, found


def _run(*argv: str) -> int:
    return cli.main(list(argv))


def test_model_report_on_the_mjcf_arm(tmp_path, capsys):
    out = tmp_path / "model.json"
    assert _run("model-report", "--config", str(PLANAR), "--json", str(out)) == 0
    rep = json.loads(out.read_text())
    assert rep["muscle_geometry"] == "MuJoCo tendons of arm.xml" and rep["base_frame"] == "world"
    assert [m["f1_n"] for m in rep["muscles"]] == [900.0, 700.0, 600.0, 600.0, 500.0, 500.0]
    lo, hi = rep["muscles"][1]["moment_arm_range_m"][0]  # teres_major about the shoulder
    assert lo < hi < 0.0
    assert "changes sign" in capsys.readouterr().out


def test_operating_point_on_an_arm_without_a_sweep(tmp_path, capsys):
    out = tmp_path / "op.json"
    assert _run("operating-point", "--config", str(PLANAR), "--json", str(out)) == 0
    rep = json.loads(out.read_text())
    assert rep["sweep"] is None and rep["checks"] is None
    assert [p["name"] for p in rep["poses"]] == ["home", "reach_start"]
    assert "holds only" in capsys.readouterr().out


def test_simulate_and_report_on_the_mjcf_arm(tmp_path, capsys):
    short = ["--set", "experiments.disturbance.settle_s=0.3", "--set",
             "experiments.disturbance.push_s=0.3", "--set", "experiments.disturbance.hold_s=0.5",
             "--set", "experiments.disturbance.final_window_s=0.2", "--set",
             "experiments.trajectory.settle_s=0.2", "--set", "experiments.trajectory.hold_s=0.2"]
    assert _run("report", "--config", str(PLANAR), "--controllers", "osc", "--out",
                str(tmp_path), *short) == 0
    report = (tmp_path / "report.md").read_text()
    assert "| experiment | controller | simulated | target | verdict |\n" in report  # no paper
    assert "Not set up for this robot (no section in experiments.yaml): nullspace." in report
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert set(metrics) == {"disturbance", "trajectory"}
    assert metrics["trajectory"]["osc"]["mean_tracking_error_m"]["reach_start"] < 0.05
    capsys.readouterr()
    assert _run("simulate", "nullspace", "--config", str(PLANAR), "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "experiment 'nullspace'" in err and "['disturbance', 'trajectory']" in err


@pytest.mark.parametrize("key", ["experiments.disturbance.axis", "controller.task.rows"])
def test_the_stand_in_arm_still_names_what_the_paper_used(key):
    """Its values moved from code defaults into its own files, unchanged."""
    folder = config_root() / "musashi_left_arm"
    file, *path = key.split(".")
    data = yaml.safe_load((folder / f"{file}.yaml").read_text())
    for part in path:
        data = data[part]
    assert data == {"experiments.disturbance.axis": [0.0, -1.0, 0.0],
                    "controller.task.rows": ["vx", "vy", "vz", "wy", "wz"]}[key]
