"""``musculo simulate``: one of the paper's experiments on the mock arm, ROS-free."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_dir, writable_file
from musculo_control.commands.options import add_common, override_items
from musculo_control.commands.reliability import run_faults
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.errors import MusculoError
from musculo_control.loop.state_record import controller_state_layout
from musculo_control.paths import default_config_dir
from musculo_control.sim.bag_score import setup_of_run
from musculo_control.sim.experiments import RunResult, metrics_json, run_experiment, run_label
from musculo_control.sim.plots import (
    PlottedRun,
    plot_disturbance,
    plot_nullspace,
    plot_trajectory,
)
from musculo_control.sim.results import dumps
from musculo_control.sim.rosbag_log import write_bag
from musculo_control.sim.scoring import judge, problems
from musculo_control.sim.setup import EXPERIMENT_NAMES, Setup


def add_parser(sub: Any) -> None:
    """Register ``musculo simulate``."""
    p = sub.add_parser("simulate", help="run an experiment of the paper on the mock arm",
                       description="Runs disturbance (A), trajectory (B) or nullspace (C) with one "
                                   "controller against the MuJoCo mock arm; writes logs (CSV, "
                                   "a ROS 2 bag), a PNG plot and JSON metrics. 'faults' runs the "
                                   "fault matrix instead (reliability.yaml; see musculo_control."
                                   "commands.reliability).")
    p.add_argument("experiment", choices=(*EXPERIMENT_NAMES, "faults"))
    p.add_argument("--controller", choices=CONTROLLER_NAMES, default="osc")
    p.add_argument("--out", type=Path, default=Path("out"), help="output folder (default: out)")
    p.add_argument("--json", type=Path, default=None, help="write the metrics here too")
    p.add_argument("--graph", action="store_true",
                   help="faults only: inject into the ROS 2 node graph (one process per node, "
                        "simulated time) instead of the ROS-free loop; needs rclpy")
    p.add_argument("--real-time-factor", type=float, default=0.5, metavar="F",
                   help="with --graph: simulated seconds per wall second (default 0.5)")
    p.add_argument("--wall-clock", action="store_true",
                   help="with --graph: on the wall clock, as a lab runs it (the config "
                        "folder's real-time profile) instead of simulated time")
    p.add_argument("--busy-loops", type=int, default=0, metavar="N",
                   help="with --graph --wall-clock: N processes spinning for each case, to "
                        "load the machine (-1: one per core)")
    p.add_argument("--page", type=Path, default=None,
                   help="faults only: also write the matrix, with its date and command, into "
                        "this documentation page's generated block: '<!-- faults:begin' ... "
                        "'<!-- faults:end -->' for the runner, 'faults-graph' with --graph, "
                        "'faults-wall-clock' with --graph --wall-clock")
    p.add_argument("--mock-overlay", type=Path, default=None, metavar="FILE",
                   help="a mock_arm.yaml overlay (as `musculo identify --out` writes it) "
                        "merged over the config folder's mock_arm.yaml, key by key; --set "
                        "mock_arm.KEY=V still applies on top")
    add_common(p)
    p.set_defaults(func=run)


def setup_with_overlay(args: argparse.Namespace) -> Setup:
    """The run's setup, ``--mock-overlay``'s leaves applied as ``--set mock_arm.*`` overrides
    (the command line's own win); an error about one of them names the overlay."""
    return setup_of_run(args.config or default_config_dir(), None, override_items(args),
                        args.mock_overlay)


def save_runs(runs: list[RunResult], folder: Path, setup: Setup) -> None:
    """Per run: run.yaml, signals.csv and the ROS 2 bag ``bag/`` under
    ``folder/<experiment>/<controller>[/<start pose>]``. The bag's hand positions and goals
    are stamped with the base frame they are expressed in (robot.yaml ``arm.base_frame``), which
    an MJCF whose bodies have no names still has."""
    robot = setup.robot
    layout = controller_state_layout(robot.arm.n_joints)
    frame = robot.arm.base_frame
    for run in runs:
        sub = folder / run.experiment / run.controller / run.variant if run.variant \
            else folder / run.experiment / run.controller
        run.recorder.save(sub, run.run_info)
        write_bag(sub / "bag", run.recorder, frame_id=frame, state_layout=layout,
                  origin_ns=int(run.run_info["log"]["stamp_origin_unix_ns"]),
                  run=run_label(setup, run))


def plot_runs(experiment: str, runs: Sequence[PlottedRun], setup: Setup, path: Path) -> Path:
    """The experiment's figure of ``runs`` written to ``path``."""
    targets = setup.experiments.targets
    if experiment == "disturbance":
        return plot_disturbance(runs, path, targets)
    if experiment == "trajectory":
        return plot_trajectory(runs, path, targets)
    nullspace = setup.experiments.nullspace
    if nullspace is None:  # no run of an experiment the config folder switched off
        raise MusculoError("plot_runs: experiment 'nullspace' is not set up in this config folder")
    return plot_nullspace(runs, path, nullspace.drift_joint, targets)


def print_runs(runs: list[RunResult]) -> None:
    """Each run's metrics, and its problems, on standard output."""
    for run in runs:
        print(f"{run.experiment} / {run.controller} {run.variant}".rstrip() +
              f": {run.simulated_s:.1f} s simulated in {run.wall_s:.2f} s wall "
              f"({run.realtime_factor:.1f}x real time)")
        for key, value in run.metrics.items():
            shown = f"{value:.4f}" if isinstance(value, float) and math.isfinite(value) else value
            print(f"    {key:<28} {shown}")
        for problem in problems(run.experiment, run.metrics):
            print(f"    ! {problem}")


def run(args: argparse.Namespace) -> int:
    """``musculo simulate``: one experiment with one controller (or the fault matrix)."""
    if args.experiment == "faults":
        if args.mock_overlay is not None:
            raise SystemExit("musculo simulate faults: --mock-overlay is for the experiments "
                             f"{list(EXPERIMENT_NAMES)} only")
        return run_faults(args)
    if args.page is not None:
        raise SystemExit(f"musculo simulate {args.experiment}: --page is for the fault matrix "
                         "only ('musculo simulate faults --page PAGE')")
    writable_dir(args.out, "--out")
    writable_file(args.json, "--json")
    setup = setup_with_overlay(args)
    runs = run_experiment(setup, args.experiment, args.controller)
    print_runs(runs)
    save_runs(runs, args.out, setup)
    png = plot_runs(args.experiment, runs, setup,
                    args.out / f"{args.experiment}_{args.controller}.png")
    metrics = metrics_json(args.experiment, runs)
    verdict = judge(args.experiment, args.controller, metrics, setup.experiments.targets)
    doc = {"experiment": args.experiment, "controller": args.controller, "metrics": metrics,
           "verdict": verdict, "realtime_factor": min(r.realtime_factor for r in runs)}
    (args.out / f"{args.experiment}_{args.controller}.json").write_text(dumps(doc))
    if args.json:
        args.json.write_text(dumps(metrics))
    print(f"verdict: {verdict['status']}")
    print(f"wrote {png} and logs under {args.out}/{args.experiment}/{args.controller}/")
    return 0
