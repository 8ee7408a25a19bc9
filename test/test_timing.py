"""Tick timing statistics on a fake clock (no wall-clock asserts)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from musculo_control.control.timing import (
    TIMING_LAYOUT,
    GcPauses,
    TickTimer,
    WindowStats,
    timing_record,
)
from musculo_control.errors import InputError


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
        gc.collect()
        count, longest = pauses.take()
        assert count >= 1 and longest >= 0.0
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
