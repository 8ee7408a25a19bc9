"""Tick timing of a periodic loop: when to tick (:class:`Schedule`), and how the ticks went
(period, jitter, compute time, overruns and GC pauses).

:class:`Schedule` decides, from explicit times, when a periodic job runs: on a drift-free grid
of deadlines while it keeps up; after a stall it runs once, counts the deadlines it missed as
skipped and starts a new grid from that tick, so a stall never bunches ticks together. The
node's tick loop (wall clock or simulated time) and the tests (a fake clock) use the same
object.

Pure bookkeeping with explicit times (the node passes ``time.perf_counter()``), so the same
code measures a ROS timer, a test's fake clock or a benchmark. A window collects ticks until
:meth:`TickTimer.summary` is called (the node does so at its report rate), which returns the
window's statistics and starts a new window.

- period: time between the starts of two consecutive ticks [s];
- jitter: period minus the nominal period [s] (positive = late); a timer whose next deadline
  is computed from the previous deadline, as rcl's is, does not drift, so jitter is the whole
  story of its timing;
- compute: time from the start of a tick to the end of its work [s];
- overrun: a tick whose period exceeded ``overrun_factor`` nominal periods (a missed tick).

:class:`GcPauses` measures Python's garbage-collector pauses through ``gc.callbacks``, the
other source of stalls in a Python control loop. :func:`divisor` checks that a rate falls on
the physics step grid of the mock arm (the runner and the mock hardware node).
"""

from __future__ import annotations

import gc
import math
import time
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.errors import ConfigError, InputError
from musculo_control.records import Field, RecordLayout

FloatArray = npt.NDArray[np.float64]


def divisor(rate_hz: float, physics_dt_s: float, file: str, key: str) -> int:
    """Physics steps per period of ``rate_hz``, which must divide the physics rate exactly."""
    ratio = 1.0 / (rate_hz * physics_dt_s)
    n = int(round(ratio))
    if n < 1 or abs(ratio - n) > 1e-9 * ratio:
        raise ConfigError(file, key, f"a rate that divides the physics rate "
                                     f"{1 / physics_dt_s:g} Hz", rate_hz)
    return n


#: Tolerance of a deadline [s] (rounding of float sums, far below any period).
_EPS_S = 1e-6


class Schedule:
    """Deadlines of one periodic job (see the module docstring).

    ``late_fraction``: a tick that starts more than this fraction of a period after its
    deadline is late: counted, and the grid restarts from it (``now + period``), so the next
    tick comes a whole period later instead of bunching behind it. Deadlines that passed
    entirely without a tick are counted as skipped.
    """

    def __init__(self, period_s: float, start_s: float, late_fraction: float = 0.25) -> None:
        if not (period_s > 0.0 and math.isfinite(period_s)):
            raise InputError("Schedule period_s", "a finite period > 0 [s]", period_s)
        if not 0.0 < late_fraction < 1.0:
            raise InputError("Schedule late_fraction", "a fraction in (0, 1)", late_fraction)
        self.period_s = float(period_s)
        self.next_s = float(start_s)  # the next deadline [s]
        self._late_s = late_fraction * self.period_s
        self.ticks = 0  # ticks run
        self.late = 0  # ticks that started late (the grid restarted from them)
        self.skipped = 0  # deadlines that passed without a tick

    def due(self, now_s: float) -> bool:
        """Whether the job runs at ``now_s``; if so, the next deadline is set.

        A deadline counts as reached within :data:`_EPS_S` (a timer of the ROS clock fires at
        the exact nanosecond that a deadline summed in floats may miss by a rounding)."""
        if not now_s >= self.next_s - _EPS_S:  # also refuses NaN
            return False
        lateness = now_s - self.next_s
        if lateness > self._late_s:
            self.late += 1
            self.skipped += int(lateness // self.period_s)
            self.next_s = now_s + self.period_s
        else:
            self.next_s += self.period_s
        self.ticks += 1
        return True

    def wait_s(self, now_s: float) -> float:
        """Time until the next deadline (0 when due) [s]."""
        return max(0.0, self.next_s - now_s)


class TimingSummary(NamedTuple):
    """Statistics of one window of ticks (times in seconds; NaN when the window is empty)."""

    ticks: int
    period_mean_s: float
    period_p50_s: float
    period_p99_s: float
    period_max_s: float
    jitter_p99_s: float  # 99th percentile of |period - nominal|
    jitter_max_s: float  # largest |period - nominal|
    compute_p50_s: float
    compute_p99_s: float
    compute_max_s: float
    overruns: int  # periods longer than overrun_factor x nominal
    gc_collections: int
    gc_pause_max_s: float


#: Layout of a :class:`TimingSummary` as a labelled Float64MultiArray record.
TIMING_LAYOUT = RecordLayout("tick_timing_v1", [Field(name, ()) for name in TimingSummary._fields])


def timing_record(summary: TimingSummary) -> dict[str, float]:
    """Field name -> value, for :data:`TIMING_LAYOUT`."""
    return {k: float(v) for k, v in summary._asdict().items()}


class GcPauses:
    """Counts garbage collections and their pause lengths through ``gc.callbacks``."""

    def __init__(self) -> None:
        self._start = 0.0
        self.collections = 0
        self.pause_max_s = 0.0
        self.pause_total_s = 0.0
        self._installed = False

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        elif phase == "stop":
            pause = time.perf_counter() - self._start
            self.collections += 1
            self.pause_total_s += pause
            self.pause_max_s = max(self.pause_max_s, pause)

    def install(self) -> GcPauses:
        if not self._installed:
            gc.callbacks.append(self._callback)
            self._installed = True
        return self

    def remove(self) -> None:
        if self._installed:
            gc.callbacks.remove(self._callback)
            self._installed = False

    def take(self) -> tuple[int, float]:
        """(collections, longest pause [s]) since the last call; resets both."""
        out = (self.collections, self.pause_max_s)
        self.collections, self.pause_max_s = 0, 0.0
        return out


class Percentiles(NamedTuple):
    """p50, p99 and max of a window of samples (NaN when empty)."""

    n: int
    p50: float
    p99: float
    max: float


class WindowStats:
    """Samples of one quantity (an input's age, say) until :meth:`take` summarises them."""

    def __init__(self, capacity: int = 4096) -> None:
        if capacity < 1:
            raise InputError("WindowStats capacity", "at least 1 sample", capacity)
        self._values = np.empty(capacity)
        self._n = 0

    def add(self, value: float) -> None:
        if self._n < len(self._values):
            self._values[self._n] = value
            self._n += 1

    def take(self) -> Percentiles:
        """The window's statistics; starts a new window."""
        v = self._values[:self._n]
        self._n = 0
        if not v.size:
            nan = float("nan")
            return Percentiles(0, nan, nan, nan)
        return Percentiles(int(v.size), float(np.percentile(v, 50)), float(np.percentile(v, 99)),
                           float(v.max()))


class TickTimer:
    """Measures one periodic loop (see the module docstring)."""

    def __init__(self, nominal_period_s: float, capacity: int = 4096,
                 overrun_factor: float = 1.5, gc_pauses: GcPauses | None = None) -> None:
        if not nominal_period_s > 0.0:
            raise InputError("TickTimer nominal_period_s", "a period > 0", nominal_period_s)
        if capacity < 1:
            raise InputError("TickTimer capacity", "at least 1 tick", capacity)
        self.nominal_period_s = float(nominal_period_s)
        self.overrun_factor = overrun_factor
        self.gc = gc_pauses
        self._period = np.empty(capacity)
        self._compute = np.empty(capacity)
        self._n_period = 0
        self._n_compute = 0
        self._start: float | None = None
        self._last_start: float | None = None
        self.total_ticks = 0
        self.last_period_s = float("nan")
        self.last_compute_s = float("nan")

    def start(self, now_s: float) -> None:
        """A tick begins at ``now_s``."""
        if self._last_start is not None:
            period = now_s - self._last_start
            self.last_period_s = period
            if self._n_period < len(self._period):
                self._period[self._n_period] = period
                self._n_period += 1
        self._last_start = now_s
        self._start = now_s
        self.total_ticks += 1

    def stop(self, now_s: float) -> float:
        """The tick's work ended at ``now_s``; returns its compute time [s]."""
        if self._start is None:
            return float("nan")
        compute = now_s - self._start
        self.last_compute_s = compute
        if self._n_compute < len(self._compute):
            self._compute[self._n_compute] = compute
            self._n_compute += 1
        self._start = None
        return compute

    @property
    def last_jitter_s(self) -> float:
        return self.last_period_s - self.nominal_period_s

    def summary(self) -> TimingSummary:
        """Statistics of the ticks since the previous call; starts a new window."""
        period = self._period[:self._n_period]
        compute = self._compute[:self._n_compute]
        nan = float("nan")

        def pct(a: FloatArray, q: float) -> float:
            return float(np.percentile(a, q)) if a.size else nan

        jitter = np.abs(period - self.nominal_period_s)
        gc_count, gc_max = self.gc.take() if self.gc is not None else (0, 0.0)
        out = TimingSummary(
            ticks=int(self._n_compute),
            period_mean_s=float(period.mean()) if period.size else nan,
            period_p50_s=pct(period, 50), period_p99_s=pct(period, 99),
            period_max_s=float(period.max()) if period.size else nan,
            jitter_p99_s=pct(jitter, 99),
            jitter_max_s=float(jitter.max()) if jitter.size else nan,
            compute_p50_s=pct(compute, 50), compute_p99_s=pct(compute, 99),
            compute_max_s=float(compute.max()) if compute.size else nan,
            overruns=int(np.count_nonzero(period > self.overrun_factor * self.nominal_period_s)),
            gc_collections=gc_count, gc_pause_max_s=gc_max,
        )
        self._n_period = 0
        self._n_compute = 0
        return out
