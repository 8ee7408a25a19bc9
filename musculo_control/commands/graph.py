"""``musculo graph``: the node graph without ``ros2 launch`` (for the ROS 2 wheels from PyPI).

Starts every node of the graph ``mock_arm.launch.py`` (or, with ``--robot``, ``arm.launch.py``)
starts, from the same description (:mod:`musculo_control.nodes.graph`): the mock arm alone, the
potentiometer and tendon driver nodes in ``hardware_process``, the dynamics, QP and goal nodes
in ``control_process`` (with ``--sim-time`` or ``--process-per-node``, each node in its own
process), with the parameters the launch file would give them (``--realtime``: and the
real-time profile); prints which process runs which nodes and the folder of their logs (one
per process); stops them all on Ctrl-C, after ``--duration``, or when a node dies (printing
the end of its log, exit 1).
Other ROS 2 tools (``ros2 topic``, RViz, Foxglove) on the same ``ROS_DOMAIN_ID`` and computer see
the nodes: the mock graph's discovery stays on this machine (``ROS_AUTOMATIC_DISCOVERY_RANGE``,
``ROS_LOCALHOST_ONLY`` on Humble) unless the environment sets it.

    musculo graph [--config DIR] [--controller osc] [--robot] [--sim-time] [--real-time-factor F]
                  [--goal-mode none|trajectory] [--trajectory-file F] [--process-per-node]
                  [--realtime] [--duration S] [--logs DIR]
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_dir
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.paths import default_config_dir

#: How often the processes are checked [s].
_POLL_S = 0.5


def add_parser(sub: Any) -> None:
    p = sub.add_parser("graph", help="run the ROS 2 node graph without ros2 launch",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--config", type=Path, default=None, help="config folder (default: shipped arm)")
    p.add_argument("--controller", choices=CONTROLLER_NAMES, default="osc")
    p.add_argument("--robot", action="store_true",
                   help="the real arm (arm.launch.py): no mock arm; the raw hw/ topics come "
                        "from the robot")
    p.add_argument("--sim-time", action="store_true",
                   help="simulated time: the mock arm publishes /clock (lockstepped)")
    p.add_argument("--real-time-factor", type=float, default=1.0, metavar="F",
                   help="with --sim-time: simulated seconds per wall second (default 1)")
    p.add_argument("--goal-mode", choices=("none", "trajectory"), default="none",
                   help="goal_node: none (send goals yourself on hand_goal or "
                        "hand_goal/trajectory) or trajectory (play --trajectory-file); the "
                        "interactive marker needs a ROS 2 distribution (ros2 launch)")
    p.add_argument("--trajectory-file", default="", help="trajectory YAML for --goal-mode "
                                                         "trajectory (default: the parameter "
                                                         "file's)")
    p.add_argument("--process-per-node", action="store_true",
                   help="each node in its own process (one_process:=false of the launch "
                        "files); default: on the wall clock the drivers in hardware_process "
                        "and the dynamics, QP and goal nodes in control_process, a process per "
                        "node with --sim-time")
    p.add_argument("--realtime", action="store_true",
                   help="the real-time profile of the config folder's realtime.yaml "
                        "(realtime:=true of the launch files: SCHED_FIFO tick threads, nice "
                        "middleware threads, locked memory; warns where not permitted)")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="stop after S wall seconds (default: run until Ctrl-C)")
    p.add_argument("--logs", type=Path, default=None,
                   help="folder for one log per node (default: a temporary folder)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from musculo_control.nodes.graph import GraphOptions
        from musculo_control.nodes.launcher import GraphProcesses
    except ImportError as exc:
        raise SystemExit(f"musculo graph needs rclpy ({exc}); install with: "
                         "pip install -e '.[ros]'") from exc
    if args.duration is not None and not args.duration > 0:
        raise SystemExit(f"--duration must be > 0 s, got {args.duration}")
    if not args.real_time_factor > 0:
        raise SystemExit(f"--real-time-factor must be > 0, got {args.real_time_factor}")
    if args.logs is not None:
        writable_dir(args.logs, "--logs")
    folder = args.config or default_config_dir()
    options = GraphOptions(folder, mock=not args.robot, controller=args.controller,
                           use_sim_time=args.sim_time and not args.robot,
                           real_time_factor=args.real_time_factor,
                           lockstep=args.sim_time and not args.robot, goal_mode=args.goal_mode,
                           trajectory_file=args.trajectory_file,
                           one_process=False if args.process_per_node else None,
                           realtime=args.realtime)
    logs = args.logs or Path(tempfile.mkdtemp(prefix="musculo_graph_"))
    graph = GraphProcesses(options, logs)  # checks the options and parameter file first
    stop = {"why": ""}

    def on_signal(signum: int, frame: Any) -> None:
        stop["why"] = signal.Signals(signum).name

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    graph.start()
    layout = "; ".join(f"{name} ({', '.join(launch.arguments)})" if launch.shared else name
                       for name, launch in graph.launches.items())
    print(f"{len(graph.nodes)} nodes in {len(graph.processes)} processes: {layout}; config "
          f"{folder}; logs in {logs}; Ctrl-C stops them", flush=True)
    t0 = time.monotonic()
    dead = ""
    try:
        while not stop["why"]:
            dead = next((n for n in graph.nodes if not graph.alive(n)), "")
            if dead:
                break
            if args.duration is not None and time.monotonic() - t0 >= args.duration:
                stop["why"] = f"{args.duration:g} s"
                break
            time.sleep(_POLL_S)
    finally:
        codes = graph.stop()
    if dead:
        process = graph.process_of[dead]
        print(f"{process} ended (exit code {codes.get(process)}); the others were stopped. End "
              f"of its log ({graph.log_path(dead)}):\n{graph.log(dead)[-3000:]}",
              file=sys.stderr)
        return 1
    print(f"stopped ({stop['why']}); exit codes: "
          + ", ".join(f"{n} {c}" for n, c in codes.items()))
    return 0
