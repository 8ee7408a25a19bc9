"""``musculo calibrate`` on the mock arm: the offsets the mock hides from hardware.yaml are
found within the sensors' resolution, wrong signs are found, an arm away from the calibration
pose is refused before anything moves, no command exceeds the configured tension, and the
written file differs from the original only in the measured lists (with a backup on --write).

The oracle is the mock's own draw (``MockArm.drawn``: what it added to hardware.yaml), which the
calibrator never sees."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
import yaml

from musculo_control.cli import main
from musculo_control.errors import ConfigError
from musculo_control.hardware.calibration import Calibration, load_calibration
from musculo_control.hardware.calibration_file import calibration_text
from musculo_control.hardware.calibrator import (
    CalibrationProcedureConfig,
    CalibrationRefused,
    Calibrator,
    Phase,
)
from musculo_control.hardware.drivers import read_hardware
from musculo_control.sim.calibration_run import calibrate_on_mock
from musculo_control.sim.mock_arm import MockArm, load_mock_config

HIDDEN = {"potentiometer_offset_error_counts": 40.0, "encoder_offset_error_counts": 500.0,
          "loadcell_offset_error_counts": 50.0}


@pytest.fixture(scope="module")
def hardware(robot, config_dir):
    return read_hardware(config_dir / "hardware.yaml", robot.hill.f_min_n)


@pytest.fixture(scope="module")
def truth(robot, config_dir) -> Calibration:
    return load_calibration(robot, config_dir / "hardware.yaml")


def hiding_mock(robot, truth, config_dir, seed=3, **hidden) -> MockArm:
    cfg = load_mock_config(robot, config_dir / "mock_arm.yaml")
    sensors = dataclasses.replace(cfg.sensors, **{**HIDDEN, **hidden})
    return MockArm(robot, truth, dataclasses.replace(cfg, sensors=sensors), seed)


class Recording(Calibrator):
    """Keeps every command it gives (the safety property)."""

    def command_n(self):
        f = super().command_n()
        self.commands = [*getattr(self, "commands", []), f.copy()]
        return f


def run(robot, belief, hardware, mock, hold=None, config=None) -> Recording:
    c = Recording(robot, belief, config or hardware.calibration_procedure,
                  driver_max_tension_n=hardware.driver.max_tension_n)
    return calibrate_on_mock(mock, c, hardware.rates.sensor_rate_hz, hold)


@pytest.fixture(scope="module")
def calibrated(robot, truth, config_dir, hardware):
    mock = hiding_mock(robot, truth, config_dir)
    return mock, run(robot, truth, hardware, mock)


def test_hidden_offsets_are_found_within_resolution(calibrated, truth):
    mock, c = calibrated
    drawn = mock.drawn()
    result = c.result()
    assert c.phase is Phase.DONE
    # the mock hid tens to hundreds of counts ...
    assert np.abs(drawn["encoder_offset_error_counts"]).max() > 100
    # ... and each reading is quantised to a count: the mean of a recording is within half a
    # count of the truth (plus its noise over ~500 samples)
    np.testing.assert_allclose(result.pot_offset_counts,
                               truth.pot_offset_counts + drawn["potentiometer_offset_error_counts"],
                               atol=0.5)
    # (the mock's encoders have no noise: a reading is the truth rounded, at most half a count)
    np.testing.assert_allclose(result.encoder_offset_counts,
                               truth.encoder_offset_counts + drawn["encoder_offset_error_counts"],
                               atol=0.5 + 1e-9)
    np.testing.assert_allclose(result.loadcell_offset_counts,
                               truth.loadcell_offset_counts + drawn["loadcell_offset_error_counts"],
                               atol=0.5 + 4 * 2.0 / np.sqrt(400))
    np.testing.assert_array_equal(result.pot_sign, truth.pot_sign)
    np.testing.assert_array_equal(result.encoder_sign, truth.encoder_sign)
    # the gain is only checked (counts per commanded newton), and the mock's is hardware.yaml's
    np.testing.assert_allclose(result.loadcell_counts_per_n, truth.loadcell_counts_per_n,
                               rtol=0.02)


def test_every_sign_is_checked_by_the_pulls(calibrated):
    result = calibrated[1].result()
    assert result.encoder_sign_checked.all(), result.warnings
    assert result.pot_sign_checked.all(), result.warnings
    assert np.all(result.shortening_m < 0)  # each pulled tendon shortened
    np.testing.assert_allclose(result.pot_sign_fit, 1.0, atol=0.5)


def test_no_command_above_the_configured_tension(calibrated, hardware):
    _, c = calibrated
    commands = np.array(c.commands)
    proc = hardware.calibration_procedure
    assert commands.max() <= proc.max_tension_n
    assert commands.min() >= 0.0
    # one tendon pulled at a time, the others taut or slack
    above = (commands > proc.taut_tension_n + 1e-9).sum(axis=1)
    assert above.max() == 1


def test_calibration_must_not_allow_more_than_its_limit(robot, truth, hardware):
    cfg = CalibrationProcedureConfig(taut_tension_n=5.0, pull_tension_n=60.0, max_tension_n=50.0)
    with pytest.raises(ConfigError, match="pull_tension_n.*at most max_tension_n"):
        Calibrator(robot, truth, cfg)
    with pytest.raises(ConfigError, match="max_tension_n.*driver"):
        Calibrator(robot, truth, CalibrationProcedureConfig(max_tension_n=2000.0),
                   driver_max_tension_n=1500.0)


def test_wrong_signs_are_measured(robot, truth, config_dir, hardware):
    cfg = truth.config
    flip_joints, flip_ids = ("shoulder_y", "wrist_p"), (3, 7)
    pots = tuple(dataclasses.replace(p, sign=-p.sign) if p.joint in flip_joints else p
                 for p in cfg.potentiometers)
    tendons = tuple(dataclasses.replace(t, encoder_sign=-t.encoder_sign)
                    if t.actuator_id in flip_ids else t for t in cfg.tendons)
    belief = Calibration(robot, dataclasses.replace(cfg, potentiometers=pots, tendons=tendons),
                         "belief.yaml")
    mock = hiding_mock(robot, truth, config_dir, seed=4)
    result = run(robot, belief, hardware, mock).result()
    np.testing.assert_array_equal(result.pot_sign, truth.pot_sign)
    np.testing.assert_array_equal(result.encoder_sign, truth.encoder_sign)
    text = "\n".join(result.warnings)
    for name in flip_joints:
        assert f"joint '{name}': sign" in text
    assert "tendon 3 ('deltoid_lateral'): encoder_sign" in text


def test_an_arm_away_from_the_pose_is_refused_before_it_moves(robot, truth, config_dir,
                                                              hardware):
    mock = hiding_mock(robot, truth, config_dir, potentiometer_offset_error_counts=0.0)
    hold = truth.calibration_pose_rad.copy()
    j = robot.arm.joint_names.index("elbow_p")
    hold[j] = -0.5
    c = run(robot, truth, hardware, mock, hold)
    assert c.phase is Phase.STOPPED
    with pytest.raises(CalibrationRefused) as info:
        c.result()
    assert len(info.value.problems) == 1
    message = info.value.problems[0]
    expected = truth.rad_to_counts(truth.calibration_pose_rad)[j]
    measured = truth.rad_to_counts(hold)[j]
    assert "joint 'elbow_p'" in message
    assert f"expected {expected:.0f} +- " in message
    assert f"measured {measured:.0f} counts = -0.500 rad" in message
    # nothing was pulled: the arm never left the hand that held it
    assert np.array(c.commands).max() <= hardware.calibration_procedure.taut_tension_n
    np.testing.assert_allclose(mock.q_rad, hold, atol=1e-9)


def test_a_loaded_tendon_is_refused(robot, truth, config_dir, hardware):
    mock = hiding_mock(robot, truth, config_dir, loadcell_offset_error_counts=0.0)
    # a load cell that reads 15 N at zero tension (a tendon caught on something)
    mock._loadcell_offset_error[4] = 300.0
    with pytest.raises(CalibrationRefused, match=r"tendon 5 \('infraspinatus'\): slack load "
                                                 r"cell expected 2021 \+- 200 counts .* "
                                                 r"measured 232\d"):
        run(robot, truth, hardware, mock).result()


def test_the_written_file_changes_only_the_measured_lists(robot, truth, config_dir, calibrated):
    text = (config_dir / "hardware.yaml").read_text()
    section = yaml.safe_load(text)["calibration"]
    result = calibrated[1].result()
    new = calibration_text(text, section, truth, result, "today", "hardware.yaml")
    old_lines, new_lines = text.splitlines(), new.splitlines()
    changed = [line for line in new_lines if line not in old_lines]
    assert changed[0] == "  # measured by `musculo calibrate` today"
    assert len(changed) == 1 + robot.arm.n_joints + robot.n_muscles
    assert all(line.startswith("    - {") for line in changed[1:])
    kept = [line for line in old_lines if line in new_lines]
    assert len(kept) == len(old_lines) - robot.arm.n_joints - robot.n_muscles
    written = yaml.safe_load(new)["calibration"]
    for j, entry in enumerate(written["potentiometers"]):
        assert entry["offset_counts"] == pytest.approx(result.pot_offset_counts[j], abs=0.05)
    assert written["tendon_defaults"] == section["tendon_defaults"]
    # writing again replaces the header instead of stacking it
    again = calibration_text(new, written, truth, result, "today", "hardware.yaml")
    assert again.count("# measured by") == 1


def test_a_file_without_the_block_is_refused(truth, calibrated):
    with pytest.raises(ConfigError, match="calibration: expected a block 'calibration:'"):
        calibration_text("rates: {}\n", {}, truth, calibrated[1].result(), "x", "hw.yaml")


def test_cli_write_keeps_a_backup(tmp_path, config_dir, capsys):
    folder = tmp_path / "arm"
    shutil.copytree(config_dir, folder)
    original = (folder / "hardware.yaml").read_text()
    code = main(["calibrate", "--sim", "--config", str(folder), "--write",
                 "--set", "mock_arm.sensors.loadcell_offset_error_counts=30"])
    out = capsys.readouterr().out
    assert code == 0, out
    backups = list(folder.glob("hardware.yaml.*.bak"))
    assert len(backups) == 1 and backups[0].read_text() == original
    assert (folder / "hardware.yaml").read_text() != original
    assert "wrote the measured calibration to" in out


def test_cli_refuses_and_writes_nothing(tmp_path, capsys):
    out_file = tmp_path / "hw.yaml"
    code = main(["calibrate", "--sim", "--out", str(out_file),
                 "--sim-pose", "0,0.4,0,0,0,0,0"])
    err = capsys.readouterr().err
    assert code == 1
    assert "refused, nothing written" in err and "joint 'shoulder_r'" in err
    assert not out_file.exists()


@pytest.mark.slow
def test_over_the_node_graph(tmp_path, config_dir, robot, truth):
    """The same procedure through the raw topics of the mock arm's node, hiding offsets (at
    half real time: a module whose commands stop for 50 ms holds 5 N on its own, and a loaded
    2-core machine can starve a process that long)."""
    pytest.importorskip("rclpy")
    import os
    import subprocess
    import sys

    from graph_harness import config_copy, domain_id

    hidden = {f"sensors.{k}": v for k, v in HIDDEN.items()}
    folder = config_copy(config_dir, tmp_path / "arm", {"mock_arm.yaml": {**hidden, "seed": 5}})
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain_id())}
    pose = "[" + ",".join(f"{q:.1f}" for q in truth.calibration_pose_rad) + "]"
    mock = subprocess.Popen(
        [sys.executable, "-m", "musculo_control.nodes.mock_hardware_node", "--ros-args",
         "-p", f"config_dir:={folder}", "-p", f"initial_pose_rad:={pose}",
         "-p", "real_time_factor:=0.5",
         # the mock applies hw/tendon_commands of one writer only: here the calibrator's
         "-p", "command_writer:=musculo_calibrate"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    out_file = tmp_path / "hw.yaml"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "musculo_control", "calibrate", "--config", str(folder),
             "--yes", "--timeout", "60", "--out", str(out_file)],
            env=env, capture_output=True, text=True, timeout=300)
    finally:
        mock.terminate()
        mock.wait(timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    # the oracle: the same seed's draw on the ROS-free mock
    cfg = load_mock_config(robot, folder / "mock_arm.yaml")
    drawn = MockArm(robot, truth, cfg).drawn()
    written = load_calibration(robot, out_file)
    np.testing.assert_allclose(written.pot_offset_counts,
                               truth.pot_offset_counts + drawn["potentiometer_offset_error_counts"],
                               atol=0.5)
    np.testing.assert_allclose(written.encoder_offset_counts,
                               truth.encoder_offset_counts + drawn["encoder_offset_error_counts"],
                               atol=0.6)
    np.testing.assert_allclose(written.loadcell_offset_counts,
                               truth.loadcell_offset_counts + drawn["loadcell_offset_error_counts"],
                               atol=1.0)
    np.testing.assert_array_equal(written.pot_sign, truth.pot_sign)
    np.testing.assert_array_equal(written.encoder_sign, truth.encoder_sign)


def test_an_entry_keeps_its_comment(truth, config_dir, calibrated):
    old = "    - {joint: shoulder_r, offset_counts: 1550, sign: -1}"
    text = (config_dir / "hardware.yaml").read_text()
    assert old in text
    text = text.replace(old, old + "   # mounted mirrored")
    section = yaml.safe_load(text)["calibration"]
    new = calibration_text(text, section, truth, calibrated[1].result(), "today", "hw.yaml")
    line = next(x for x in new.splitlines() if "joint: shoulder_r" in x)
    assert line.endswith("sign: -1}   # mounted mirrored")
