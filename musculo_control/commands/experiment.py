"""``musculo experiment EXP --graph``: one of the paper's experiments over the node graph, as a
lab runs it on the robot, recorded and scored like ``musculo simulate``.

For each controller (and for ``trajectory`` each start pose): the arm is brought to the start
pose through the controller (a minimum-jerk joint path under eq. 16, ``experiments.yaml``
``graph``), the QP node is switched to the controller (bumpless), and the run's goals are sent
(:mod:`musculo_control.nodes.experiment_client`) while a rosbag2 bag (MCAP) records the topics
the score reads; the bag is then scored by ``musculo score``'s code, the runner's own scoring,
and the runs are drawn in ``musculo simulate``'s figure (``EXP.png`` in ``--out``).
Without ``--robot`` the command starts the mock graph itself (at wall clock, or ``--sim-time``)
and stops it at the end; with ``--robot`` it drives the running graph of ``arm.launch.py``
(no gauge: experiment A's push is the operator's, its force "not measured" unless
``--force-topic`` names a force sensor's topic). Ctrl-C stops with the arm held (the goal in
force at rest where it is), closes the bag recorded so far and writes the finished runs'
metrics; exit status 130.

``excitation`` runs the tour ``musculo identify`` needs recorded (``experiments.yaml``
``excitation``, :mod:`musculo_control.sim.identify.excitation`), rehearsed on the runner's mock
first: a tour that would stop the arm, leave a joint's range or reach the tension limit is
refused before the graph sees it. Its bag is recorded, not scored.

    musculo experiment {disturbance,trajectory,nullspace,excitation} --graph [--controller C ...]
                       [--pose NAME ...] [--robot] [--sim-time] [--out DIR] [--config DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_dir
from musculo_control.commands.options import add_common, override_items
from musculo_control.control.controller_names import CONTROLLER_NAMES
from musculo_control.errors import InputError
from musculo_control.paths import default_config_dir
from musculo_control.sim.results import dumps
from musculo_control.sim.setup import (
    EXPERIMENT_NAMES,
    Overrides,
    Setup,
    experiment_config,
    load_setup,
)

#: what each run's bag records: topic -> type (the score's inputs, and the mock's truth)
RECORDED = {
    "/controller/state": "musculo_control_msgs/msg/ControllerState",
    "/controller/goal": "geometry_msgs/msg/PoseStamped",
    "/muscle_commands": "sensor_msgs/msg/JointState",
    "/joint_states": "sensor_msgs/msg/JointState",
    # the load cells: with the joints and the commands, what `musculo identify` fits to
    "/muscle_states": "sensor_msgs/msg/JointState",
}
MOCK_TRUTH = {
    "/mock/hand": "geometry_msgs/msg/PointStamped",
    "/mock/elbow": "geometry_msgs/msg/PointStamped",
    "/mock/gauge_force": "std_msgs/msg/Float64",
}


#: the tour recorded for ``musculo identify`` (not one of the paper's experiments)
EXCITATION = "excitation"
#: its controller
TOUR_CONTROLLER = "osc"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("experiment", help="run an experiment over the node graph, record and "
                                          "score it",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("experiment", choices=(*EXPERIMENT_NAMES, EXCITATION))
    p.add_argument("--graph", action="store_true", required=True,
                   help="over the ROS 2 node graph (the ROS-free runs are musculo simulate)")
    p.add_argument("--controller", action="append", choices=CONTROLLER_NAMES, default=None,
                   help="a controller to run (repeat for several; default osc, and for "
                        "nullspace osc and osc-no-nullspace: eq. 11 and eq. 10)")
    p.add_argument("--pose", action="append", default=None, metavar="NAME",
                   help="a start pose of trajectory (repeat; default: every start pose)")
    p.add_argument("--robot", action="store_true",
                   help="drive the running graph of arm.launch.py (no mock, no gauge)")
    p.add_argument("--sim-time", action="store_true",
                   help="the mock graph on simulated time (lockstepped) instead of wall clock")
    p.add_argument("--hand-topic", default=None, metavar="TOPIC",
                   help="the hand's ground truth to record and score by (a motion-capture "
                        "PointStamped or PoseStamped; on the mock: /mock/hand)")
    p.add_argument("--force-topic", default=None, metavar="TOPIC",
                   help="the gauge's force topic to record (std_msgs/Float64 or "
                        "WrenchStamped; on the mock: /mock/gauge_force)")
    p.add_argument("--out", type=Path, default=Path("out/experiment"),
                   help="folder for the bags, metrics.json and the logs")
    add_common(p)
    p.set_defaults(func=run)


def _controllers(args: argparse.Namespace) -> list[str]:
    if args.experiment == EXCITATION:
        chosen = list(dict.fromkeys(args.controller or [TOUR_CONTROLLER]))
        if chosen != [TOUR_CONTROLLER]:
            raise InputError("--controller", f"{TOUR_CONTROLLER} (the excitation tour is hand "
                                             f"goals through the QP)", chosen)
        return chosen
    if args.controller:
        return list(dict.fromkeys(args.controller))
    return ["osc", "osc-no-nullspace"] if args.experiment == "nullspace" else ["osc"]


def _poses(args: argparse.Namespace, setup: Setup) -> list[str | None]:
    if args.experiment != "trajectory":
        return [None]
    configured = list(experiment_config(setup, "trajectory").start_poses)
    poses = args.pose or configured
    unknown = [p for p in poses if p not in configured and p != "home"]
    if unknown:
        raise InputError("--pose", f"one of trajectory's start poses {configured} "
                                   f"(experiments.yaml trajectory.start_poses)", unknown)
    return list(poses)


def run(args: argparse.Namespace) -> int:
    try:
        from musculo_control.nodes.experiment_client import ExperimentClient  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"musculo experiment --graph needs rclpy and musculo_control_msgs "
                         f"({exc}); install with: make install") from exc
    writable_dir(args.out, "--out")
    folder = args.config or default_config_dir()
    items = override_items(args)
    ignored = [i for i in items if not i.startswith("experiments.")]
    if ignored:  # the nodes would not see them; the run would not be what was asked
        raise InputError("--set / --seed", "experiments.* only: the graph's nodes read the "
                                           "config folder's own files (copy the folder, edit "
                                           "it and pass --config DIR)", ignored)
    setup = load_setup(folder, Overrides.parse(items))
    if args.experiment != EXCITATION:
        experiment_config(setup, args.experiment)
    runs = [(c, p) for c in _controllers(args) for p in _poses(args, setup)]
    taken = [str(b) for b in (_bag_folder(args, c, p) for c, p in runs) if b.exists()]
    if taken:
        raise InputError("--out", "a folder whose runs' bag folders do not exist yet (choose "
                                  "another --out, or remove them)", taken)
    if args.experiment == EXCITATION:
        _rehearse(setup)
    results: list[dict[str, Any]] = []
    try:
        if args.robot:
            _run_all(args, setup, runs, results)
        else:
            _with_mock_graph(args, setup, folder, runs, results)
    except KeyboardInterrupt:
        _report(args, setup, results)
        print("interrupted: the arm is held (the goal in force at rest where it is); the "
              "runs finished before are in metrics.json", file=sys.stderr)
        return 130
    return _report(args, setup, results)


def _rehearse(setup: Setup) -> None:
    """The excitation tour on the runner's mock arm first: :class:`InputError` if it would stop
    the arm, leave a joint's range or reach the tension limit."""
    from musculo_control.sim.identify.excitation import excitation_config, rehearse

    excitation_config(setup)
    rehearsal = rehearse(setup)
    if not rehearsal.ok:
        raise InputError(f"{setup.robot.config_dir / 'experiments.yaml'} excitation",
                         "a tour that runs on the mock arm without a stop, inside the joints' "
                         "range and below the tension limit", rehearsal.describe())
    print(f"excitation rehearsed on the runner's mock arm: {rehearsal.describe()}", flush=True)


def _label(args: argparse.Namespace, controller: str, pose: str | None) -> str:
    return f"{args.experiment}/{controller}" + (f"/{pose}" if pose else "")


def _bag_folder(args: argparse.Namespace, controller: str, pose: str | None) -> Path:
    return args.out / _label(args, controller, pose).replace("/", "_") / "bag"


def _with_mock_graph(args: argparse.Namespace, setup: Setup, folder: Path,
                     runs: list[tuple[str, str | None]], results: list[dict[str, Any]]) -> None:
    """The runs on a mock graph this command starts and stops."""
    from musculo_control.nodes.graph import GraphOptions
    from musculo_control.nodes.launcher import GraphProcesses

    # at wall clock with the real-time profile, as arm.launch.py runs the robot's graph
    options = GraphOptions(folder, mock=True, controller="osc", use_sim_time=args.sim_time,
                           lockstep=args.sim_time, goal_mode="none",
                           realtime=not args.sim_time)
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    graph = GraphProcesses(options, logs)
    graph.start()
    clock = "simulated time" if args.sim_time else "wall clock"
    print(f"mock graph: {len(graph.nodes)} nodes ({clock}); logs in {logs}", flush=True)
    try:
        _run_all(args, setup, runs, results)
    finally:
        graph.stop()


def _run_all(args: argparse.Namespace, setup: Setup, runs: list[tuple[str, str | None]],
             results: list[dict[str, Any]]) -> None:
    """Each run in turn, its result appended to ``results`` (Ctrl-C: the arm held, the bag
    closed, KeyboardInterrupt raised on)."""
    from musculo_control.nodes.bag_recorder import BagRecorder
    from musculo_control.nodes.experiment_client import ExperimentClient
    from musculo_control.sim.experiments import run_settings
    from musculo_control.sim.graph_schedule import RunSchedule
    from musculo_control.sim.identify.excitation import ExcitationSchedule, tour_settings
    from musculo_control.sim.rosbag_log import BagRun

    topics = dict(RECORDED)
    if not args.robot:
        topics.update(MOCK_TRUTH)
    for option, kind in ((args.hand_topic, "geometry_msgs/msg/PointStamped"),
                         (args.force_topic, "std_msgs/msg/Float64")):
        if option:
            topics.setdefault(option, kind)
    with ExperimentClient(setup, use_sim_time=args.sim_time and not args.robot,
                          mock=not args.robot) as client:
        for controller, pose in runs:
            tour = args.experiment == EXCITATION
            schedule = ExcitationSchedule(setup) if tour else \
                RunSchedule(setup, args.experiment, controller, pose)
            label = _label(args, controller, pose)
            bag = _bag_folder(args, controller, pose)
            run = BagRun(args.experiment, controller, schedule.pose,
                         tour_settings(setup) if tour else run_settings(setup, args.experiment))
            # recording from the move to the start pose on: a new reader takes a moment to
            # hear its publishers, and the run's first samples must be in the bag (the score
            # leaves out what comes before the run's t = 0)
            recorder = BagRecorder(client.node, bag, topics, custom_data=run.custom_data())
            try:
                reached, what = client.bring_to(schedule.q_start, schedule.pose)
                print(f"{label}: {what}", flush=True)
                if not reached:
                    recorder.close()
                    results.append({"run": label, "error": what, "bag": str(bag)})
                    continue
                t0, counts = _recorded(client, schedule, recorder)
            except KeyboardInterrupt:
                held = client.hold()
                recorder.close()
                print(f"\n{label}: interrupted; {held}; the bag so far in {bag}", flush=True)
                raise
            print(f"{label}: recorded {sum(counts.values())} messages in {bag}", flush=True)
            if tour:  # recorded for the fit, not scored
                print(f"{label}: fit the mock to it with: musculo identify {bag} --out "
                      f"fit.yaml", flush=True)
                results.append({"run": label, "controller": controller,
                                "start_pose": schedule.pose, "bag": str(bag),
                                "messages": counts, "t0_s": t0})
                continue
            results.append({**_score(args, setup, schedule, bag, label), "t0_s": t0})


def _recorded(client: Any, schedule: Any, recorder: Any) -> tuple[float, dict[str, int]]:
    """Run ``schedule`` with ``client`` while ``recorder`` records; the bag's t = 0 (custom
    data ``ORIGIN_KEY``) is the run's start on the graph's clock. That start [s] and the
    messages per topic."""
    from musculo_control.sim.rosbag_log import ORIGIN_KEY

    def started(t0_s: float) -> None:
        recorder.set_custom_data(ORIGIN_KEY, str(round(t0_s * 1e9)))
        print(f"  the run's t = 0: {t0_s:.6f} s on the graph's clock (musculo score --t0)",
              flush=True)

    try:
        t0 = client.run(schedule, on_start=started)
    finally:
        counts: dict[str, int] = recorder.close()  # idempotent
    return t0, counts


def _score(args: argparse.Namespace, setup: Setup, schedule: Any, bag: Path,
           label: str) -> dict[str, Any]:
    """The bag's metrics (``musculo score``'s reading and the runner's scoring)."""
    from musculo_control.commands.score import print_score
    from musculo_control.sim.bag_signals import read_bag_signals
    from musculo_control.sim.experiments import SCORED_SIGNALS, actuator_limit_n, score_signals

    experiment = args.experiment
    signals = read_bag_signals(bag, setup.robot, SCORED_SIGNALS[experiment],
                               hand_topic=args.hand_topic, force_topic=args.force_topic,
                               until_s=schedule.duration_s)
    limit = (actuator_limit_n(setup, mock=signals.mock) if experiment == "trajectory"
             else math.nan)
    scored, metrics = score_signals(setup, experiment, signals,
                                    unsafe_ticks=signals.unsafe_ticks, tension_limit_n=limit)
    run_info = {"parameters": {"experiments": {
        experiment: dataclasses.asdict(experiment_config(setup, experiment))}}}
    print_score(f"{label} (bag {bag})", experiment, signals, metrics)
    return {"run": label, "controller": schedule.controller, "start_pose": schedule.pose,
            "bag": str(bag), "signals": dict(signals.sources), "metrics": metrics,
            "_plotted": BagScoredRun(schedule.controller, schedule.pose or "", metrics, scored,
                                     run_info)}


@dataclasses.dataclass(frozen=True)
class BagScoredRun:
    """A run scored from its bag, as the figures read it
    (:class:`~musculo_control.sim.plots.PlottedRun`)."""

    controller: str
    variant: str
    metrics: dict[str, Any]
    scored: Any
    run_info: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.controller} {self.variant}".strip()


def _report(args: argparse.Namespace, setup: Setup, results: list[dict[str, Any]]) -> int:
    """metrics.json and the figure of the runs scored (runs not run: exit status 1)."""
    from musculo_control.commands.simulate import plot_runs

    plotted = [r.pop("_plotted") for r in results if "_plotted" in r]
    path = args.out / "metrics.json"
    path.write_text(dumps({"experiment": args.experiment, "runs": results}))
    print(f"wrote {path}")
    if plotted:
        png = plot_runs(args.experiment, plotted, setup, args.out / f"{args.experiment}.png")
        print(f"wrote {png}")
    failed = [r["run"] for r in results if "error" in r]
    if failed:
        print(f"not run: {failed}", file=sys.stderr)
    return 1 if failed else 0

