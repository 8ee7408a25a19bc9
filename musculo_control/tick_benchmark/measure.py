"""What every benchmark shares besides its settings (:mod:`musculo_control.tick_benchmark.config`):
timing statistics, the machine's load, verdicts against targets, the CSV / Markdown / JSON
reports and the count options of its command line (``musculo bench`` and ``benchmarks/``).

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
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


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
