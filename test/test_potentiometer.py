"""Potentiometer reader: counts -> angle and filtered velocity; every fault is flagged with a
reason and a faulted joint keeps its last good angle."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from musculo_control.config.parser import load
from musculo_control.hardware.calibration import load_calibration
from musculo_control.hardware.potentiometer import (
    PotentiometerReader,
    PotentiometerReaderConfig,
)

DT = 0.002  # 500 Hz samples [s]


@pytest.fixture(scope="module")
def cal(robot, config_dir):
    return load_calibration(robot, config_dir / "hardware.yaml")


@pytest.fixture(scope="module")
def cfg(config_dir):
    return load(PotentiometerReaderConfig, config_dir / "hardware.yaml", "potentiometer_reader")


def _reader(robot, cal, cfg, **changes):
    return PotentiometerReader(cal, robot.arm.lower_rad, robot.arm.upper_rad,
                               replace(cfg, **changes))


def test_counts_to_angle_within_quantisation(robot, cal, cfg):
    reader = _reader(robot, cal, cfg)
    q = robot.home_pose_rad
    r = reader.update(np.rint(cal.rad_to_counts(q)), 0.0)
    assert r.ok and r.faults == ()
    assert np.all(np.abs(r.q_rad - q) <= 0.5 / cal.pot_counts_per_rad + 1e-12)
    np.testing.assert_array_equal(r.qd_rad_s, 0.0)


def test_velocity_of_a_ramp_converges_with_the_filter_time_constant(robot, cal, cfg):
    """A ramp switched on at t = 0: the filtered velocity reaches 1 - 1/e of the slope after one
    time constant 1 / (2 pi f_c) and the slope itself later (first-order low-pass)."""
    reader = _reader(robot, cal, cfg)
    slope = np.linspace(-0.5, 0.5, 7)  # [rad/s]
    q0 = robot.home_pose_rad
    tau = 1.0 / (2 * math.pi * cfg.velocity_cutoff_hz)
    reader.update(cal.rad_to_counts(q0), 0.0)
    t, at_tau = 0.0, None
    while t < 10 * tau:
        t += DT
        r = reader.update(cal.rad_to_counts(q0 + slope * t), t)
        if at_tau is None and t >= tau - 1e-12:
            at_tau = r.qd_rad_s
    np.testing.assert_allclose(r.qd_rad_s, slope, atol=1e-3)
    np.testing.assert_allclose(at_tau / np.where(slope == 0, 1, slope),
                               np.where(slope == 0, 0, 1 - math.exp(-1)), atol=0.06)


def test_velocity_filter_attenuates_quantisation_noise(robot, cal, cfg):
    rng = np.random.default_rng(0)
    reader = _reader(robot, cal, cfg)
    q0 = robot.home_pose_rad
    vel = []
    for k in range(2000):
        counts = np.rint(cal.rad_to_counts(q0) + rng.normal(0.0, 0.5, 7))
        vel.append(reader.update(counts, k * DT).qd_rad_s)
    raw_std = 0.5 * math.sqrt(2) / DT / cal.pot_counts_per_rad  # unfiltered difference noise
    assert np.all(np.std(vel[500:], axis=0) < 0.5 * raw_std)


def test_non_finite_count_keeps_last_good_angle(robot, cal, cfg):
    reader = _reader(robot, cal, cfg)
    q = robot.home_pose_rad
    good = reader.update(cal.rad_to_counts(q), 0.0)
    counts = cal.rad_to_counts(q + 0.1)
    counts[3] = np.nan
    r = reader.update(counts, DT)
    assert not r.ok and any("elbow_p" in f and "not finite" in f for f in r.faults)
    assert r.q_rad[3] == good.q_rad[3]
    np.testing.assert_allclose(np.delete(r.q_rad, 3), np.delete(q + 0.1, 3), atol=1e-12)
    assert np.all(np.isfinite(r.qd_rad_s))


def test_rail_counts_are_a_wiring_fault(robot, cal, cfg):
    reader = _reader(robot, cal, cfg)
    counts = cal.rad_to_counts(robot.home_pose_rad)
    counts[0] = 0.0
    counts[1] = cal.pot_full_scale_counts[1]
    r = reader.update(counts, 0.0)
    assert sum("ADC rail" in f for f in r.faults) == 2
    assert np.isnan(r.q_rad[0]) and np.isnan(r.q_rad[1])  # never had a good value


def test_angle_beyond_limits_is_a_fault(robot, cal, cfg):
    reader = _reader(robot, cal, cfg)
    q = robot.home_pose_rad.copy()
    q[6] = robot.arm.upper_rad[6] + cfg.limit_margin_rad + 0.05
    r = reader.update(cal.rad_to_counts(q), 0.0)
    assert len(r.faults) == 1 and "wrist_p" in r.faults[0] and "outside the limits" in r.faults[0]
    q[6] = robot.arm.upper_rad[6] + 0.5 * cfg.limit_margin_rad  # inside the margin: fine
    assert reader.update(cal.rad_to_counts(q), DT).ok


def test_wrong_shape_and_old_stamp_are_rejected(robot, cal, cfg):
    reader = _reader(robot, cal, cfg)
    first = reader.update(cal.rad_to_counts(robot.home_pose_rad), 1.0)
    r = reader.update(np.zeros(5), 1.1)
    assert not r.ok and "expected 7 counts" in r.faults[0]
    r = reader.update(cal.rad_to_counts(robot.home_pose_rad + 0.2), 1.0)
    assert not r.ok and "not after" in r.faults[0]
    np.testing.assert_array_equal(r.q_rad, first.q_rad)
    assert reader.update("junk", 1.2).faults  # type: ignore[arg-type]


def test_stale_input_is_reported_by_check(robot, cal, cfg):
    reader = _reader(robot, cal, cfg)
    assert reader.check(0.0, 0.02) == ("potentiometers: no sample yet",)
    reader.update(cal.rad_to_counts(robot.home_pose_rad), 0.0)
    assert reader.check(0.5 * 0.02, 0.02) == ()
    stale = reader.check(2.0 * 0.02, 0.02)
    assert len(stale) == 1 and "old" in stale[0]


def test_stuck_counts_are_a_fault_when_enabled(robot, cal, cfg):
    reader = _reader(robot, cal, cfg, stuck_timeout_s=0.1)
    counts = np.rint(cal.rad_to_counts(robot.home_pose_rad))
    t = 0.0
    faults: tuple[str, ...] = ()
    while t < 0.2:
        moving = counts.copy()
        moving[1:] += (round(t / DT) % 2)  # every joint but shoulder_p flickers one count
        faults = reader.update(moving, t).faults
        if t < 0.1 - 1e-9:
            assert faults == ()
        t += DT
    assert len(faults) == 1 and "shoulder_p" in faults[0] and "stuck" in faults[0]
    off = _reader(robot, cal, cfg, stuck_timeout_s=0.0)
    assert all(off.update(counts, k * DT).ok for k in range(200))
