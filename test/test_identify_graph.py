"""``musculo identify`` on bags recorded over the node graph, and ``musculo simulate
--mock-overlay`` with what it writes: a mock the commands are not told about plays the robot
(the planar arm's robot with secrets of test_identify.py, written into a copy of the config
folder, since the graph's mock reads the folder's mock_arm.yaml); ``musculo experiment
trajectory --graph --sim-time`` records three moves (two to fit, one held out); the identified
mock is judged on the first recorded run's metrics and on the held-out joint angles."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from graph_harness import domain_id

from musculo_control import cli
from musculo_control.commands.simulate import setup_with_overlay
from musculo_control.paths import config_root
from musculo_control.sim.identify.recording import Recording
from musculo_control.sim.identify.windows import commands_complete, make_windows
from musculo_control.sim.setup import Overrides, load_setup

PLANAR = config_root() / "planar_arm"
#: mock_arm.yaml lines of the robot with secrets (the seed draws its own mass and via-point
#: errors; lag, joint damping and dry friction x1.5 of the configured)
SECRETS = {"seed: 0": "seed: 5",
           "time_constant_s: 0.02 ": "time_constant_s: 0.035 ",
           "joint_damping_nm_s_rad: [0.3, 0.2]": "joint_damping_nm_s_rad: [0.45, 0.3]",
           "joint_frictionloss_nm: [0.2, 0.1]": "joint_frictionloss_nm: [0.3, 0.15]"}
#: the fit's second run: another move, outward and up, so that the gravity torques differ
#: (one move alone left the forearm's mass and the dry friction trading off: fitted on it, 1 of
#: 9 recordings predicted the held-out move only 2.9x better than the default mock, the others
#: 6-50x)
OTHER_MOVE = ["--set", "experiments.trajectory.move_s=1.5",
              "--set", "experiments.trajectory.end_m=[0.45,0.0,-0.10]"]
#: the held-out run: a third move (shorter, inward)
HELD_OUT = ["--set", "experiments.trajectory.move_s=1.2",
            "--set", "experiments.trajectory.end_m=[0.30,0.0,-0.15]"]
METRICS = ("mean_tracking_error_m", "max_tracking_error_m", "final_error_m")
#: The identified mock's metrics (musculo simulate, ROS-free) off the recorded graph run's
#: [m]: the feature's bound, 0.5 cm. Measured in five runs of this test: mean, max and final
#: tracking error within 0.7, 2.2 and 0.7 mm (the default mock 2.8-3.1, 0.6-3.0 and 3.3-3.8 mm
#: off). The max is one sample's extreme of the stick-slip of the joints' dry friction during
#: the move, and the graph's own recordings of this one robot spread in it: 9.2-16.7 mm over
#: 14 (the identified mock 10.6-12.3 mm, the robot's true values on the runner 11.4 mm); the
#: 16.7 mm one was 5.6 mm off (doc/identify.md). Its bound is 0.8 cm, wider by the
#: recordings' spread, not by the fit's.
HAND_TOLERANCE_M = {"mean_tracking_error_m": 0.005, "final_error_m": 0.005,
                    "max_tracking_error_m": 0.008}


def _secret_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "robot"
    shutil.copytree(PLANAR, folder)
    mock = folder / "mock_arm.yaml"
    text = mock.read_text()
    for old, new in SECRETS.items():
        assert text.count(old) == 1, old  # the shipped file changed: update SECRETS
        text = text.replace(old, new)
    mock.write_text(text)
    return folder


def _record(folder: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    """One trajectory run of the robot over the graph, started (its own domain)."""
    cmd = [sys.executable, "-m", "musculo_control.cli", "experiment", "trajectory", "--graph",
           "--sim-time", "--controller", "osc", "--config", str(folder), "--out", str(out),
           *extra]
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain_id())}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)


def _recorded(run: subprocess.Popen[str], out: Path) -> tuple[Path, dict]:
    """The run's bag and metrics, once it ended."""
    said, _ = run.communicate(timeout=450)  # a graph run: 30-60 s, minutes beside busy loops
    assert run.returncode == 0, said[-4000:]
    runs = json.loads((out / "metrics.json").read_text())["runs"]
    assert len(runs) == 1 and "error" not in runs[0], runs
    return Path(runs[0]["bag"]), runs[0]["metrics"]


def _stop(run: subprocess.Popen[str]) -> None:
    """A run still going (the test failed) stopped as Ctrl-C stops it: its graph too."""
    if run.poll() is None:
        run.send_signal(signal.SIGINT)
        try:
            run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            run.kill()
            run.wait()


def _simulate(out: Path, *extra: str) -> dict:
    assert cli.main(["simulate", "trajectory", "--config", str(PLANAR), "--out", str(out),
                     *extra]) == 0
    metrics = json.loads((out / "trajectory_osc.json").read_text())["metrics"]
    return {name: metrics[name]["reach_start"] for name in METRICS}  # per start pose


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_mock_identified_from_graph_bags_reproduces_the_robots_run(tmp_path):
    """Measured (doc/identify.md, five runs): the recorded run's mean / max / final tracking
    error reproduced by the identified mock within 0.7 / 2.2 / 0.7 mm; on the held-out move
    the joint-angle error at 1 s 7.2-8.1 deg (default mock) against 0.2-0.7 deg (identified),
    10.7-35x. 83-101 s on a shared two-core machine. Beside two busy loops (the test at
    nice 19) the recorded run itself broke in 2 runs of 3 (36 and 52 mm max tracking error)
    and the test failed: doc/identify.md."""
    t0 = time.monotonic()
    robot = _secret_folder(tmp_path)
    # one recording after the other: three at once on a loaded two-core machine, the
    # command's recorder lost half the joint states and a fifth of the commands (windows
    # without them are not fitted, but a move with few left taught the fit little)
    got = []
    for name, extra in (("fit", []), ("other", OTHER_MOVE), ("held", HELD_OUT)):
        run = _record(robot, tmp_path / name, *extra)
        try:
            got.append(_recorded(run, tmp_path / name))
        finally:
            _stop(run)
    (bag, recorded), (other, _), (held, _) = got
    default = _simulate(tmp_path / "default")
    overlay = tmp_path / "fit.yaml"
    assert cli.main(["identify", str(bag), str(other), "--config", str(PLANAR),
                     "--out", str(overlay)]) == 0
    fitted = {k: v["fitted"] for k, v in
              json.loads(overlay.with_suffix(".json").read_text())["parameters"].items()}
    identified = _simulate(tmp_path / "identified", "--mock-overlay", str(overlay))
    report = tmp_path / "report"
    assert cli.main(["identify", "--report", "--overlay", str(overlay), str(held), "--config",
                     str(PLANAR), "--out", str(report)]) == 0
    rep = json.loads((report / "identify_report.json").read_text())
    print(f"fitted {fitted}")
    for name in METRICS:
        print(f"{name}: graph {recorded[name] * 1e3:.2f} mm, identified "
              f"{identified[name] * 1e3:.2f} mm, default {default[name] * 1e3:.2f} mm")
    print(f"held-out angle error at {rep['default mock']['horizons_s']} s: default "
          f"{rep['default mock']['joint_angle_rad']}, identified "
          f"{rep['identified mock']['joint_angle_rad']} rad; ratio {rep['angle_error_ratio']}")
    print(f"{time.monotonic() - t0:.0f} s")
    # the recorded run's metrics, by the mock the bags gave
    off = {n: (recorded[n], identified[n]) for n in METRICS
           if abs(recorded[n] - identified[n]) > HAND_TOLERANCE_M[n]}
    assert not off, off
    # which the default mock meets too (its mean and final error 2.8-3.8 mm off): closer than
    # it (5-13x measured) is what tells that the fit, not the bound, reproduced the run
    assert sum(abs(recorded[n] - identified[n]) for n in ("mean_tracking_error_m",
                                                         "final_error_m")) < \
        sum(abs(recorded[n] - default[n]) for n in ("mean_tracking_error_m", "final_error_m"))
    # the joint angles of a move the fit did not see, over 1 s open-loop: at most half the
    # default mock's error, the feature's bound (measured 10.7-35x; fitted on the first move
    # alone 2.9-50x over nine recordings, hence the second)
    assert rep["default mock"]["horizons_s"][-1] == 1.0
    assert rep["angle_error_ratio"][-1] >= 2.0, rep
    # what the bags told: the true lag 0.035 s (fitted 0.0336-0.0418 over thirteen runs, one
    # move or two) and the upper arm's mass x0.906 of the secret seed (0.893-0.920)
    assert fitted["actuator.time_constant_s"] == pytest.approx(0.035, rel=0.25)
    assert fitted["link_mass_scale[upper_arm]"] == pytest.approx(0.906, abs=0.03)


def _setup_args(overlay: Path, *sets: str) -> argparse.Namespace:
    return argparse.Namespace(config=PLANAR, overrides=list(sets), seed=None,
                              mock_overlay=overlay)


def test_an_overlay_is_merged_key_by_key_under_the_command_line(tmp_path):
    """The overlay's keys replace mock_arm.yaml's, the file's others stay; --set wins."""
    overlay = tmp_path / "fit.yaml"
    overlay.write_text("actuator:\n  time_constant_s: 0.035\n"
                       "physics:\n  joint_damping_nm_s_rad: [0.45, 0.3]\n"
                       "  link_mass_scale: [1, 0.9, 1.1]\nmodel_error:\n  enabled: false\n")
    base = load_setup(PLANAR, Overrides.parse([])).mock_config
    mock = setup_with_overlay(_setup_args(overlay)).mock_config
    assert mock.actuator.time_constant_s == 0.035
    assert mock.physics.joint_damping_nm_s_rad == (0.45, 0.3)
    assert mock.physics.link_mass_scale == (1.0, 0.9, 1.1)
    assert not mock.model_error.enabled
    # the rest of each section as the file has it
    assert mock.actuator.gear_ratio == base.actuator.gear_ratio
    assert mock.physics.joint_frictionloss_nm == base.physics.joint_frictionloss_nm
    mock = setup_with_overlay(_setup_args(
        overlay, "mock_arm.actuator.time_constant_s=0.05")).mock_config
    assert mock.actuator.time_constant_s == 0.05


def test_windows_over_commands_the_bag_lost_are_left_out():
    """A recorder that fell behind loses commands; a window over the gap, or past the last
    command, would replay an old one and is not made."""
    t = np.arange(0.0, 2.0, 0.002)  # joint samples at 500 Hz
    tc = np.arange(0.0, 2.0, 0.008)  # commands at 125 Hz
    lost = (tc > 0.9) & (tc < 0.95)  # six commands lost
    tc = tc[~lost & (tc < 1.6)]  # and none after 1.6 s
    rec = Recording("lossy", t, np.zeros((len(t), 2)), np.zeros((len(t), 2)),
                    np.zeros((len(t), 6)), tc, np.zeros((len(tc), 6)))
    windows = make_windows([rec], 0.3, 0.1, 0.05, lost_periods=1.5)
    spans = [(t[w.start], t[w.stop - 1]) for w in windows]
    assert spans and all(b < 0.9 or a > 0.95 for a, b in spans)  # none over the gap
    assert all(b <= 1.6 + 0.012 for _, b in spans)  # none past the last command
    assert len(spans) == 9  # starts 0.05-0.55 s before the gap, 1.05-1.25 s after it
    assert commands_complete(rec, 0.2, 0.5, 1.5) and not commands_complete(rec, 0.8, 1.1, 1.5)
    # the gap is seven periods: with a threshold of eight it is a late command, not a lost one
    assert commands_complete(rec, 0.8, 1.1, 8.0)
