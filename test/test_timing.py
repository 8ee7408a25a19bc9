"""Tick timing statistics on a fake clock (no wall-clock asserts)."""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest

from musculo_control.errors import InputError
from musculo_control.loop.timing import (
    TIMING_LAYOUT,
    GcPauses,
    Schedule,
    TickTimer,
    WindowStats,
    timing_record,
)


def test_periods_jitter_compute_and_overruns_on_a_known_schedule():
    period = 0.008
    # starts: on time, one 2 ms late (period 10 ms, then 6 ms), one missed tick (16 ms)
    starts = [0.0, 0.008, 0.018, 0.024, 0.040, 0.048]
    computes = [0.001, 0.002, 0.001, 0.003, 0.001, 0.001]
    timer = TickTimer(period)
    for t, c in zip(starts, computes):
        timer.start(t)
        assert timer.stop(t + c) == pytest.approx(c)
    s = timer.summary()
    periods = np.diff(starts)
    assert s.ticks == 6
    assert s.period_max_s == pytest.approx(0.016)
    assert s.period_mean_s == pytest.approx(periods.mean())
    assert s.jitter_max_s == pytest.approx(0.008)
    assert s.compute_max_s == pytest.approx(0.003)
    assert s.compute_p50_s == pytest.approx(0.001)
    assert s.overruns == 1  # only the 16 ms period exceeds 1.5 x 8 ms
    assert timer.last_jitter_s == pytest.approx(0.0)
    # a new window starts empty
    empty = timer.summary()
    assert empty.ticks == 0 and np.isnan(empty.period_p50_s)


def test_the_window_stops_filling_at_capacity_instead_of_growing():
    timer = TickTimer(0.01, capacity=3)
    for k in range(10):
        timer.start(0.01 * k)
        timer.stop(0.01 * k + 0.001)
    s = timer.summary()
    assert s.ticks == 3 and timer.total_ticks == 10


def test_summary_packs_into_its_record():
    timer = TickTimer(0.01)
    timer.start(0.0)
    timer.stop(0.002)
    flat = TIMING_LAYOUT.pack(timing_record(timer.summary()))
    assert flat.shape == (TIMING_LAYOUT.length,)


def test_gc_pauses_are_counted():
    pauses = GcPauses().install()
    try:
        garbage = [[] for _ in range(20000)]
        for a, b in zip(garbage, garbage[1:]):  # cycles only the collector frees
            a.append(b)
            b.append(a)
        del garbage, a, b
        pauses.take()  # the automatic collections while building it (one may be a long one)
        t0 = time.perf_counter()
        gc.collect()
        elapsed = time.perf_counter() - t0
        count, longest = pauses.take()
        # the longest pause is a real, measured one: inside the collect call, not zero
        assert count >= 1 and 0.0 < longest <= elapsed
        assert pauses.take() == (0, 0.0)
    finally:
        pauses.remove()


def test_window_stats_percentiles():
    w = WindowStats(capacity=1000)
    for v in range(101):
        w.add(float(v))
    p = w.take()
    assert (p.n, p.p50, p.max) == (101, 50.0, 100.0)
    assert p.p99 == pytest.approx(99.0)
    assert w.take().n == 0


def test_bad_construction():
    with pytest.raises(InputError):
        TickTimer(0.0)
    with pytest.raises(InputError):
        WindowStats(0)


# -- the tick schedule --------------------------------------------------------------------------
def _run(schedule, wakes):
    """Wake at each of ``wakes`` (a fake clock); the times the job ran."""
    return [t for t in wakes if schedule.due(t)]


def test_a_punctual_loop_ticks_on_its_grid_without_drift():
    s = Schedule(0.008, 0.0)
    wakes = [0.008 * k + 0.0001 for k in range(1000)]  # every wake 0.1 ms after its deadline
    assert _run(s, wakes) == wakes
    assert s.late == 0 and s.skipped == 0 and s.next_s == pytest.approx(8.0)


def test_nothing_runs_before_the_deadline_or_twice_for_one_deadline():
    s = Schedule(0.008, 0.0)
    assert _run(s, [0.0, 0.001, 0.004, 0.0079, 0.008, 0.008, 0.0081]) == [0.0, 0.008]
    assert not s.due(float("nan"))


@pytest.mark.parametrize("stall_ms, skipped", [(12.0, 0), (20.0, 1), (45.0, 4)])
def test_after_a_stall_one_late_tick_runs_and_the_next_comes_a_period_later(stall_ms, skipped):
    s = Schedule(0.008, 0.0)
    assert s.due(0.0)
    stall = stall_ms * 1e-3
    # the loop wakes only at the end of the stall, then polls every 0.1 ms
    wakes = [stall + 1e-4 * k for k in range(400)]
    ran = _run(s, wakes)
    assert ran[0] == pytest.approx(stall)
    gaps = np.diff(ran)
    # no bunching: no two ticks closer than a period (a 12 ms stall used to give two ticks
    # 4 ms apart, a 20 ms stall two at once)
    assert gaps.min() >= 0.008 - 1e-4 - 1e-9  # a period, within the 0.1 ms poll
    assert s.late == 1 and s.skipped == skipped


def test_a_small_delay_keeps_the_grid():
    s = Schedule(0.008, 0.0)
    ran = _run(s, [0.0, 0.0095, 0.016, 0.024])  # 1.5 ms late: within a quarter period
    assert ran == [0.0, 0.0095, 0.016, 0.024] and s.late == 0


def test_a_schedule_refuses_a_bad_period():
    with pytest.raises(InputError):
        Schedule(0.0, 0.0)
    with pytest.raises(InputError):
        Schedule(0.01, 0.0, late_fraction=1.5)
