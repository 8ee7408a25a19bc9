"""``musculo bench``: the tick benchmark of :mod:`musculo_control.tick_benchmark.tick` from the
command line (options override ``bench.yaml``)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from musculo_control.commands.pages import check_page, write_page_block
from musculo_control.paths import default_config_dir
from musculo_control.tick_benchmark.config import load_bench_config
from musculo_control.tick_benchmark.measure import positive_int, write_reports
from musculo_control.tick_benchmark.tick import markdown, run_bench


def add_parser(sub: Any) -> None:
    """Register ``musculo bench``."""
    p = sub.add_parser("bench", help="time the 125 Hz control tick and the dynamics snapshot",
                       description="p50, p99 and max of the control tick (each solver), the "
                                   "dynamics snapshot, both fused, a set-up-every-tick baseline "
                                   "and larger synthetic arms; verdicts against bench.yaml's "
                                   "targets when the machine was quiet. Run it with nothing "
                                   "else busy.")
    p.add_argument("--config", type=Path, default=None, help="config folder (default: shipped arm)")
    p.add_argument("--ticks", type=positive_int, default=None,
                   help="timed ticks per case (default: bench.yaml ticks)")
    p.add_argument("--baseline-ticks", type=positive_int, default=None,
                   help="timed ticks of the slow baselines (default: bench.yaml)")
    p.add_argument("--scaling-ticks", type=positive_int, default=None,
                   help="timed ticks per synthetic arm and solver (default: bench.yaml)")
    p.add_argument("--seed", type=int, default=None, help="seed of the joint trajectory")
    p.add_argument("--out", type=Path, default=Path("out/bench"),
                   help="folder for bench_tick.csv, .md and .json (default out/bench)")
    p.add_argument("--json", type=Path, default=None,
                   help="JSON summary (default <out>/bench_tick.json)")
    p.add_argument("--no-scaling", action="store_true", help="skip the synthetic arms")
    p.add_argument("--page", type=Path, default=None,
                   help="also write the report, with its date and command, into this "
                        "documentation page's generated block (between '<!-- bench:begin' "
                        "and '<!-- bench:end -->')")
    p.set_defaults(func=run)


#: the block ``--page`` writes (musculo_control.commands.pages)
BLOCK, WRITER = "bench", "musculo bench --page"


def command_line(args: argparse.Namespace) -> str:
    """The command that reproduces this run (the options given, in a fixed order)."""
    parts = ["musculo", "bench"]
    for name in ("config", "ticks", "baseline_ticks", "scaling_ticks", "seed"):
        value = getattr(args, name)
        if value is not None:
            parts += [f"--{name.replace('_', '-')}", str(value)]
    if args.no_scaling:
        parts.append("--no-scaling")
    parts += ["--page", str(args.page)]
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    """``musculo bench``: run the tick benchmark and write CSV, Markdown and JSON."""
    if args.page is not None:
        check_page(args.page, BLOCK, WRITER)  # before the run, not after it
    config_dir = args.config or default_config_dir()
    bench = load_bench_config(config_dir)
    overrides = {k: v for k, v in (("ticks", args.ticks), ("baseline_ticks", args.baseline_ticks),
                                   ("scaling_ticks", args.scaling_ticks), ("seed", args.seed))
                 if v is not None}
    bench = dataclasses.replace(bench, **overrides)
    result = run_bench(config_dir, bench, scaling=not args.no_scaling)
    out: Path = args.out
    text = markdown(result)
    paths = write_reports(out, "bench_tick", result["rows"], text, result)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(paths[2].read_text())
        paths.append(args.json)
    if args.page is not None:
        paths.append(write_page_block(args.page, BLOCK, WRITER, text, command_line(args)))
    print(text)
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0
