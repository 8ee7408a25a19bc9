"""Minimum-tension episodes: the rules that sent the arm to its safe state, when, how long."""

from __future__ import annotations

import math

import yaml

from musculo_control.safety.episodes import EpisodeLog
from musculo_control.safety.rules import Finding
from musculo_control.safety.supervisor import SafetyReport
from musculo_control.safety.supervisor_state import SupervisorState

TICK = 0.008


def _report(t, state, faults=(), latched=()):
    return SafetyReport(t, state, tuple(Finding(r, r + " says why") for r in faults), (),
                        tuple(Finding(r, r + " says why") for r in latched))


def test_ticks_at_minimum_tension_group_into_episodes_with_their_rules():
    log = EpisodeLog()
    running, fault = SupervisorState.RUNNING, SupervisorState.FAULT
    plan = ([running] * 3 + [(fault, ("joint_state_stale",))] * 2
            + [SupervisorState.HOLDING] * 6 + [running] * 4 + [(fault, ("actuator_tracking",))]
            + [(SupervisorState.LATCHED, (), ("actuator_tracking",))] * 3)
    for k, step in enumerate(plan):
        state, *rest = (step,) if isinstance(step, SupervisorState) else step
        log.tick(k * TICK, _report(k * TICK, state, *rest))
    first, second = log.all()
    assert first.rules == ("joint_state_stale", "holding") and first.ticks == 8
    assert math.isclose(first.start_s, 3 * TICK) and math.isclose(first.duration_s, 8 * TICK)
    assert "joint_state_stale" in first.first
    assert second.rules == ("actuator_tracking",) and math.isnan(second.end_s)
    assert log.count == 2 and log.ticks == 12
    text = log.summary()
    assert "12 ticks in a stop in 2 episodes" in text and "still stopped" in text
    assert first.as_dict()["duration_s"] == round(8 * TICK, 4)
    # the recovery hold is named among the rules as plain text: the episode's dict dumps as
    # YAML (a str subclass would not) and JSON alike
    assert type(first.rules[1]) is str
    assert yaml.safe_load(yaml.safe_dump(first.as_dict()))["rules"] == list(first.rules)


def test_times_count_from_the_first_tick_where_the_clock_is_an_epoch():
    log = EpisodeLog(from_first_tick=True)
    t0 = 1.8e9
    log.tick(t0, _report(t0, SupervisorState.RUNNING))
    log.tick(t0 + 1.0, _report(t0 + 1.0, SupervisorState.FAULT, ("snapshot_stale",)))
    log.tick(t0 + 1.008, _report(t0 + 1.008, SupervisorState.RUNNING))
    (e,) = log.all()
    assert math.isclose(e.start_s, 1.0) and "at 1.000 s" in e.describe()
    log.reset()
    assert log.all() == [] and log.summary() == "never stopped"
