"""Benchmark of a learned joint-muscle mapping: l(q) + Jm(q) per call (issue 14's budget:
<= 0.05 ms p50 for 18 muscles), against the description's own geometry in the same run.

    python benchmarks/bench_learned_mapping.py MODEL [--config DIR] [--count N] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import summary_ms, time_calls, write_outputs

from musculo_control.model.robot import load_robot
from musculo_control.paths import default_config_dir

BUDGET_P50_MS = 0.05


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="model file of musculo learn-mapping")
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--count", type=int, default=5000, help="timed calls per case")
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    args = parser.parse_args()

    described = load_robot(args.config)
    learned = load_robot(args.config, {"muscle_geometry.learned_model": str(args.model)})
    lo, hi = learned.joint_box()
    rng = np.random.default_rng(0)
    poses = lo + (hi - lo) * rng.random((256, len(lo)))
    cases = {
        "learned l(q) + Jm(q)": lambda i: learned.geometry.kinematics_at(poses[i % 256]),
        f"description l(q) + Jm(q) ({described.geometry.source})":
            lambda i: described.geometry.kinematics_at(poses[i % 256]),
    }
    rows = []
    for name, fn in cases.items():
        stats = summary_ms(time_calls(fn, args.count))
        rows.append({"case": name, **stats})
        print(f"{name:<60} p50 {stats['p50_ms']:.4f} ms  p99 {stats['p99_ms']:.4f} ms  "
              f"max {stats['max_ms']:.3f} ms")
    ratio = rows[1]["p50_ms"] / rows[0]["p50_ms"]
    load = os.getloadavg()[0]
    ok = rows[0]["p50_ms"] <= BUDGET_P50_MS
    terms = learned.learned.mapping.exponents.shape[0] if learned.learned else 0
    print(f"learned vs description: {ratio:.2f}x (p50, same run); load average {load:.2f}; "
          f"budget p50 {BUDGET_P50_MS} ms: {'met' if ok else 'MISSED'}")
    write_outputs(rows, "Learned mapping benchmark",
                  [f"learned is {ratio:.2f}x the description's speed (p50, same run)",
                   f"{learned.n_muscles} muscles, {terms} basis terms, load average {load:.2f}",
                   f"budget p50 {BUDGET_P50_MS} ms: {'met' if ok else 'missed'}"],
                  args.out, "bench_learned_mapping",
                  {"ratio_vs_description": ratio, "load_average": load})
    print(f"wrote {args.out}/bench_learned_mapping.{{csv,md,json}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
