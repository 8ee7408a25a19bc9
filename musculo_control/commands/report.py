"""``musculo report``: the main job. Every experiment with every controller, and a report.

Writes ``<out>/report.md`` (plots, and a table of the metrics, beside the physical robot's
results of SPEC section 8 when the robot stands in for the paper's: experiments.yaml
``compare_with_paper``), ``<out>/metrics.json`` and each run's logs. The experiments are those
the robot's experiments.yaml sets up.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

from musculo_control.commands.simulate import (
    add_common,
    metrics_json,
    print_runs,
    save_runs,
    setup_from_args,
    watched_joint,
)
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.sim.experiments import EXPERIMENT_NAMES, RunResult, Setup, run_experiment
from musculo_control.sim.plots import plot_disturbance, plot_nullspace, plot_trajectory

#: The physical robot's results (SPEC section 8, from Toshimitsu et al. 2021).
PAPER = {
    "disturbance": {
        "osc": "hand deviation < 2 cm; push force peaks ~40 N, decays to ~0 N",
        "joint-stiffness": "hand deviation > 4 cm; constant force needed",
        "muscle-stiffness": "hand deviation > 4 cm; constant force needed",
    },
    "trajectory": {"osc": "mean tracking error 3.5 / 5.0 / 7.7 cm (A / B / C)"},
    "nullspace": {"osc": "||a|| from ~10 to < 5 as the elbow lowers",
                  "osc-no-nullspace": "||a|| stays ~10"},
}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("report", help="run all experiments with all controllers and write a "
                                      "Markdown report (the main job)")
    p.add_argument("--out", type=Path, default=Path("out"), help="output folder (default: out)")
    p.add_argument("--controllers", default=",".join(CONTROLLER_NAMES),
                   help="comma-separated controllers (default: all four)")
    p.add_argument("--experiments", default=None,
                   help=f"comma-separated experiments of {list(EXPERIMENT_NAMES)} (default: "
                        f"those the robot's experiments.yaml sets up)")
    add_common(p)
    p.set_defaults(func=run)


def _fmt(v: Any, scale: float = 1.0, unit: str = "") -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k} {_fmt(x, scale, unit)}" for k, x in v.items())
    if isinstance(v, float):
        return "n/a" if not math.isfinite(v) else f"{v * scale:.2f}{unit}"
    return str(v)


def _rows(experiment: str, controller: str, m: dict[str, Any], paper_column: bool,
          ) -> list[str]:
    paper = PAPER.get(experiment, {}).get(controller, "")
    if experiment == "disturbance":
        shown = (f"hand deviation max {_fmt(m['max_hand_deviation_m'], 100, ' cm')}; push force "
                 f"peak {_fmt(m['peak_push_force_N'], 1, ' N')}, final "
                 f"{_fmt(m['final_push_force_N'], 1, ' N')}; elbow moved "
                 f"{_fmt(m['elbow_displacement_m'], 100, ' cm')}")
    elif experiment == "trajectory":
        shown = f"mean tracking error {_fmt(m['mean_tracking_error_m'], 100, ' cm')}"
    else:
        shown = (f"\\|\\|a\\|\\| {_fmt(m['activation_norm_start'])} -> "
                 f"{_fmt(m['activation_norm_end'])}; hand drift "
                 f"{_fmt(m['hand_drift_m'], 100, ' cm')}; elbow lowered "
                 f"{_fmt(m['elbow_drop_m'], 100, ' cm')}")
    unsafe = m.get("unsafe_ticks", 0)
    if isinstance(unsafe, dict):
        unsafe = sum(unsafe.values())
    if unsafe:
        shown += f"; {unsafe} unsafe ticks"
    if not paper_column:
        return [f"| {experiment} | {controller} | {shown} |"]
    paper = paper.replace("|", "\\|")  # '||a||' must not split the Markdown table
    return [f"| {experiment} | {controller} | {shown} | {paper} |"]


def plot_experiment(experiment: str, runs: list[RunResult], setup: Setup, out: Path) -> list[Path]:
    if experiment == "disturbance":
        return [plot_disturbance(runs, out / "disturbance.png")]
    if experiment == "nullspace":
        return [plot_nullspace(runs, out / "nullspace.png", *watched_joint(setup),
                               setup.robot.arm.up)]
    paths = []
    for controller in dict.fromkeys(r.controller for r in runs):
        paths.append(plot_trajectory([r for r in runs if r.controller == controller],
                                     out / f"trajectory_{controller}.png"))
    return paths


def run(args: argparse.Namespace) -> int:
    setup = setup_from_args(args)
    controllers = [c.strip() for c in args.controllers.split(",") if c.strip()]
    experiments = list(setup.experiments.configured()) if args.experiments is None else \
        [e.strip() for e in args.experiments.split(",") if e.strip()]
    paper_column = setup.experiments.compare_with_paper
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    metrics: dict[str, dict[str, Any]] = {}
    table = (["| experiment | controller | simulated (this run) | physical robot (paper) |",
              "|---|---|---|---|"] if paper_column else
             ["| experiment | controller | simulated (this run) |", "|---|---|---|"])
    figures: list[Path] = []
    simulated = 0.0
    for experiment in experiments:
        runs: list[RunResult] = []
        for controller in controllers:
            print(f"== {experiment} / {controller}", flush=True)
            these = run_experiment(setup, experiment, controller)
            print_runs(these)
            save_runs(these, out / "runs")
            runs += these
            m = metrics_json(experiment, these)
            metrics.setdefault(experiment, {})[controller] = m
            table += _rows(experiment, controller, m, paper_column)
            simulated += sum(r.simulated_s for r in these)
        figures += plot_experiment(experiment, runs, setup, out)
    wall = time.perf_counter() - t0
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    absent = [e for e in EXPERIMENT_NAMES if e not in setup.experiments.configured()]
    lines = [
        "# musculo_control: the paper's experiments on the simulated arm", "",
        f"Config: `{setup.robot.config_dir}`; overrides: {args.overrides or 'none'}; "
        f"seed {setup.experiments.seed}.",
        f"{simulated:.0f} s simulated in {wall:.0f} s wall ({simulated / wall:.1f}x real time "
        f"including set-up and plotting).", "",
        "The mock arm is MuJoCo with model error (masses, via-points), joint friction, actuator "
        "lag and a tension envelope, sensor noise and quantisation: the controller never runs "
        "on its own model.", "",
        *table, "",
        *([f"Not set up for this robot (no section in experiments.yaml): "
           f"{', '.join(absent)}.", ""] if absent else []),
        *[f"![{p.stem}]({p.name})" for p in figures], "",
        "Logs of every run (run.yaml with parameters and initial state, signals.csv, "
        "signals.mcap) are under `runs/`.", "",
    ]
    (out / "report.md").write_text("\n".join(lines))
    print(f"wrote {out / 'report.md'}, {out / 'metrics.json'} and {len(figures)} figures "
          f"({simulated:.0f} s simulated in {wall:.0f} s wall)")
    return 0
