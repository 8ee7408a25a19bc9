"""``musculo simulate``: one of the paper's experiments on the mock arm, ROS-free."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.paths import default_config_dir
from musculo_control.sim.experiments import (
    EXPERIMENT_NAMES,
    Overrides,
    RunResult,
    Setup,
    load_setup,
    run_experiment,
)
from musculo_control.sim.plots import plot_disturbance, plot_nullspace, plot_trajectory


def add_common(p: argparse.ArgumentParser) -> None:
    """Options shared by the simulation commands."""
    p.add_argument("--config", type=Path, default=None, help="config folder (default: shipped arm)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="FILE.KEY=V",
                   help="override a config value, e.g. controller.qp.r=0.01 or "
                        "experiments.nullspace.duration_s=5 or mock_arm.seed=3 (repeatable)")
    p.add_argument("--seed", type=int, default=None, help="seed of the mock arm (experiments.seed)")


def setup_from_args(args: argparse.Namespace) -> Setup:
    items = list(args.overrides)
    if args.seed is not None:
        items.append(f"experiments.seed={args.seed}")
    return load_setup(args.config or default_config_dir(), Overrides.parse(items))


def add_parser(sub: Any) -> None:
    p = sub.add_parser("simulate", help="run an experiment of the paper on the mock arm",
                       description="Runs disturbance (A), trajectory (B) or nullspace (C) with one "
                                   "controller against the MuJoCo mock arm; writes logs (CSV, "
                                   "MCAP), a PNG plot and JSON metrics. 'faults' runs the fault "
                                   "matrix instead (reliability.yaml; see musculo_control."
                                   "commands.reliability).")
    p.add_argument("experiment", choices=(*EXPERIMENT_NAMES, "faults"))
    p.add_argument("--controller", choices=CONTROLLER_NAMES, default="osc")
    p.add_argument("--out", type=Path, default=Path("out"), help="output folder (default: out)")
    p.add_argument("--json", type=Path, default=None, help="write the metrics here too")
    add_common(p)
    p.set_defaults(func=run)


def metrics_json(experiment: str, runs: list[RunResult]) -> dict[str, Any]:
    """Metrics of one experiment with one controller; trajectory keys map pose -> value."""
    if experiment != "trajectory":
        return dict(runs[0].metrics)
    out: dict[str, Any] = {}
    for run in runs:
        for key, value in run.metrics.items():
            out.setdefault(key, {})[run.variant] = value
    return out


def save_runs(runs: list[RunResult], folder: Path) -> None:
    for run in runs:
        sub = folder / run.experiment / run.controller / run.variant if run.variant \
            else folder / run.experiment / run.controller
        run.recorder.save(sub, run.run_info)


def plot_runs(experiment: str, runs: list[RunResult], setup: Setup, path: Path) -> Path:
    if experiment == "disturbance":
        return plot_disturbance(runs, path)
    if experiment == "trajectory":
        return plot_trajectory(runs, path)
    return plot_nullspace(runs, path, *watched_joint(setup), setup.robot.arm.up)


def watched_joint(setup: Setup) -> tuple[int, str]:
    """(index, name) of the joint the nullspace experiment watches (experiments.yaml)."""
    name = setup.experiments.nullspace.watch_joint if setup.experiments.nullspace else \
        setup.robot.arm.joint_names[0]
    return setup.robot.arm.joint_names.index(name), name


def print_runs(runs: list[RunResult]) -> None:
    for run in runs:
        print(f"{run.experiment} / {run.controller} {run.variant}".rstrip() +
              f": {run.simulated_s:.1f} s simulated in {run.wall_s:.2f} s wall "
              f"({run.realtime_factor:.1f}x real time)")
        for key, value in run.metrics.items():
            shown = f"{value:.4f}" if isinstance(value, float) and math.isfinite(value) else value
            print(f"    {key:<28} {shown}")


def run(args: argparse.Namespace) -> int:
    if args.experiment == "faults":
        from musculo_control.commands.reliability import run_faults

        return run_faults(args)
    setup = setup_from_args(args)
    runs = run_experiment(setup, args.experiment, args.controller)
    print_runs(runs)
    save_runs(runs, args.out)
    png = plot_runs(args.experiment, runs, setup,
                    args.out / f"{args.experiment}_{args.controller}.png")
    metrics = metrics_json(args.experiment, runs)
    doc = {"experiment": args.experiment, "controller": args.controller, "metrics": metrics,
           "realtime_factor": min(r.realtime_factor for r in runs)}
    (args.out / f"{args.experiment}_{args.controller}.json").write_text(
        json.dumps(doc, indent=2) + "\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(metrics, indent=2) + "\n")
    print(f"wrote {png} and logs under {args.out}/{args.experiment}/{args.controller}/")
    return 0
