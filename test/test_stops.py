"""Stops: hold, then descend, then minimum tension; a cut at once; escalation only; the stop
each rule calls in safety.yaml; the tendon driver on its own clock; a consumer's own pause is
not a late input."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from musculo_control.config.parser import load, parse
from musculo_control.errors import ConfigError
from musculo_control.hardware.calibration import load_calibration
from musculo_control.hardware.drivers import load_drivers
from musculo_control.hardware.tendon_driver import TendonDriver
from musculo_control.safety.config import load_safety_config
from musculo_control.safety.rules import FAULT, RULES, stops_markdown
from musculo_control.safety.stops import FAULT_RULES, StopConfig
from musculo_control.stopping import Stop, StopSequence
from musculo_control.streams import InputBounds, LateInputsConfig, OwnPause

F_MIN = 5.0
DT = 0.002  # driver tick [s]


def test_a_hold_keeps_the_tensions_then_descends_in_a_straight_line_to_the_minimum():
    seq = StopSequence(F_MIN, hold_s=0.5, descend_s=2.0)
    f0 = np.array([105.0, 5.0, 45.0])
    seq.engage(1.0, Stop.HOLD, f0)
    f0[:] = 0.0  # the sequence keeps its own copy
    for t in (1.0, 1.2, 1.499):
        np.testing.assert_array_equal(seq.tension(t), [105.0, 5.0, 45.0])
        assert seq.phase(t) == Stop.HOLD
    # halfway through the descend: halfway between where they were and the minimum
    np.testing.assert_allclose(seq.tension(1.5 + 1.0), [55.0, 5.0, 25.0])
    assert seq.phase(2.5) == Stop.DESCEND
    np.testing.assert_allclose(seq.tension(1.5 + 2.0), F_MIN)
    np.testing.assert_allclose(seq.tension(100.0), F_MIN)
    assert seq.phase(3.6) == Stop.CUT  # reached the minimum


def test_a_descend_starts_at_once_and_a_cut_is_the_minimum_at_once():
    f0 = np.array([205.0, 25.0])
    seq = StopSequence(F_MIN, 0.5, 2.0)
    seq.engage(0.0, Stop.DESCEND, f0)
    np.testing.assert_allclose(seq.tension(0.5), [155.0, 20.0])
    cut = StopSequence(F_MIN, 0.5, 2.0)
    cut.engage(0.0, Stop.CUT, f0)
    np.testing.assert_array_equal(cut.tension(0.0), [F_MIN, F_MIN])


def test_a_stop_escalates_from_the_tensions_in_force_and_never_softens():
    seq = StopSequence(F_MIN, 0.5, 2.0)
    seq.engage(0.0, Stop.HOLD, np.array([105.0]))
    seq.engage(0.1, Stop.HOLD, np.array([999.0]))  # the same stop again: nothing changes
    np.testing.assert_array_equal(seq.tension(0.2), [105.0])
    seq.engage(0.2, Stop.DESCEND, seq.tension(0.2))  # escalated: descends from 105 N now
    np.testing.assert_allclose(seq.tension(1.2), [55.0])
    seq.engage(1.2, Stop.HOLD, seq.tension(1.2))  # milder: ignored
    np.testing.assert_allclose(seq.tension(1.7), [30.0])
    seq.engage(1.7, Stop.CUT, seq.tension(1.7))
    np.testing.assert_array_equal(seq.tension(1.7), [F_MIN])
    seq.clear()
    assert not seq.active and seq.phase(2.0) is None
    with pytest.raises(RuntimeError, match="no stop"):
        seq.tension(2.0)


def test_categories_follow_iec_60204_1():
    assert [s.category for s in (Stop.HOLD, Stop.DESCEND, Stop.CUT)] == [2, 1, 0]
    assert Stop.named("descend") is Stop.DESCEND and Stop.CUT > Stop.DESCEND > Stop.HOLD


def test_every_fault_rule_names_a_stop_and_only_hazardous_tension_is_a_cut():
    stops = {r.name: r.stop for r in RULES if r.severity == FAULT}
    assert set(stops) == set(FAULT_RULES) and all(s in ("hold", "descend", "cut")
                                                  for s in stops.values())
    assert not any(r.stop for r in RULES if r.severity != FAULT)
    # input loss never drops the arm: it holds first
    for name in ("joint_state_stale", "tendon_state_stale", "snapshot_stale", "driver_silent",
                 "command_watchdog", "controller"):
        assert stops[name] == "hold", name
    assert stops["tendon_runaway"] == "cut" and stops["command_invalid"] == "cut"
    assert all(f"`{name}`" in stops_markdown() for name in stops)
    page = Path(__file__).resolve().parents[1] / "doc" / "safety.md"
    assert stops_markdown() in page.read_text(encoding="utf-8"), \
        "doc/safety.md: paste musculo_control.safety.rules.stops_markdown() again"


def test_safety_yaml_may_change_a_rules_stop_and_a_wrong_name_is_refused(tmp_path):
    cfg = parse(StopConfig, {"hold_s": 0.3, "rules": {"joint_state_stale": "cut"}}, "s.yaml",
                "stops")
    assert cfg.stop_of("joint_state_stale") is Stop.CUT
    assert cfg.stop_of("consistency") is Stop.DESCEND  # the default stands
    with pytest.raises(ConfigError) as err:
        parse(StopConfig, {"hold_s": -1.0, "rules": {"joint_stale": "cut",
                                                      "consistency": "drop"}}, "s.yaml", "stops")
    text = str(err.value)
    assert "stops.hold_s" in text and "stops.rules.joint_stale" in text
    assert "stops.rules.consistency" in text and "['hold', 'descend', 'cut']" in text


def test_a_safety_yaml_without_stops_loads_with_the_documented_defaults(robot, config_dir):
    driver = load_drivers(robot, config_dir / "hardware.yaml").tendons.config
    cfg = load_safety_config(config_dir, driver)
    assert cfg.stops == StopConfig() or cfg.stops.hold_s > 0.0


# -- a consumer's own pause -------------------------------------------------------------------
BOUNDS = InputBounds(late_s=0.015, hold_s=0.032)


def test_an_input_that_aged_only_with_its_consumers_pause_is_not_late():
    pause = OwnPause(0.015)
    t = 0.0
    for _ in range(10):  # ticks every 8 ms, the input on time
        t += 0.008
        pause.tick(t)
    stamp = t - 0.002
    t += 0.250  # the consumer was frozen for a quarter of a second
    assert pause.tick(t)
    assert pause.age_s(t, stamp, BOUNDS) == 0.0
    assert BOUNDS.grade(pause.age_s(t + 0.008, stamp, BOUNDS)) == 0  # on time 8 ms on
    # no fresh sample after the pause: late, then stale, counted from the resume
    assert BOUNDS.grade(pause.age_s(t + 0.02, stamp, BOUNDS)) == 1
    assert BOUNDS.grade(pause.age_s(t + 0.04, stamp, BOUNDS)) == 2
    # a sample newer than the resume is aged as it is
    assert pause.age_s(t + 0.01, t + 0.004, BOUNDS) == pytest.approx(0.006)


def test_recurring_pauses_cannot_hide_a_sensor_that_stopped():
    """A pause forgives only inputs that were on time before it: a sensor dead since 0.1 s is
    stale at the second pause's end however often the consumer pauses."""
    pause = OwnPause(0.015)
    stamp, t, ages = 0.1, 0.1, []
    pause.tick(t)
    for _ in range(20):
        t += 0.008
        pause.tick(t)
        ages.append(pause.age_s(t, stamp, BOUNDS))
        t += 0.017  # a pause after every tick
        pause.tick(t)
        ages.append(pause.age_s(t, stamp, BOUNDS))
    assert BOUNDS.grade(ages[3]) == 2 and all(BOUNDS.grade(a) == 2 for a in ages[3:])


def test_no_pause_without_a_gap():
    pause = OwnPause(0.015)
    assert not pause.tick(0.0) and not pause.tick(0.008) and not pause.tick(0.0229)
    assert pause.age_s(0.0229, 0.0, BOUNDS) == pytest.approx(0.0229)
    assert OwnPause().tick(0.0) is False and OwnPause().tick(1e9) is False


# -- the tendon driver on its own clock ---------------------------------------------------------
@pytest.fixture(scope="module")
def shipped(robot, config_dir):
    """(the shipped calibration, safety.yaml inputs): what the driver is built from."""
    return (load_calibration(robot, config_dir / "hardware.yaml"),
            load(LateInputsConfig, config_dir / "safety.yaml", "inputs"))


def _driver(robot, cal, config_dir, inputs):
    cfg = load_drivers(robot, config_dir / "hardware.yaml").tendons.config
    driver = TendonDriver(cal, cfg, inputs.muscle_commands)
    stops = StopConfig()
    driver.use_stops(stops.sequence(cfg.min_tension_n), silent=stops.stop_of("command_watchdog"),
                     bad=stops.stop_of("command_invalid"))
    driver.pause = OwnPause(inputs.own_pause_s)
    return driver, stops


def _run_until(driver, f, t_end, t=0.0):
    """Commands ``f`` every 8 ms and ticks every 2 ms until ``t_end``; the last output."""
    out = None
    while t < t_end - 1e-12:
        if round(t / DT) % 4 == 0:
            driver.command(f, t)
        out = driver.output(t)
        t += DT
    return out, t


def test_the_driver_holds_then_descends_when_the_controller_goes_silent(robot, shipped,
                                                                        config_dir):
    cal, inputs = shipped
    driver, stops = _driver(robot, cal, config_dir, inputs)
    f = np.linspace(30.0, 200.0, robot.n_muscles)
    out, t = _run_until(driver, f, 1.0)
    np.testing.assert_allclose(out.tension_n, f)
    last_command = t - DT - ((round((t - DT) / DT)) % 4) * DT
    hold_from = last_command + inputs.muscle_commands.hold_s
    samples = {}
    while t < hold_from + stops.hold_s + stops.descend_s + 0.1:
        samples[round(t, 3)] = driver.output(t)
        t += DT
    stopped = [k for k, o in samples.items() if not o.ok]
    assert stopped and stopped[0] <= hold_from + DT + 1e-9
    assert "last command" in samples[stopped[0]].faults[0]  # says what stopped
    # the hold: the last command, for hold_s
    mid_hold = samples[min(samples, key=lambda k: abs(k - (hold_from + 0.5 * stops.hold_s)))]
    np.testing.assert_allclose(mid_hold.tension_n, f)
    # the descend: halfway, halfway to the minimum
    k = min(samples, key=lambda k: abs(k - (hold_from + stops.hold_s + 0.5 * stops.descend_s)))
    np.testing.assert_allclose(samples[k].tension_n, 0.5 * (f + F_MIN), atol=0.01 * f.max())
    final = samples[max(samples)]
    np.testing.assert_allclose(final.tension_n, driver.config.min_tension_n)
    # the controller comes back: the driver ramps from where the stop left it
    driver.command(f, t)
    back = driver.output(t + DT)
    assert back.ok and np.any(back.tension_n < f) and np.any(back.limited)


def test_a_bad_command_is_a_cut_at_the_driver(robot, shipped, config_dir):
    cal, inputs = shipped
    driver, _ = _driver(robot, cal, config_dir, inputs)
    f = np.full(robot.n_muscles, 120.0)
    _, t = _run_until(driver, f, 0.5)
    bad = f.copy()
    bad[3] = math.nan
    driver.command(bad, t)
    out = driver.output(t)
    assert not out.ok and np.all(out.tension_n == driver.config.min_tension_n)


def test_the_drivers_own_pause_does_not_stop_the_arm(robot, shipped, config_dir):
    """Frozen for 100 ms (its process stopped), the driver's first tick after it finds its
    command 100 ms old: its own pause, so the command goes on until the controller's next one
    is due; without the pause rule it would have stopped."""
    cal, inputs = shipped
    driver, _ = _driver(robot, cal, config_dir, inputs)
    f = np.full(robot.n_muscles, 120.0)
    _, t = _run_until(driver, f, 0.5)
    t += 0.1
    out = driver.output(t)
    assert out.ok and not out.late, out.faults
    np.testing.assert_allclose(out.tension_n, f)
    plain = TendonDriver(cal, driver.config, inputs.muscle_commands)
    _, t = _run_until(plain, f, 0.5)
    assert not plain.output(t + 0.1).ok


def test_the_dynamics_stage_computes_its_snapshot_after_its_own_pause(config_dir):
    """Frozen with the controller's process for 100 ms, the 20 Hz dynamics stage's first tick
    after the pause still publishes a snapshot from the joint sample it had (on time before the
    pause); a joint stream that stopped is still stale one hold bound after the resume."""
    from musculo_control.hardware.potentiometer import PotentiometerReading
    from musculo_control.loop import build
    from musculo_control.loop.parts import load_parts

    parts = load_parts(config_dir)
    stage = build.dynamics_stage(parts)
    q = parts.robot.home_pose_rad
    period = 1.0 / parts.controller.loop.dynamics_rate_hz
    t = 1.0
    for _ in range(4):
        stage.receive_joints(PotentiometerReading(t - 0.002, q, 0.0 * q, ()))
        assert stage.tick(t) is not None
        t += period
    last = t - period
    # a sample taken just after the last tick, before the process froze for 100 ms
    stage.receive_joints(PotentiometerReading(last + 0.002, q, 0.0 * q, ()))
    resumed = last + 0.1
    assert stage.tick(resumed) is not None, stage.health.message
    # the stream really stopped: stale one hold bound after the resume, not before
    stage.receive_joints(PotentiometerReading(last + 0.004, q, 0.0 * q, ()))
    hold = parts.safety.inputs.joint_state.hold_s
    assert stage.tick(resumed + 1.5 * hold) is None and "stale" in stage.health.message
    plain = build.DynamicsStage(stage.estimator, parts.safety.inputs.joint_state)
    plain.receive_joints(PotentiometerReading(1.0, q, 0.0 * q, ()))
    assert plain.tick(1.1) is None  # without the pause rule: 100 ms old, no snapshot
