"""The QP solvers on the controller's own QPs (see ``benchmarks/solver_field.py``):
DAQP, OSQP, the dual Newton solver, ProxQP, PIQP, quadprog and Clarabel against SciPy's BVLS,
on a closed-loop run of the shipped arm and on synthetic arms up to 300 muscles.

    pip install -e '.[bench]'
    python benchmarks/bench_solvers.py [--config DIR] [--qps N] [--solvers a,b] [--out DIR]

Writes bench_solvers.csv, .md and .json. Run it on a quiet machine (``uptime``): the report
carries the load average at the start and the end, and BVLS, timed in the same run, is the
baseline of every ratio.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from solver_field import FIELD, markdown, run_solver_bench

from musculo_control.paths import default_config_dir
from musculo_control.tick_benchmark.config import load_bench_config
from musculo_control.tick_benchmark.measure import positive_int, write_reports


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", type=Path, default=None, help="config folder (default: shipped)")
    p.add_argument("--qps", type=positive_int, default=None,
                   help="consecutive QPs per sequence (default: bench.yaml solver_qps)")
    p.add_argument("--solvers", default=",".join(FIELD),
                   help=f"comma-separated subset of {','.join(FIELD)}")
    p.add_argument("--out", type=Path, default=Path("out/bench"), help="report folder")
    args = p.parse_args(argv)
    solvers = tuple(s for s in args.solvers.split(",") if s)
    unknown = [s for s in solvers if s not in FIELD]
    if unknown:
        p.error(f"unknown solver(s) {unknown}; the field: {list(FIELD)}")
    config_dir = args.config or default_config_dir()
    bench = load_bench_config(config_dir)
    result = run_solver_bench(config_dir, bench, solvers, args.qps)
    command = "python benchmarks/bench_solvers.py " + shlex.join(sys.argv[1:] if argv is None
                                                                 else argv)
    text = markdown(result, command.strip())
    paths = write_reports(args.out, "bench_solvers", result["rows"], text, result)
    print(text)
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
