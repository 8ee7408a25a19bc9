"""``musculo report``: the main job. Every experiment with every controller, and a report.

Writes into ``--out``: ``report.md`` (the table of results beside the physical robot's and the
targets, with met / missed per row, and the plots), ``results.json`` (what the table is
rendered from: metrics, verdicts, seed, targets, figures), ``metrics.json`` (the metrics alone),
the figures, and each run's logs under ``runs/``. ``musculo publish`` copies the results and
figures into the repository and regenerates the results block of doc/results/example_run.md.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import names, writable_dir
from musculo_control.commands.options import add_common, setup_from_args
from musculo_control.commands.simulate import plot_runs, print_runs, save_runs
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.provenance import provenance
from musculo_control.sim.experiments import RunResult, metrics_json, run_experiment
from musculo_control.sim.results import build_results, dumps, results_table
from musculo_control.sim.setup import EXPERIMENT_NAMES, Setup


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


def figure_name(experiment: str, controller: str) -> str:
    """The file name of an experiment's figure (one per controller for the trajectory)."""
    return f"trajectory_{controller}.png" if experiment == "trajectory" else f"{experiment}.png"


def plot_experiment(experiment: str, runs: list[RunResult], setup: Setup, out: Path) -> list[str]:
    """The experiment's figures in ``out``; returns their file names."""
    groups: dict[str, list[RunResult]] = {}
    for r in runs:
        groups.setdefault(figure_name(experiment, r.controller), []).append(r)
    for name, group in groups.items():
        plot_runs(experiment, group, setup, out / name)
    return list(groups)


def run(args: argparse.Namespace) -> int:
    controllers = names(args.controllers, CONTROLLER_NAMES, "--controllers")
    out = writable_dir(args.out, "--out")
    setup = setup_from_args(args)
    configured = setup.experiments.configured()
    experiments = (list(configured) if args.experiments is None
                   else names(args.experiments, configured, "--experiments"))
    t0 = time.perf_counter()
    metrics: dict[str, dict[str, Any]] = {}
    figures: list[str] = []
    simulated = 0.0
    for experiment in experiments:
        runs: list[RunResult] = []
        for controller in controllers:
            print(f"== {experiment} / {controller}", flush=True)
            these = run_experiment(setup, experiment, controller)
            print_runs(these)
            save_runs(these, out / "runs", setup)
            runs += these
            metrics.setdefault(experiment, {})[controller] = metrics_json(experiment, these)
            simulated += sum(r.simulated_s for r in these)
        figures += plot_experiment(experiment, runs, setup, out)
    wall = time.perf_counter() - t0
    overrides = list(args.overrides) + ([f"mock_arm.seed={args.seed}"] if args.seed is not None
                                        else [])
    doc = build_results(metrics, config=setup.robot.config_dir.name,
                        seed=setup.mock_config.seed, overrides=overrides,
                        targets=setup.experiments.targets, figures=figures,
                        compare_with_paper=setup.experiments.compare_with_paper)
    (out / "results.json").write_text(dumps(doc))
    (out / "metrics.json").write_text(json.dumps(doc_metrics(doc), indent=2) + "\n")
    prov = provenance()
    absent = [e for e in EXPERIMENT_NAMES if e not in configured]
    lines = [
        "# musculo_control: the paper's experiments on the simulated arm", "",
        f"Config: `{setup.robot.config_dir}`; overrides: {overrides or 'none'}; mock arm seed "
        f"{setup.mock_config.seed}; commit {prov['git_commit']}.",
        f"{simulated:.0f} s simulated in {wall:.0f} s wall ({simulated / wall:.1f}x real time "
        f"including set-up, logs and plotting).", "",
        "The mock arm is MuJoCo with model error (masses, via-points), joint friction, actuator "
        "lag and a tension envelope, sensor noise and quantisation: the controller never runs "
        "on its own model. Targets and their sources: `experiments.yaml` `targets`. A run that "
        "did not hold its start pose before its score started, lost the gauge's contact or "
        "went to minimum tension misses its row's targets.", "",
        *results_table(doc), "",
        *([f"Not set up for this robot (no section in experiments.yaml): "
           f"{', '.join(absent)}.", ""] if absent else []),
        *[f"![{Path(f).stem}]({f})" for f in figures], "",
        "Logs of every run are under `runs/<experiment>/<controller>/`: run.yaml (parameters, "
        "initial state, what the seed drew, commit and package versions), signals.csv and "
        "bag/ (a ROS 2 bag, MCAP storage).", "",
    ]
    (out / "report.md").write_text("\n".join(lines))
    status = [e["verdict"]["status"] for by in doc["experiments"].values() for e in by.values()]
    print(f"targets: {status.count('met')} rows met, {status.count('missed')} missed, "
          f"{status.count('no target')} without a target")
    print(f"wrote {out / 'report.md'}, {out / 'results.json'}, {out / 'metrics.json'} and "
          f"{len(figures)} figures ({simulated:.0f} s simulated in {wall:.0f} s wall)")
    return 0


def doc_metrics(doc: dict[str, Any]) -> dict[str, Any]:
    """``metrics.json``: {experiment: {controller: metrics}}."""
    return {exp: {ctrl: e["metrics"] for ctrl, e in by.items()}
            for exp, by in doc["experiments"].items()}
