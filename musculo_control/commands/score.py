"""``musculo score BAG``: the metrics of ``musculo simulate`` from a rosbag2 recording.

The bag's signals at its control ticks (:mod:`musculo_control.sim.bag_signals`) are scored by
the experiments' own scoring (:func:`musculo_control.sim.experiments.score_signals`), the one
``musculo simulate`` runs. The experiment, controller, start pose and the experiment's settings
come from the bag's metadata when it carries them (a runner's bag written with a
:class:`~musculo_control.sim.rosbag_log.BagRun`), else from the options and the config folder
(``experiments.yaml``, times from the bag's first control tick); ``--set`` overrides both.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_file
from musculo_control.commands.options import add_common, override_items
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.errors import InputError
from musculo_control.paths import default_config_dir
from musculo_control.sim.bag_score import score_bag, setup_of_run
from musculo_control.sim.bag_signals import BagSignals, recorded_run
from musculo_control.sim.results import dumps
from musculo_control.sim.rosbag_log import BagRun
from musculo_control.sim.scoring import judge, problems
from musculo_control.sim.setup import EXPERIMENT_NAMES


def add_parser(sub: Any) -> None:
    """Register ``musculo score``."""
    p = sub.add_parser("score", help="score a rosbag2 recording of an experiment like "
                                     "musculo simulate",
                       description="Reads a rosbag2 bag (MCAP or SQLite) of the node graph's "
                                   "topics or of a simulated run and prints the metrics of "
                                   "'musculo simulate' for it: the hand from a ground-truth "
                                   "topic when the bag has one, else from the controller's "
                                   "forward kinematics. Record on the robot with: ros2 bag "
                                   "record -s mcap /controller/state /muscle_commands "
                                   "/joint_states [MOCAP_TOPIC] [FORCE_TOPIC]")
    p.add_argument("bag", type=Path, help="rosbag2 folder")
    p.add_argument("--experiment", choices=EXPERIMENT_NAMES, default=None,
                   help="the experiment the bag records (default: the bag's metadata)")
    p.add_argument("--pose", default=None, metavar="NAME",
                   help="the start pose of a trajectory run, a label (default: the metadata's)")
    p.add_argument("--controller", choices=CONTROLLER_NAMES, default=None,
                   help="the controller that ran, for the verdict (default: the metadata's, "
                        "else osc)")
    p.add_argument("--hand-topic", default=None, metavar="TOPIC",
                   help="the hand's ground truth, PointStamped or PoseStamped in the robot's "
                        "base frame, e.g. a motion-capture topic (default: /mock/hand; "
                        "without it the controller's forward kinematics)")
    p.add_argument("--force-topic", default=None, metavar="TOPIC",
                   help="the gauge force, std_msgs/Float64 or WrenchStamped (default: "
                        "/mock/gauge_force; without it the force is not measured)")
    p.add_argument("--t0", type=float, default=None, metavar="SECONDS",
                   help="the run's t = 0 on the bag's clock [s] (a recording that began before "
                        "the run: musculo experiment prints it and writes it to metrics.json); "
                        "default: the bag's metadata, else its first control tick")
    p.add_argument("--json", type=Path, default=None, help="write the metrics here")
    add_common(p)
    p.set_defaults(func=run)


def _experiment(args: argparse.Namespace, recorded: BagRun | None) -> str:
    if args.experiment is not None:
        return str(args.experiment)
    if recorded is None or recorded.experiment not in EXPERIMENT_NAMES:
        raise InputError("--experiment", f"one of {list(EXPERIMENT_NAMES)} (the metadata of "
                                         f"bag {args.bag} does not say)")
    return recorded.experiment


def print_score(title: str, experiment: str, signals: BagSignals,
                metrics: dict[str, Any]) -> None:
    """Where each signal came from, then the metrics and problems as ``musculo simulate``
    prints them."""
    t = signals.time_s
    print(f"{title}: {len(t)} control ticks over {t[-1] - t[0]:.2f} s" if len(t) else title)
    for name, source in signals.sources.items():
        print(f"    {name + ' from':<28} {source}")
    for key, value in metrics.items():
        shown = f"{value:.4f}" if isinstance(value, float) and math.isfinite(value) else value
        print(f"    {key:<28} {shown}")
    for problem in problems(experiment, metrics):
        print(f"    ! {problem}")


def run(args: argparse.Namespace) -> int:
    """``musculo score``: one bag, one experiment."""
    writable_file(args.json, "--json")
    recorded = recorded_run(args.bag)
    experiment = _experiment(args, recorded)
    setup = setup_of_run(args.config or default_config_dir(), recorded, override_items(args))
    signals, metrics = score_bag(setup, experiment, args.bag, hand_topic=args.hand_topic,
                                 force_topic=args.force_topic,
                                 origin_ns=None if args.t0 is None else round(args.t0 * 1e9))
    controller = args.controller or (recorded.controller if recorded and recorded.controller
                                     else "osc")
    pose = args.pose if args.pose is not None else (recorded.start_pose if recorded else "")
    print_score(f"{experiment} / {controller} {pose}".rstrip() + f" (bag {args.bag})",
                experiment, signals, metrics)
    verdict = judge(experiment, controller, metrics, setup.experiments.targets)
    print(f"verdict: {verdict['status']}")
    if args.json:
        args.json.write_text(dumps({
            "bag": str(args.bag), "experiment": experiment, "controller": controller,
            "start_pose": pose, "signals": dict(signals.sources), "metrics": metrics,
            "verdict": verdict}))
        print(f"wrote {args.json}")
    return 0
