"""Timing helpers shared by the benchmarks: percentiles, CSV and Markdown output."""

from __future__ import annotations

import csv
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def time_calls(fn: Callable[[int], object], count: int, warmup: int = 200) -> np.ndarray:
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


def summary_ms(samples_s: np.ndarray) -> dict[str, float]:
    """p50, p99 and max of samples given in seconds, in milliseconds."""
    ms = samples_s * 1e3
    return {"p50_ms": float(np.median(ms)), "p99_ms": float(np.percentile(ms, 99)),
            "max_ms": float(ms.max()), "count": int(ms.size)}


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_outputs(rows: list[dict[str, Any]], title: str, notes: list[str], out_dir: Path,
                  stem: str, extra_json: dict[str, Any] | None = None) -> None:
    """rows -> CSV and a Markdown table; JSON with rows plus ``extra_json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    keys = list(rows[0])
    with open(out_dir / f"{stem}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"# {title}", "", f"Machine: {machine()}.", ""]
    lines += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r[k]) for k in keys) + " |")
    lines += [""] + [f"- {n}" for n in notes]
    (out_dir / f"{stem}.md").write_text("\n".join(lines) + "\n")
    (out_dir / f"{stem}.json").write_text(
        json.dumps({"rows": rows, **(extra_json or {})}, indent=2) + "\n")


def _fmt(v: Any) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)
