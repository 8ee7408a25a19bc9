"""What every benchmark shares: its settings, timing statistics, the machine's load, verdicts
against targets and the CSV / Markdown / JSON reports (``musculo bench`` and ``benchmarks/``).

A benchmark on a shared machine measures the other jobs as much as itself, so it records the
1-min load average before and after the run and judges no target when the machine was busy:
the verdict is then ``not judged: load average X`` instead of met or missed. The thresholds
are in ``bench.yaml``. Ratios against a baseline measured in the same run hold up better under
load than absolute figures; every benchmark prints at least one.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import load, spec
from musculo_control.errors import ConfigError

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class NodeCpuTargets:
    """CPU share of one core per node of the graph at real time (issue 11), judged by
    ``benchmarks/bench_graph.py`` on a quiet machine."""

    tendon_driver_node: float = spec(0.10, gt=0.0, doc="at the driver rate [cores]")
    potentiometer_node: float = spec(0.10, gt=0.0, doc="at the sensor rate [cores]")
    activation_qp_node: float = spec(0.15, gt=0.0, doc="at the control rate [cores]")
    dynamics_node: float = spec(0.05, gt=0.0, doc="at the dynamics rate [cores]")


@dataclass(frozen=True, kw_only=True)
class BenchTargets:
    """The targets the benchmarks judge (issue 11), on a quiet machine."""

    tick_p50_ms: float = spec(0.12, gt=0.0, doc="the robot's tick (eq. 11), median [ms]")
    tick_p99_ms: float = spec(0.25, gt=0.0, doc="the robot's tick, 99th percentile [ms]")
    speedup_vs_baseline: float = spec(10.0, gt=0.0, doc="tick p50 against the set-up-every-"
                                                        "tick baseline's [1]")
    snapshot_p99_ms: float = spec(0.2, gt=0.0, doc="dynamics snapshot, 99th percentile [ms]")
    fused_p99_ms: float = spec(0.5, gt=0.0, doc="snapshot and tick together at every tick, "
                                                "99th percentile [ms]")
    scaling_p99_ms: tuple[tuple[float, ...], ...] = spec(
        ((120, 28, 1.5), (300, 40, 2.0)),
        doc="[muscles, joints, tick p99 in ms] of synthetic arms, the solver qp.solver picks")
    node_cpu_share: NodeCpuTargets = spec(NodeCpuTargets(), doc="per node of the graph")


@dataclass(frozen=True, kw_only=True)
class BenchConfig:
    """``bench.yaml`` of a config folder: what is timed, and when a verdict is given."""

    ticks: int = spec(2000, ge=1, doc="timed ticks per case of the shipped arm")
    baseline_ticks: int = spec(500, ge=1, doc="timed ticks of the set-up-every-tick baselines")
    scaling_ticks: int = spec(300, ge=1, doc="timed ticks per synthetic arm and solver")
    warmup_ticks: int = spec(50, ge=0, doc="untimed ticks before each case")
    calls: int = spec(5000, ge=1, doc="timed calls per case of benchmarks/bench_*.py")
    seed: int = spec(0, ge=0, doc="seed of the joint trajectory and poses")
    amplitude_rad: float = spec(0.15, gt=0.0, doc="amplitude of the seeded joint sinusoids [rad]")
    goal_lead_s: float = spec(0.05, ge=0.0, doc="the goal runs this far ahead on the path [s]")
    gc_freeze: bool = spec(True, doc="gc.freeze() after each set-up, as the QP node does "
                                     "(ros_params.yaml gc_freeze), so that a full collection "
                                     "of the set-up's objects does not land in a timed tick")
    quiet_load_average: float = spec(
        0.5, gt=0.0, doc="1-min load average at the start above which no target is judged; "
                         "at the end the benchmark's own process may add 1")
    graph_duration_s: float = spec(20.0, gt=2.0, doc="benchmarks/bench_graph.py: seconds the "
                                                   "graph is watched at real time [s]")
    graph_baseline_s: float = spec(5.0, gt=0.0, doc="benchmarks/bench_graph.py: seconds of the "
                                                   "bare timer loop baseline [s]")
    scaling_arms: tuple[tuple[int, ...], ...] = spec(
        ((30, 7), (60, 14), (63, 38), (120, 28), (300, 40)),
        doc="[muscles, joints] of synthetic arms (model/synthetic.py)")
    solver_qps: int = spec(300, ge=1, doc="benchmarks/bench_solvers.py: consecutive QPs per "
                                          "sequence")
    solver_arms: tuple[tuple[int, ...], ...] = spec(
        ((30, 7), (63, 38), (120, 28), (300, 40)),
        doc="benchmarks/bench_solvers.py: [muscles, joints] of the synthetic arms whose QPs are "
            "recorded (the shipped arm's come from a closed-loop run)")
    targets: BenchTargets = spec(BenchTargets(), doc="issue 11")

    def check(self, file: str, key: str) -> None:
        from musculo_control.model.synthetic import fewest_muscles

        for field in ("scaling_arms", "solver_arms"):
            for i, arm in enumerate(getattr(self, field)):
                if len(arm) != 2 or arm[1] < 2 or arm[0] < fewest_muscles(arm[1]):
                    raise ConfigError(file, f"{key}.{field}[{i}]".lstrip("."),
                                      "[muscles, joints] with joints >= 2 and muscles >= joints "
                                      "+ ceil(joints / 2)", list(arm))
        for i, row in enumerate(self.targets.scaling_p99_ms):
            if len(row) != 3:
                raise ConfigError(file, f"{key}.targets.scaling_p99_ms[{i}]".lstrip("."),
                                  "[muscles, joints, p99 ms]", list(row))


def load_bench_config(config_dir: Path) -> BenchConfig:
    """``bench.yaml`` of ``config_dir``; the defaults above when the folder has none."""
    path = Path(config_dir) / "bench.yaml"
    return load(BenchConfig, path) if path.is_file() else BenchConfig()


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1, with a clear message otherwise."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


# -- timing ------------------------------------------------------------------------------------
def time_calls(fn: Callable[[int], object], count: int, warmup: int = 200) -> FloatArray:
    """Wall time of ``fn(i)`` for i in range(count) [s], after ``warmup`` untimed calls."""
    for i in range(warmup):
        fn(i)
    out = np.empty(count)
    clock = time.perf_counter
    for i in range(count):
        t0 = clock()
        fn(i)
        out[i] = clock() - t0
    return out


def summary_ms(samples_s: npt.ArrayLike) -> dict[str, float]:
    """p50, p99 and max of samples given in seconds, in milliseconds, and their count."""
    ms = np.asarray(samples_s, dtype=float) * 1e3
    if ms.size == 0:
        raise ValueError("no samples to summarise")
    return {"p50_ms": float(np.median(ms)), "p99_ms": float(np.percentile(ms, 99)),
            "max_ms": float(ms.max()), "count": int(ms.size)}


# -- the machine --------------------------------------------------------------------------------
def load_average() -> float:
    """The 1-min load average (runnable tasks, averaged over about a minute)."""
    return round(os.getloadavg()[0], 2)


class MachineLoad:
    """The load average before and after a benchmark, and whether its verdicts count."""

    def __init__(self, quiet_load_average: float) -> None:
        self.quiet = quiet_load_average
        self.cpus = os.cpu_count() or 1
        self.start = load_average()
        self.end: float | None = None

    def finish(self) -> None:
        self.end = load_average()

    @property
    def busy_value(self) -> float | None:
        """The load average that makes the run too busy to judge, or None when quiet."""
        if self.start > self.quiet:
            return self.start
        # the benchmark itself is one runnable process over the whole run
        if self.end is not None and self.end > self.quiet + 1.0:
            return self.end
        return None

    @property
    def judged(self) -> bool:
        return self.busy_value is None

    def verdict(self, ok: bool) -> str:
        """``met`` / ``NOT met``, or ``not judged: load average X`` on a busy machine."""
        busy = self.busy_value
        if busy is not None:
            return f"not judged: load average {busy}"
        return "met" if ok else "NOT met"

    def describe(self) -> str:
        quiet = ("quiet enough to judge" if self.judged else
                 f"too busy to judge (start above {self.quiet} or end above "
                 f"{self.quiet + 1.0})")
        return (f"{self.cpus} CPUs; 1-min load average {self.start} at the start, {self.end} at "
                f"the end: {quiet}")

    def as_dict(self) -> dict[str, Any]:
        return {"cpus": self.cpus, "load_average_start": self.start,
                "load_average_end": self.end, "quiet_load_average": self.quiet,
                "judged": self.judged, "python": platform.python_version(),
                "machine": platform.machine()}


# -- reports -----------------------------------------------------------------------------------
def markdown_table(rows: list[dict[str, Any]]) -> list[str]:
    """Rows of equal keys as Markdown table lines."""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r[k]) for k in keys) + " |")
    return lines


def write_reports(out_dir: Path, stem: str, rows: list[dict[str, Any]], markdown: str,
                  summary: dict[str, Any]) -> list[Path]:
    """``<stem>.csv`` (rows), ``<stem>.md`` and ``<stem>.json`` (summary) in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.csv", out_dir / f"{stem}.md", out_dir / f"{stem}.json"]
    with paths[0].open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    paths[1].write_text(markdown)
    paths[2].write_text(json.dumps(summary, indent=2) + "\n")
    return paths


def _fmt(v: Any) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)
