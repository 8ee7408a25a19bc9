"""Benchmark of a learned joint-muscle mapping: l(q) + Jm(q) per call (issue 14's budget:
<= 0.05 ms p50 for 18 muscles), against the description's own geometry in the same run.

    python benchmarks/bench_learned_mapping.py MODEL [--config DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from musculo_control.model.robot import load_robot
from musculo_control.paths import default_config_dir
from musculo_control.tick_benchmark.config import load_bench_config
from musculo_control.tick_benchmark.measure import (
    MachineLoad,
    markdown_table,
    summary_ms,
    time_calls,
    write_reports,
)

BUDGET_P50_MS = 0.05


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="model file of musculo learn-mapping")
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    args = parser.parse_args()
    bench = load_bench_config(args.config)
    machine = MachineLoad(bench.quiet_load_average)
    print(f"load average (1 min) at the start: {machine.start}")

    described = load_robot(args.config)
    learned = load_robot(args.config, {"muscle_geometry.learned_model": str(args.model)})
    lo, hi = learned.joint_box()
    rng = np.random.default_rng(bench.seed)
    poses = lo + (hi - lo) * rng.random((256, len(lo)))
    cases = {
        "learned l(q) + Jm(q)": lambda i: learned.geometry.kinematics_at(poses[i % 256]),
        "description l(q) + Jm(q)": lambda i: described.geometry.kinematics_at(poses[i % 256]),
    }
    rows = []
    for name, fn in cases.items():
        stats = summary_ms(time_calls(fn, bench.calls))
        rows.append({"case": name, **stats})
        print(f"{name:<28} p50 {stats['p50_ms']:.4f} ms  p99 {stats['p99_ms']:.4f} ms  "
              f"max {stats['max_ms']:.3f} ms")
    machine.finish()
    ratio = rows[1]["p50_ms"] / rows[0]["p50_ms"]
    verdict = machine.verdict(rows[0]["p50_ms"] <= BUDGET_P50_MS)
    terms = learned.learned.mapping.exponents.shape[0] if learned.learned else 0
    notes = [f"learned / description ({described.geometry.source}) speed: {ratio:.2f}x (p50, "
             f"same run)",
             f"learned p50 {rows[0]['p50_ms']:.4f} ms, budget <= {BUDGET_P50_MS} ms: {verdict}",
             f"{learned.n_muscles} muscles, {terms} basis terms, {bench.calls} calls; "
             f"{machine.describe()}"]
    for note in notes:
        print(note)
    text = "\n".join(["# Learned mapping benchmark", "", *markdown_table(rows), "",
                      *[f"- {n}" for n in notes], ""])
    paths = write_reports(args.out, "bench_learned_mapping", rows, text,
                          {"rows": rows, "ratio_vs_description": ratio, "verdict": verdict,
                           "machine": machine.as_dict()})
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
