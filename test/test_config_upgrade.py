"""``musculo config upgrade``: config folders of an earlier release brought up to this one.

The oracle for the real case is the repository's own history: the shipped folders as they were
at release 0.1.0's last schema change (commit 0c543fe), which the current loaders refuse, must
come out of the upgrade loading, with every value a lab wrote kept and every line the upgrade
does not concern unchanged, and run an experiment.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from musculo_control.cli import main
from musculo_control.commands.config import checker, folder_errors, upgrade
from musculo_control.config.parser import load
from musculo_control.config.renamed import MOVED, Moved
from musculo_control.config.upgrade import ADDED_NOTE, key_path, plan
from musculo_control.paths import config_root, default_config_dir
from musculo_control.safety.config import SafetyConfig

REPO = Path(__file__).resolve().parents[1]
#: The last commit whose shipped folders had the old keys (before late inputs were graded).
OLD = "0c543fe"
ROBOTS = ("musashi_left_arm", "planar_arm")


@pytest.fixture(scope="module")
def old_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``config/`` of commit :data:`OLD`, from the repository's history."""
    try:
        tar = subprocess.run(["git", "-C", str(REPO), "archive", OLD, "config"],
                             check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"needs the repository's history (a full git clone): {exc}")
    out = tmp_path_factory.mktemp("old")
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(out, filter="data")
    return out / "config"


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("robot", ROBOTS)
def test_an_old_folder_is_refused_then_upgraded_and_loads(old_config: Path, tmp_path: Path,
                                                          robot: str) -> None:
    folder = _copy(old_config / robot, tmp_path / robot)
    refused = folder_errors(folder)
    assert any("moved to safety.yaml inputs" in str(e) for e in refused)

    up = upgrade(folder)
    assert up.remaining == []
    assert set(up.changed) == {"safety.yaml", "hardware.yaml"}
    assert {c.kind for c in up.changes} == {"moved"}
    up.write(tmp_path / "backup")
    assert folder_errors(folder) == []

    # the values the lab wrote, at their new keys; no late stage where it had none
    safety = load(SafetyConfig, folder / "safety.yaml")
    old = yaml.safe_load((old_config / robot / "safety.yaml").read_text())
    old_hw = yaml.safe_load((old_config / robot / "hardware.yaml").read_text())
    assert safety.inputs.joint_state.hold_s == old["joint_state_timeout_s"]
    assert safety.inputs.joint_state.late_s == safety.inputs.joint_state.hold_s
    assert safety.inputs.snapshot.late_s == old["snapshot_late_s"]
    assert safety.inputs.snapshot.hold_s == old["snapshot_timeout_s"]
    assert safety.inputs.muscle_commands.hold_s == old_hw["driver"]["watchdog_timeout_s"]

    # the comment travels with its key; every other line stays as written
    new_text = (folder / "safety.yaml").read_text()
    hold = next(line for line in new_text.splitlines() if "hold_s: 0.015" in line)
    assert "# newest joint sample older at a tick" in hold
    for name in up.changed:
        before = (old_config / robot / name).read_text().splitlines()
        after = (folder / name).read_text().splitlines()
        untouched = [line for line in before if not any(
            line.lstrip().startswith(m.key.rsplit(".", 1)[-1] + ":") for m in MOVED)
            and not line.lstrip().startswith("#")]
        assert [line for line in untouched if line not in after] == []

    # the backup is the folder as it was; a second upgrade has nothing to do
    assert (tmp_path / "backup" / "safety.yaml").read_text() == \
        (old_config / robot / "safety.yaml").read_text()
    assert upgrade(folder).changed == []


def test_check_writes_nothing_and_says_so_in_its_exit_code(old_config: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    folder = _copy(old_config / "planar_arm", tmp_path / "planar_arm")
    before = {p.name: p.read_text() for p in folder.iterdir() if p.is_file()}
    assert main(["config", "upgrade", str(folder), "--check"]) == 1
    out = capsys.readouterr().out
    assert "+++ b/safety.yaml" in out and "would change" in out
    assert {p.name: p.read_text() for p in folder.iterdir() if p.is_file()} == before
    assert not list(tmp_path.glob("planar_arm.backup-*"))

    assert main(["config", "upgrade", str(folder)]) == 0
    assert "upgraded and loads" in capsys.readouterr().out
    assert len(list(tmp_path.glob("planar_arm.backup-*"))) == 1
    assert main(["config", "upgrade", str(folder), "--check"]) == 0
    assert "nothing to upgrade" in capsys.readouterr().out


@pytest.mark.parametrize("robot", ROBOTS)
def test_the_shipped_folders_need_no_upgrade(robot: str) -> None:
    up = upgrade(config_root() / robot)
    assert up.changed == [] and up.remaining == []


def test_the_upgraded_old_folder_runs_an_experiment(old_config: Path, tmp_path: Path) -> None:
    from musculo_control.sim.experiments import run_experiment
    from musculo_control.sim.setup import Overrides, load_setup

    folder = _copy(old_config / "planar_arm", tmp_path / "planar_arm")
    upgrade(folder).write(None)
    setup = load_setup(folder, Overrides.parse(["experiments.disturbance.hold_s=1.0"]))
    (run,) = run_experiment(setup, "disturbance", "osc")
    assert run.metrics["unsafe_ticks"] == 0


# --- the edits, one shape at a time, on a copy of the shipped folder ------------------------

@pytest.fixture
def shipped(tmp_path: Path) -> Path:
    return _copy(default_config_dir(), tmp_path / "arm")


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_missing_section_comes_from_the_reference_with_its_comments(shipped: Path) -> None:
    safety = shipped / "safety.yaml"
    text = safety.read_text()
    start = text.index("\ntendons:\n") + 1
    end = text.index("\nconsistency:")
    safety.write_text(text[:start] + text[end + 1:])
    up = upgrade(shipped)
    assert [(c.kind, c.key) for c in up.changes] == [("added", "tendons")]
    assert up.remaining == []
    added = up.after["safety.yaml"]
    assert f"# {ADDED_NOTE}\ntendons:\n" in added
    assert text[start:end] in added  # the reference's lines, comments included
    assert added.index("tendons:") < added.index("\nconsistency:")  # the reference's order


def test_an_old_key_whose_new_home_is_set_is_dropped_and_named(shipped: Path) -> None:
    _replace(shipped / "hardware.yaml", "\ndriver:\n", "\ndriver:\n  watchdog_timeout_s: 0.05\n")
    up = upgrade(shipped)
    (change,) = up.changes
    assert change.kind == "dropped" and "0.05 dropped" in change.detail
    assert "inputs.muscle_commands.hold_s is already set (0.032)" in change.detail
    assert up.after["safety.yaml"] == up.before["safety.yaml"]
    assert "watchdog_timeout_s" not in up.after["hardware.yaml"]


def test_node_parameters_move_out_of_ros_params(shipped: Path) -> None:
    params = shipped / "ros_params.yaml"
    _replace(params, "potentiometer_node:\n  ros__parameters:\n",
             "potentiometer_node:\n  ros__parameters:\n    check_rate_hz: 100.0\n")
    assert any("check_rate_hz" in str(e) for e in folder_errors(shipped))
    up = upgrade(shipped)
    assert [(c.kind, c.key) for c in up.changes] == [("removed",
                                                      "potentiometer_node.check_rate_hz")]
    assert up.after["ros_params.yaml"] == up.before["ros_params.yaml"].replace(
        "    check_rate_hz: 100.0\n", "")
    assert up.remaining == []


def test_a_move_into_a_flow_mapping_and_a_key_in_one(shipped: Path, tmp_path: Path) -> None:
    text = "inputs:\n  joint_state: {late_s: 0.01}\nold: {a: 1}\n"
    work = tmp_path / "f"
    work.mkdir()
    (work / "safety.yaml").write_text(text)
    table = (Moved("safety.yaml", "joint_state_timeout_s", "safety.yaml",
                   "inputs.joint_state.hold_s"),
             Moved("safety.yaml", "old.a", "safety.yaml", "new_a"))
    (work / "safety.yaml").write_text("joint_state_timeout_s: 0.02  # mine\n" + text)
    up = plan(work, default_config_dir(), lambda texts: [], table)
    assert "joint_state: {late_s: 0.01, hold_s: 0.02}" in up.after["safety.yaml"]
    assert [c.kind for c in up.changes] == ["moved", "manual"]
    assert "old: {a: 1}" in up.after["safety.yaml"]


def test_every_table_entry_names_keys_the_upgrade_can_address() -> None:
    for entry in MOVED:
        path = key_path(entry.file, entry.key)
        assert all(path) and "[" not in entry.key
        if entry.file == "ros_params.yaml":
            assert path[1] == "ros__parameters"


def test_the_checker_names_the_folders_files(old_config: Path, tmp_path: Path) -> None:
    folder = _copy(old_config / "planar_arm", tmp_path / "planar_arm")
    errors = checker(folder)({})
    assert errors and all(Path(e.file).parent == folder for e in errors)
