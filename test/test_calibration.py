"""Raw <-> SI conversions round-trip, follow the documented signs, and the hardware file is
checked against the robot with errors that name file, key and expectation."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from musculo_control.errors import ConfigError
from musculo_control.hardware.calibration import load_calibration


@pytest.fixture(scope="module")
def cal(robot, config_dir):
    return load_calibration(robot, config_dir / "hardware.yaml")


def test_potentiometer_round_trip(cal, robot):
    rng = np.random.default_rng(0)
    q = robot.arm.lower_rad + (robot.arm.upper_rad - robot.arm.lower_rad) * rng.random((20, 7))
    for qi in q:
        counts = cal.rad_to_counts(qi)
        np.testing.assert_allclose(cal.counts_to_rad(counts), qi, atol=1e-12)
        # quantised counts lose at most half a count
        err = np.abs(cal.counts_to_rad(np.rint(counts)) - qi)
        assert np.all(err <= 0.5 / cal.pot_counts_per_rad + 1e-12)
        assert np.all((counts >= 0) & (counts <= cal.pot_full_scale_counts))


def test_potentiometer_sign_and_offset(cal, robot):
    zero = cal.rad_to_counts(np.zeros(7))
    np.testing.assert_allclose(zero, cal.pot_offset_counts)
    up = cal.rad_to_counts(np.full(7, 0.01)) - zero
    np.testing.assert_allclose(np.sign(up), cal.pot_sign)
    for j, name in enumerate(robot.arm.joint_names):
        p = cal.potentiometers[name]
        assert cal.pot_offset_counts[j] == p.offset_counts and cal.pot_sign[j] == p.sign


def test_encoder_round_trip_and_reference(cal, robot):
    lengths_cal = robot.geometry.lengths_at(cal.calibration_pose_rad)
    # at the calibration pose the encoder reads its offset and decodes to the reference length
    np.testing.assert_allclose(cal.length_to_encoder(lengths_cal), cal.encoder_offset_counts,
                               atol=1e-6)
    np.testing.assert_allclose(cal.reference_length_m, lengths_cal)
    rng = np.random.default_rng(1)
    lengths = lengths_cal + rng.uniform(-0.05, 0.05, robot.n_muscles)
    np.testing.assert_allclose(cal.encoder_to_length(cal.length_to_encoder(lengths)), lengths,
                               atol=1e-12)
    # encoder_sign +1: counts grow as the tendon is wound in (the muscle shortens)
    shorter = cal.length_to_encoder(lengths_cal - 1e-3) - cal.length_to_encoder(lengths_cal)
    np.testing.assert_allclose(np.sign(shorter), cal.encoder_sign)
    np.testing.assert_allclose(np.abs(shorter), 1e-3 * cal.encoder_counts_per_m)
    # velocity: a count rate of a shortening tendon is a negative lengthening speed
    v = cal.encoder_rate_to_velocity(shorter / 1e-3)
    np.testing.assert_allclose(v, -1.0)


def test_counts_per_metre_from_winch(cal):
    t = cal.tendons[cal.actuator_ids[0]]
    assert t.encoder_counts_per_m == pytest.approx(
        t.encoder_counts_per_rev / (2 * np.pi * t.winch_radius_m))


def test_loadcell_and_driver_round_trip(cal, robot):
    f = np.linspace(0.0, 300.0, robot.n_muscles)
    np.testing.assert_allclose(cal.loadcell_to_n(cal.n_to_loadcell(f)), f, atol=1e-12)
    np.testing.assert_allclose(cal.driver_to_n(cal.n_to_driver(f)), f, atol=1e-12)
    np.testing.assert_allclose(cal.n_to_loadcell(np.zeros(robot.n_muscles)),
                               cal.loadcell_offset_counts)


def test_arrays_follow_the_muscles_file_order(robot, config_dir, tmp_path):
    """Per-actuator values land on the muscle whose actuator_id they name, whatever the order
    of the hardware file."""
    folder = _copy(config_dir, tmp_path)
    data = yaml.safe_load((folder / "hardware.yaml").read_text())
    data["calibration"]["tendons"].reverse()
    target = robot.actuator_ids[4]
    for t in data["calibration"]["tendons"]:
        if t["actuator_id"] == target:
            t["loadcell_offset_counts"] = 12345
    (folder / "hardware.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    c = load_calibration(robot, folder / "hardware.yaml")
    assert c.loadcell_offset_counts[4] == 12345
    assert np.count_nonzero(c.loadcell_offset_counts == 12345) == 1


def test_measured_reference_length_wins(robot, config_dir, tmp_path):
    folder = _copy(config_dir, tmp_path)
    data = yaml.safe_load((folder / "hardware.yaml").read_text())
    entry = next(t for t in data["calibration"]["tendons"]
                 if t["actuator_id"] == robot.actuator_ids[2])
    entry["reference_length_m"] = 0.4321
    (folder / "hardware.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    c = load_calibration(robot, folder / "hardware.yaml")
    assert c.reference_length_m[2] == 0.4321


def _copy(config_dir: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "arm"
    shutil.copytree(config_dir, folder)
    return folder


def _drop_tendon(d, robot_ids):
    d["calibration"]["tendons"] = [t for t in d["calibration"]["tendons"]
                                   if t["actuator_id"] != robot_ids[3]]


CASES = [
    ("unknown joint", lambda d, ids: d["calibration"]["potentiometers"][1].__setitem__(
        "joint", "shoulder_roll"), "calibration.potentiometers[1].joint", "a joint of the robot"),
    ("duplicate joint", lambda d, ids: d["calibration"]["potentiometers"][1].__setitem__(
        "joint", d["calibration"]["potentiometers"][0]["joint"]),
     "calibration.potentiometers[1].joint", "one calibration per joint"),
    ("missing joint", lambda d, ids: d["calibration"]["potentiometers"].pop(),
     "calibration.potentiometers", "a calibration for every joint"),
    ("unknown actuator", lambda d, ids: d["calibration"]["tendons"][0].__setitem__(
        "actuator_id", 999), "calibration.tendons[0].actuator_id", "an actuator_id of the muscles"),
    ("duplicate actuator", lambda d, ids: d["calibration"]["tendons"][1].__setitem__(
        "actuator_id", d["calibration"]["tendons"][0]["actuator_id"]),
     "calibration.tendons[1].actuator_id", "one calibration per actuator"),
    ("missing actuator", _drop_tendon, "calibration.tendons", "a calibration for every muscle"),
    ("bad sign", lambda d, ids: d["calibration"]["potentiometers"][0].__setitem__("sign", 2),
     "calibration.potentiometers[0].sign", "+1 or -1"),
    ("bad encoder sign", lambda d, ids: d["calibration"]["tendons"][2].__setitem__(
        "encoder_sign", 0), "calibration.tendons[2].encoder_sign", "+1 or -1"),
    ("unknown default", lambda d, ids: d["calibration"]["tendon_defaults"].__setitem__(
        "winch_radius", 0.01), "calibration.tendon_defaults.winch_radius", "one of the known keys"),
    ("typo in an entry", lambda d, ids: d["calibration"]["tendons"][5].__setitem__(
        "loadcell_offset", 3), "calibration.tendons[5].loadcell_offset", "one of the known keys"),
    ("negative radius", lambda d, ids: d["calibration"]["tendon_defaults"].__setitem__(
        "winch_radius_m", -0.01), "calibration.tendons[0].winch_radius_m", "a number > 0"),
    ("joint range beyond the ADC", lambda d, ids: d["calibration"]["potentiometers"][0].__setitem__(
        "offset_counts", 10), "calibration.potentiometers[0]", "inside the ADC"),
    ("short calibration pose", lambda d, ids: d["calibration"].__setitem__(
        "calibration_pose_rad", [0.0, 0.0]), "calibration.calibration_pose_rad", "7 joint angles"),
    ("calibration pose outside limits", lambda d, ids: d["calibration"].__setitem__(
        "calibration_pose_rad", [9.0] * 7), "calibration.calibration_pose_rad",
     "inside the joint limits"),
    ("missing section", lambda d, ids: d.pop("calibration"), "calibration",
     "a top-level mapping with key 'calibration'"),
]


@pytest.mark.parametrize("label,change,key,expected", CASES, ids=[c[0] for c in CASES])
def test_bad_hardware_file_names_file_key_and_expectation(robot, config_dir, tmp_path, label,
                                                          change, key, expected):
    folder = _copy(config_dir, tmp_path)
    path = folder / "hardware.yaml"
    data = yaml.safe_load(path.read_text())
    change(data, robot.actuator_ids)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ConfigError) as info:
        load_calibration(robot, path)
    err = info.value
    assert err.file.endswith("hardware.yaml")
    assert err.key == key, str(err)
    assert expected in err.expected, str(err)
