"""What a pause of the computer does to the arm: the controller's process of the running node
graph frozen (SIGSTOP, then SIGCONT) for given times at wall clock, and the tendon driver's
process once, each measured on the mock arm's true hand.

The graph runs as a lab runs it (``musculo graph``, ``mock_arm.launch.py``): the shared layout
(the tendon driver and the potentiometer node in ``hardware_process``, the dynamics, QP and goal
nodes in ``control_process``), with ``--realtime`` the config folder's real-time profile and
with ``--busy-loops N`` N spinning processes (-1: one per core) for the whole run. Per freeze
(``musculo_control.testing.stalls.freeze``): the hand's largest distance from where it was,
its drop and largest speed, the stops the driver and the controller said they made, latched
faults, and whether control resumed. ``--trials N`` repeats the whole on N fresh graphs.

    python benchmarks/bench_stalls.py [--config DIR] [--freezes 0.05,0.1,0.25,1,3] [--watch S]
                                      [--driver-freeze S] [--realtime] [--busy-loops N]
                                      [--trials N] [--out DIR] [--page PAGE]

``--launch`` starts the graph with ``ros2 launch musculo_control mock_arm.launch.py`` instead
(a sourced ROS 2 with this package built; ``realtime:=true`` with ``--realtime``), and finds the
two processes among the launch's children.

``--watch S`` first watches the arm for S seconds with nothing frozen (a row ``-``: what the
load alone does). ``--page PAGE`` writes the table, with the date, the command and the commit,
into the page's ``stalls`` block (doc/safety.md has one), checked before the run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from musculo_control.commands.pages import check_page, write_page_block
from musculo_control.loop.parts import load_parts
from musculo_control.nodes.graph import GraphOptions
from musculo_control.paths import default_config_dir
from musculo_control.testing.machine_load import busy_loops
from musculo_control.testing.stalls import FreezeResult, freeze, freezes_markdown, watch
from musculo_control.tick_benchmark.measure import load_average, write_reports

#: The page block this benchmark writes, and the writer its markers name (with --launch: its own).
_BLOCK, _WRITER = "stalls", "python benchmarks/bench_stalls.py --page"
_LAUNCH_BLOCK, _LAUNCH_WRITER = "stalls-launch", "python benchmarks/bench_stalls.py --launch --page"


class _Launched:
    """``ros2 launch`` of the mock graph in a session of its own; :meth:`pid` finds the process
    that runs a node among the launch's children (the shared layout's ``control_process``
    executable with the node's name among its arguments, or the node's own executable)."""

    def __init__(self, realtime: bool, log: Path, domain_id: int) -> None:
        ros2 = shutil.which("ros2")
        if ros2 is None:
            raise SystemExit("--launch needs ros2 on PATH: source a ROS 2 setup and this "
                             "package's install (doc/ros.md, Running the launch tests)")
        args = [f"realtime:={str(realtime).lower()}", "use_rviz:=false",
                "use_robot_state_publisher:=false", "goal_mode:=none"]
        self.log = log
        self._out = open(log, "w")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "ROS_DOMAIN_ID": str(domain_id)}
        self.proc = subprocess.Popen([ros2, "launch", "musculo_control", "mock_arm.launch.py",
                                      *args], stdout=self._out, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)

    def _children(self) -> dict[int, list[str]]:
        listed = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.proc.pid)],
                                capture_output=True, text=True).stdout.split()
        out = {}
        for pid in map(int, listed):
            with contextlib.suppress(OSError):
                out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        return out

    def pid(self, node: str) -> int:
        for pid, argv in self._children().items():
            script = next((a for a in argv if "/lib/musculo_control/" in a), "")
            rest = argv[argv.index(script) + 1:] if script else []
            named = rest[:rest.index("--ros-args")] if "--ros-args" in rest else rest
            if (script.endswith("/control_process") and node in named) \
                    or script.endswith("/" + node):
                return pid
        raise LookupError(f"no process of the launch runs {node}")

    def nodes_log(self) -> str:
        return self.log.read_text()[-4000:]

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGCONT)
            os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(30.0)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10.0)
        self._out.close()


@contextlib.contextmanager
def _graph(args: argparse.Namespace, parts: Any, workdir: Path, domain: int) -> Iterator[Any]:
    """The running graph: ``musculo graph``'s processes, or ``ros2 launch`` (``--launch``)."""
    if args.launch:
        launched = _Launched(args.realtime, workdir / "launch.log", domain)
        try:
            yield launched
        finally:
            launched.stop()
        return
    from musculo_control.nodes.launcher import GraphProcesses

    options = GraphOptions(parts.config_dir, one_process=True, realtime=args.realtime,
                           goal_mode="none")
    with GraphProcesses(options, workdir, domain_id=domain) as graph:
        yield graph


def _seconds(text: str) -> list[float]:
    if text.strip().lower() == "none":
        return []
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected seconds separated by commas, got {text!r}") from None
    if not values or any(v <= 0.0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive seconds, got {text!r}")
    return values


def _trial(parts: Any, args: argparse.Namespace) -> list[FreezeResult]:
    from musculo_control.nodes.launcher import private_domain_id
    from musculo_control.testing.observer import GraphObserver

    domain = private_domain_id()
    settle = parts.safety.resume_ramp_s + 2.0
    seconds = args.watch + sum(args.freezes) + len(args.freezes) * settle + 300.0
    with busy_loops(args.busy_loops, seconds), \
            tempfile.TemporaryDirectory(prefix="bench_stalls_") as workdir, \
            _graph(args, parts, Path(workdir), domain) as graph, \
            GraphObserver(parts, domain_id=domain, fast_streams=False) as obs:
        def running() -> bool:
            qp = obs.diagnostics_of("activation_qp_node")
            return bool(qp) and qp[-1].message.startswith("running") and len(obs.hand) > 0

        if not obs.wait_until(running, 120.0):
            logs = graph.nodes_log() if args.launch else "\n".join(
                f"--- {n}\n{graph.log(n)[-2000:]}" for n in graph.nodes)
            print("the controller never ran; node logs:\n" + logs, file=sys.stderr)
            raise SystemExit(1)
        obs.wait_for(2.0, 60.0)
        results = []
        if args.watch > 0.0:
            print(f"  watching the arm for {args.watch:g} s ...", flush=True)
            results.append(watch(obs, args.watch))
        for seconds_frozen in args.freezes:
            print(f"  freezing control_process for {1e3 * seconds_frozen:.0f} ms ...",
                  flush=True)
            results.append(freeze(graph, obs, "activation_qp_node", seconds_frozen,
                                  settle_s=settle))
        if args.driver_freeze > 0.0:
            print(f"  freezing hardware_process for {1e3 * args.driver_freeze:.0f} ms ...",
                  flush=True)
            results.append(freeze(graph, obs, "tendon_driver_node", args.driver_freeze,
                                  settle_s=settle))
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", type=Path, default=default_config_dir())
    p.add_argument("--freezes", type=_seconds, default=[0.05, 0.1, 0.25, 1.0, 3.0],
                   help="how long to freeze the controller's process, one after the other [s]; "
                        "'none': no freeze")
    p.add_argument("--driver-freeze", type=float, default=0.5,
                   help="then freeze the drivers' process this long [s] (0: not)")
    p.add_argument("--watch", type=float, default=0.0,
                   help="first watch the arm this long without freezing anything [s]")
    p.add_argument("--realtime", action="store_true", help="the config's real-time profile")
    p.add_argument("--busy-loops", type=int, default=0,
                   help="spinning processes for the whole run (-1: one per core)")
    p.add_argument("--trials", type=int, default=1, help="fresh graphs, one after the other")
    p.add_argument("--launch", action="store_true",
                   help="start the graph with ros2 launch (mock_arm.launch.py) instead of "
                        "musculo graph's processes")
    p.add_argument("--out", type=Path, default=Path("out/bench"))
    p.add_argument("--page", type=Path, default=None,
                   help="write the table into this page's 'stalls' block")
    args = p.parse_args(argv)
    block, writer = (_LAUNCH_BLOCK, _LAUNCH_WRITER) if args.launch else (_BLOCK, _WRITER)
    if args.page is not None:
        check_page(args.page, block, writer)
    parts = load_parts(args.config)
    load0 = load_average()
    results: list[FreezeResult] = []
    for trial in range(args.trials):
        print(f"trial {trial + 1} of {args.trials} ({args.busy_loops} busy loops, realtime "
              f"{args.realtime}) ...", flush=True)
        results += _trial(parts, args)
    table = freezes_markdown(results)
    command = "python benchmarks/bench_stalls.py " + " ".join(sys.argv[1:] if argv is None
                                                               else argv)
    markdown = (f"# Stalls of the node graph at wall clock\n\n`{command}` (load average "
                f"{load0:.2f} before the run)\n\n{table}")
    rows = [r.as_dict() for r in results]
    for row in rows:
        for key in ("driver_stops", "controller_stops", "latched"):
            row[key] = "; ".join(row[key])
    paths = write_reports(args.out, "stalls", rows, markdown,
                          {"command": command, "load_average_before": load0,
                           "busy_loops": args.busy_loops, "realtime": args.realtime,
                           "freezes": [r.as_dict() for r in results]})
    print("\n" + table)
    if args.page is not None:
        paths.append(write_page_block(args.page, block, writer, markdown, command))
    print("wrote " + ", ".join(str(x) for x in paths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
