"""The tendon driver is the last line of defence: whatever comes in, only finite tensions inside
[min, max] go out; bad input, silence and clock faults send every tendon to minimum tension with
a reason; changes are rate limited; measurements convert back to SI."""

from __future__ import annotations

import math

import numpy as np
import pytest
from graph_harness import config_copy
from hypothesis import given, settings
from hypothesis import strategies as st

from musculo_control.config.parser import load, parse
from musculo_control.errors import ConfigError
from musculo_control.hardware.calibration import load_calibration
from musculo_control.hardware.drivers import load_drivers
from musculo_control.hardware.tendon_driver import TendonDriver, TendonDriverConfig
from musculo_control.model.robot import load_robot
from musculo_control.streams import LateInputsConfig

DT = 0.002  # driver tick [s]


@pytest.fixture(scope="module")
def cal(robot, config_dir):
    return load_calibration(robot, config_dir / "hardware.yaml")


@pytest.fixture(scope="module")
def inputs(config_dir) -> LateInputsConfig:
    """safety.yaml's bounds on late inputs (the driver's watchdog is inputs.muscle_commands)."""
    return load(LateInputsConfig, config_dir / "safety.yaml", "inputs")


@pytest.fixture(scope="module")
def cfg(robot, config_dir):
    """The driver's limits as the loaders build them (the floor is robot.yaml hill.f_min_n)."""
    return load_drivers(robot, config_dir / "hardware.yaml").tendons.config


def _settled(driver, tension, t0=0.0):
    """Command ``tension`` and tick until the rate limit no longer binds; return the time."""
    t = t0
    span = driver.config.max_tension_n - driver.config.min_tension_n
    for _ in range(int(span / driver.config.rate_limit_n_s / DT) + 3):
        driver.command(tension, t)
        driver.output(t)
        t += DT
    return t


def test_good_command_passes_through_in_driver_units(robot, cal, cfg, inputs):
    driver = TendonDriver(cal, cfg, inputs.muscle_commands)
    f = np.linspace(10.0, 200.0, robot.n_muscles)
    t = _settled(driver, f)
    driver.command(f, t)
    out = driver.output(t)
    assert out.ok and not np.any(out.limited)
    np.testing.assert_allclose(out.tension_n, f)
    np.testing.assert_allclose(out.units, cal.n_to_driver(f))
    np.testing.assert_allclose(cal.driver_to_n(out.units), f)


def test_clamps_to_min_and_max(robot, cal, cfg, inputs):
    driver = TendonDriver(cal, cfg, inputs.muscle_commands)
    f = np.full(robot.n_muscles, 100.0)
    f[0], f[1] = -50.0, 1e9
    t = _settled(driver, f)
    out = driver.output(t)
    assert out.ok
    assert out.tension_n[0] == cfg.min_tension_n and out.tension_n[1] == cfg.max_tension_n
    assert out.limited[0] and out.limited[1] and not out.limited[2]


def test_rate_limit_both_ways(robot, cal, cfg, inputs):
    driver = TendonDriver(cal, cfg, inputs.muscle_commands)
    m = robot.n_muscles
    driver.command(np.full(m, cfg.min_tension_n), 0.0)
    driver.output(0.0)
    high = np.full(m, cfg.max_tension_n)
    prev = cfg.min_tension_n
    for k in range(1, 6):
        driver.command(high, k * DT)
        out = driver.output(k * DT)
        assert out.ok and np.all(out.limited)
        np.testing.assert_allclose(out.tension_n, prev + cfg.rate_limit_n_s * DT)
        prev = out.tension_n[0]
    t = _settled(driver, high, 6 * DT)
    driver.command(np.full(m, cfg.min_tension_n), t)
    out = driver.output(t)  # one tick after the last one
    np.testing.assert_allclose(out.tension_n, cfg.max_tension_n - cfg.rate_limit_n_s * DT)


@pytest.mark.parametrize("bad", [
    "nan", "inf", "short", "long", "text", "none",
])
def test_bad_command_drops_every_tendon_to_minimum_at_once(robot, cal, cfg, inputs, bad):
    m = robot.n_muscles
    driver = TendonDriver(cal, cfg, inputs.muscle_commands)
    t = _settled(driver, np.full(m, 150.0))
    cmd: object = {
        "nan": np.where(np.arange(m) == 3, np.nan, 150.0),
        "inf": np.where(np.arange(m) == 3, -np.inf, 150.0),
        "short": np.full(m - 1, 150.0),
        "long": np.full(m + 1, 150.0),
        "text": ["a"] * m,
        "none": None,
    }[bad]
    faults = driver.command(cmd, t)  # type: ignore[arg-type]
    assert faults
    out = driver.output(t)
    assert not out.ok and out.faults[0] == faults[0]
    np.testing.assert_array_equal(out.tension_n, cfg.min_tension_n)
    # the fault holds until a good command arrives, then the tension ramps up again
    assert not driver.output(t + DT).ok
    driver.command(np.full(m, 150.0), t + 2 * DT)
    out = driver.output(t + 2 * DT)
    assert out.ok
    np.testing.assert_allclose(out.tension_n, cfg.min_tension_n + cfg.rate_limit_n_s * DT)


def test_late_commands_hold_the_last_one_then_the_watchdog_fires(robot, cal, cfg, inputs):
    """Commands late (the controller is late): the last command is held and the output says
    so; beyond the hold bound (the watchdog): every tendon at minimum tension."""
    m = robot.n_muscles
    bounds = inputs.muscle_commands
    driver = TendonDriver(cal, cfg, bounds)
    t = _settled(driver, np.full(m, 80.0))
    last = t - DT
    on_time = driver.output(last + 0.9 * bounds.late_s)
    assert on_time.ok and not on_time.late
    late = driver.output(last + 0.5 * (bounds.late_s + bounds.hold_s))
    assert late.ok and late.late and "last command" in late.late[0]
    np.testing.assert_allclose(late.tension_n, 80.0)
    out = driver.output(last + 1.1 * bounds.hold_s)
    assert not out.ok and "last command" in out.faults[0] and not out.late
    np.testing.assert_array_equal(out.tension_n, cfg.min_tension_n)


def test_late_tendon_states_hold_then_stale_ones_mean_minimum_tension(robot, cal, cfg, inputs):
    """The arm's tendon states late: the command goes on, reported; stale: minimum tension."""
    m = robot.n_muscles
    driver = TendonDriver(cal, cfg, inputs.muscle_commands, inputs.tendon_state)
    enc = cal.length_to_encoder(cal.reference_length_m)
    cell = cal.n_to_loadcell(np.full(m, 80.0))
    assert "no tendon state" in driver.output(0.0).faults[-1]
    t = 0.0
    for _ in range(int(0.1 / DT)):
        driver.read(enc, cell, t)
        driver.command(np.full(m, 80.0), t)
        assert driver.output(t).ok
        t += DT
    read_at = t - DT
    bounds = inputs.tendon_state
    for age, ok, late in ((0.5 * (bounds.late_s + bounds.hold_s), True, True),
                          (1.1 * bounds.hold_s, False, False)):
        driver.command(np.full(m, 80.0), read_at + age)
        out = driver.output(read_at + age)
        assert out.ok == ok and bool(out.late) == late
        assert "tendon state" in (out.late or out.faults)[-1]


def test_no_command_yet_means_minimum_tension(robot, cal, cfg, inputs):
    out = TendonDriver(cal, cfg, inputs.muscle_commands).output(0.0)
    assert out.faults == ("tendon driver: no command yet",)
    np.testing.assert_array_equal(out.tension_n, cfg.min_tension_n)


def test_clock_going_backwards_is_a_fault(robot, cal, cfg, inputs):
    driver = TendonDriver(cal, cfg, inputs.muscle_commands)
    t = _settled(driver, np.full(robot.n_muscles, 80.0))
    out = driver.output(t - 1.0)
    assert not out.ok and "before the previous" in out.faults[0]
    assert not driver.output(math.nan).ok


_any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)
_command = st.one_of(
    st.lists(_any_float, min_size=18, max_size=18),
    st.lists(_any_float, min_size=0, max_size=25),
    st.lists(st.floats(-1e12, 1e12), min_size=18, max_size=18),
    st.none(),
    st.text(max_size=3),
)
_step = st.tuples(_command, st.floats(-0.01, 0.2), st.booleans(),
                  st.one_of(st.floats(-0.01, 0.2), st.just(math.nan), st.just(math.inf)))


@settings(max_examples=300, deadline=None)
@given(st.lists(_step, min_size=1, max_size=30))
def test_property_nothing_outside_the_envelope_ever_leaves(robot, cal, cfg, inputs, steps):
    """For any sequence of commands (NaN, inf, huge, negative, wrong length, not numbers) at any
    times (also backwards or non-finite), every output is finite, inside [min, max], and its
    driver units are the tension times the calibration."""
    driver = TendonDriver(cal, cfg, inputs.muscle_commands)
    now = 0.0
    for cmd, dt, send, tick_jitter in steps:
        now += dt
        if send:
            driver.command(cmd, now)  # type: ignore[arg-type]
        out = driver.output(now + tick_jitter)
        assert out.tension_n.shape == (robot.n_muscles,)
        assert np.all(np.isfinite(out.tension_n)) and np.all(np.isfinite(out.units))
        assert np.all(out.tension_n >= cfg.min_tension_n)
        assert np.all(out.tension_n <= cfg.max_tension_n)
        np.testing.assert_allclose(out.units, cal.n_to_driver(out.tension_n))


def test_the_floor_is_the_robots_minimum_tension_only(robot, config_dir, tmp_path):
    """robot.yaml hill.f_min_n is the one minimum tension: hardware.yaml alone does not give the
    driver a floor, and the loaders' driver follows a changed f_min_n."""
    with pytest.raises(ConfigError) as info:
        load(TendonDriverConfig, config_dir / "hardware.yaml", "driver")
    assert info.value.key == "driver.min_tension_n"
    changed = config_copy(config_dir, tmp_path / "cfg",
                          {"robot.yaml": {"hill.f_min_n": robot.hill.f_min_n + 2.0}})
    other = load_robot(changed)
    assert load_drivers(other).tendons.config.min_tension_n == robot.hill.f_min_n + 2.0


def test_config_rejects_min_above_max(config_dir):
    with pytest.raises(ConfigError) as info:
        parse(TendonDriverConfig, {"min_tension_n": 10.0, "max_tension_n": 5.0,
                                   "rate_limit_n_s": 100.0},
              "hardware.yaml", "driver")
    assert info.value.key == "driver.max_tension_n"


def test_read_converts_counts_to_length_velocity_and_tension(robot, cal, cfg, inputs):
    driver = TendonDriver(cal, cfg, inputs.muscle_commands)
    rng = np.random.default_rng(0)
    l0 = cal.reference_length_m + rng.uniform(-0.02, 0.02, robot.n_muscles)
    v = np.linspace(-0.1, 0.1, robot.n_muscles)  # lengthening speed [m/s]
    f = np.linspace(5.0, 250.0, robot.n_muscles)
    state = None
    for k in range(200):
        t = k * DT
        state = driver.read(cal.length_to_encoder(l0 + v * t), cal.n_to_loadcell(f), t)
        assert state.ok
    assert state is not None
    np.testing.assert_allclose(state.length_m, l0 + v * 199 * DT, atol=1e-12)
    np.testing.assert_allclose(state.velocity_m_s, v, atol=1e-6)
    np.testing.assert_allclose(state.tension_n, f, atol=1e-12)


def test_read_faults(robot, cal, cfg, inputs):
    driver = TendonDriver(cal, cfg, inputs.muscle_commands)
    m = robot.n_muscles
    enc, cell = cal.length_to_encoder(cal.reference_length_m), cal.n_to_loadcell(np.full(m, 9.0))
    good = driver.read(enc, cell, 0.0)
    bad_enc = enc.copy()
    bad_enc[2] = np.nan
    s = driver.read(bad_enc, cell, DT)
    assert any("encoder" in f and robot.muscle_names[2] in f for f in s.faults)
    assert s.length_m[2] == good.length_m[2]
    assert not driver.read(enc[:3], cell, 2 * DT).ok
    assert not driver.read(enc, cell, 0.5 * DT).ok  # stamp before the previous one
    assert not good._replace(faults=("x",)).ok
