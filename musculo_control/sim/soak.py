"""The soak: the supervised closed loop for a long stretch of simulated time with random
reachable goals and random pushes, measuring what slowly goes wrong.

The schedule of goals, pushes and rests is :mod:`musculo_control.sim.soak_schedule`.

Figures (:class:`SoakReport`):

- memory: Python heap traced by ``tracemalloc`` after a warm-up, sampled every
  ``memory_every_s``; growth and its least-squares slope, and the largest growing allocation
  sites if any;
- drift at rest: the hand at the end of each rest (same goal every time) against the first
  rest, the hand's creep within the rest window, and the trend of the rest error over time;
- tick accounting: events of each kind the runner ran against what its step count requires,
  and control ticks seen by the observer;
- safety: ticks not in normal control (false alarms: nothing is injected), warnings by rule,
  the largest command and non-finite commands;
- speed: wall time, real-time factor, controller compute time percentiles.

Everything the observer keeps is preallocated before the memory baseline, so the figures
measure the loop, not the measurement.
"""
from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.safety.supervisor_state import SupervisorState
from musculo_control.sim.rig import Rig
from musculo_control.sim.runner import LoopState
from musculo_control.sim.setup import Setup, start_pose
from musculo_control.sim.soak_schedule import SoakConfig, SoakSchedule

FloatArray = npt.NDArray[np.float64]


@dataclass
class SoakReport:
    """The soak's figures (see the module docstring)."""

    simulated_s: float
    wall_s: float
    figures: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (the keys ``musculo soak --json`` writes)."""
        return {"simulated_s": self.simulated_s, "wall_s": round(self.wall_s, 2),
                "realtime_factor": round(self.simulated_s / max(self.wall_s, 1e-9), 2),
                **self.figures}


class _Observer:
    """Running figures of the soak, in preallocated storage."""

    def __init__(self, cfg: SoakConfig, n_ticks: int, n_windows: int) -> None:
        self.cfg = cfg
        self.compute_s = np.zeros(n_ticks)  # controller compute time per tick [s]
        self.n = 0
        self.unsafe = 0
        self.transitions = 0
        self.state = SupervisorState.RUNNING
        self.warn_counts: dict[str, int] = {}
        self.fault_counts: dict[str, int] = {}
        self.first_fault = ""
        self.acknowledged = 0  # latched faults the operator cleared
        self._latched_since = math.nan
        self.command_max = 0.0
        self.nonfinite = 0
        # quiet windows: one row per window: [t_end, kind (0 hold, 1 rest), mean error,
        # mean x, y, z, creep (hand travel over the window), samples]
        self.windows = np.zeros((n_windows, 8))
        self.n_windows = 0
        self._acc = np.zeros(5)  # sums: error, x, y, z, count
        self._first = np.zeros(3)
        self._last = np.zeros(3)
        self._kind = ""
        self._t_end = 0.0

    def tick(self, state: LoopState, report: Any, hand: FloatArray, goal: FloatArray,
             quiet: str, seg_end: float) -> None:
        """Keep one control tick's figures (preallocated arrays: no allocation per tick)."""
        out = state.output
        if out is None:
            return
        if self.n < self.compute_s.size:
            self.compute_s[self.n] = out.compute_time_s
        self.n += 1
        top = float(np.max(out.tension_n))
        if not (math.isfinite(top) and bool(np.isfinite(out.tension_n).all())):
            self.nonfinite += 1
        elif top > self.command_max:
            self.command_max = top
        if report is not None:
            if not report.ok:
                self.unsafe += 1
                for f in (*report.faults, *report.latched):
                    self.fault_counts[f.rule] = self.fault_counts.get(f.rule, 0) + 1
                    if not self.first_fault:
                        self.first_fault = f"t={state.t_s:.3f} s {f.rule}: {f.message}"
            for f in report.warnings:
                self.warn_counts[f.rule] = self.warn_counts.get(f.rule, 0) + 1
            if report.state != self.state:
                self.transitions += 1
                self.state = report.state
        if quiet:
            if not self._kind:
                self._acc[:] = 0.0
                self._first[:] = hand
                self._kind = quiet
                self._t_end = seg_end
            self._acc[0] += float(np.linalg.norm(hand - goal))
            self._acc[1:4] += hand
            self._acc[4] += 1.0
            self._last[:] = hand
        elif self._kind:
            self._close()

    def _close(self) -> None:
        count = self._acc[4]
        if count > 0 and self.n_windows < self.windows.shape[0]:
            row = self.windows[self.n_windows]
            row[0] = self._t_end
            row[1] = 1.0 if self._kind == "rest" else 0.0
            row[2] = self._acc[0] / count
            row[3:6] = self._acc[1:4] / count
            row[6] = float(np.linalg.norm(self._last - self._first))
            row[7] = count
            self.n_windows += 1
        self._kind = ""


def rss_bytes() -> int:
    """Resident set size of this process [bytes] (C extensions included, unlike tracemalloc);
    0 where /proc is missing."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")


def _percentiles(values: FloatArray) -> dict[str, float]:
    if values.size == 0:
        return {"p50": math.nan, "p99": math.nan, "max": math.nan}
    p50, p99 = np.percentile(values, [50, 99])
    return {"p50": float(p50), "p99": float(p99), "max": float(values.max())}


def run_soak(setup: Setup, cfg: SoakConfig, safety_overrides: dict[str, Any] | None = None,
             progress: Callable[[str], None] | None = None) -> SoakReport:
    """Run the soak (see the module docstring)."""
    rig = Rig(setup, cfg.controller, safety_overrides=safety_overrides)
    q0 = start_pose(setup.robot, cfg.start_pose)
    schedule = SoakSchedule(rig, cfg, q0)
    loop = rig.loop()
    loop.reset(q0, schedule.goal_at(0.0))
    supervisor = rig.supervisor
    control_hz = rig.parts.controller.loop.control_rate_hz
    n_ticks = math.ceil(cfg.duration_s * control_hz) + 1
    shortest = cfg.move_s[0] + min(cfg.hold_s[0], cfg.rest_s)
    observer = _Observer(cfg, n_ticks, int(cfg.duration_s / shortest) + 2)
    mock = rig.mock

    def on_control(state: LoopState) -> None:
        report = supervisor.report
        if report is not None and report.latched:
            if math.isnan(observer._latched_since):
                observer._latched_since = state.t_s
            elif state.t_s - observer._latched_since >= cfg.acknowledge_after_s:
                observer.acknowledged += len(supervisor.acknowledge())
                observer._latched_since = math.nan
        hand = mock.hand_position_m
        goal = schedule.seg.goal(state.t_s).position_m
        observer.tick(state, supervisor.report, hand, goal, schedule.quiet(state.t_s),
                      schedule.seg.t1)

    chunk = cfg.memory_every_s
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    memory: list[tuple[float, int, int]] = []  # (t, traced bytes, RSS bytes) after warm-up
    baseline_snapshot = None
    wall0 = time.perf_counter()
    try:
        if cfg.warmup_s > 0.0:
            loop.run(min(cfg.warmup_s, cfg.duration_s), schedule.goal_at,
                     hook=schedule.step_hook, on_control=on_control)
        memory.append((loop.time_s, tracemalloc.get_traced_memory()[0], rss_bytes()))
        baseline_snapshot = tracemalloc.take_snapshot()
        while loop.time_s < cfg.duration_s - 1e-9:
            step = min(chunk, cfg.duration_s - loop.time_s)
            loop.run(step, schedule.goal_at, hook=schedule.step_hook, on_control=on_control)
            memory.append((loop.time_s, tracemalloc.get_traced_memory()[0], rss_bytes()))
            if progress is not None:
                wall = time.perf_counter() - wall0
                progress(f"soak: {loop.time_s:7.0f} s simulated, {wall:6.0f} s wall, "
                         f"traced {memory[-1][1] / 1e6:.2f} MB, unsafe ticks {observer.unsafe}")
        peak = tracemalloc.get_traced_memory()[1]
        final_snapshot = tracemalloc.take_snapshot()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    wall = time.perf_counter() - wall0
    observer._close()
    growth_sites = []
    if baseline_snapshot is not None:
        for stat in final_snapshot.compare_to(baseline_snapshot, "lineno")[:5]:
            if stat.size_diff > 0:
                frame = stat.traceback[0]
                growth_sites.append({"where": f"{frame.filename}:{frame.lineno}",
                                     "bytes": int(stat.size_diff), "count": int(stat.count_diff)})
    t_mem = np.array([m[0] for m in memory])
    b_mem = np.array([m[1] for m in memory], dtype=float)
    rss = np.array([m[2] for m in memory], dtype=float)
    slope = float(np.polyfit(t_mem, b_mem, 1)[0]) * 3600.0 if len(memory) >= 3 else math.nan
    rss_slope = float(np.polyfit(t_mem, rss, 1)[0]) * 3600.0 if len(memory) >= 3 else math.nan
    windows = observer.windows[:observer.n_windows]
    rests = windows[windows[:, 1] == 1.0]
    holds = windows[windows[:, 1] == 0.0]
    rest_positions = rests[:, 3:6]
    drift = np.linalg.norm(rest_positions - rest_positions[0], axis=1) if len(rests) else \
        np.zeros(0)
    trend = float(np.polyfit(rests[:, 0], rests[:, 2], 1)[0]) * 3600.0 if len(rests) >= 3 \
        else math.nan
    expected = loop.expected_ticks()
    figures = {
        "memory": {
            "traced_start_bytes": int(b_mem[0]), "traced_end_bytes": int(b_mem[-1]),
            "growth_bytes": int(b_mem[-1] - b_mem[0]),
            "max_above_start_bytes": int(b_mem.max() - b_mem[0]),
            "slope_bytes_per_hour": slope, "peak_bytes": int(peak),
            "samples": len(memory), "largest_growth_sites": growth_sites,
            "rss_start_bytes": int(rss[0]), "rss_end_bytes": int(rss[-1]),
            "rss_max_bytes": int(rss.max()), "rss_slope_bytes_per_hour": rss_slope,
            "traced_series": [[round(float(t), 1), int(b)] for t, b in zip(t_mem, b_mem)],
        },
        "rest": {
            "count": len(rests),
            "drift_from_first_rest_m": drift.round(5).tolist(),
            "max_drift_m": float(drift.max()) if drift.size else math.nan,
            "error_to_goal_m": rests[:, 2].round(5).tolist(),
            "error_trend_m_per_hour": trend,
            "max_creep_in_window_m": float(rests[:, 6].max()) if len(rests) else math.nan,
        },
        "holds": {
            "count": len(holds),
            "error_to_goal_m": _percentiles(holds[:, 2]),
            "max_creep_in_window_m": float(holds[:, 6].max()) if len(holds) else math.nan,
        },
        "ticks": {
            "run": dict(loop.ticks), "expected": expected,
            "missed": {k: int(expected[k] - loop.ticks[k]) for k in expected},
            "control_ticks_observed": observer.n,
        },
        "safety": {
            "unsafe_ticks": observer.unsafe, "state_changes": observer.transitions,
            "latched_faults_acknowledged": observer.acknowledged,
            "faults_by_rule": dict(observer.fault_counts),
            "warnings_by_rule": dict(observer.warn_counts), "first_fault": observer.first_fault,
            "max_command_N": observer.command_max, "nonfinite_commands": observer.nonfinite,
            "max_sent_N": loop.sent_max_n, "nonfinite_sent": loop.sent_nonfinite,
            "limit_N": rig.tension_limit_n,
        },
        "compute_time_ms": {k: v * 1e3 for k, v in _percentiles(
            observer.compute_s[:min(observer.n, observer.compute_s.size)]).items()},
        "rests_scheduled": schedule.rests,
    }
    return SoakReport(loop.time_s, wall, figures)
