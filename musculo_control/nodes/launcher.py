"""Starting the node graph as processes, without ``ros2 launch`` (ROS-free).

For machines with rclpy but no launch system (the ROS 2 wheels from PyPI) and for the tests:
each process of :func:`~musculo_control.nodes.graph.graph_processes` (one per node, or the
mock arm alone, the drivers in ``hardware_process`` and the controller's nodes in
``control_process``) runs as ``python -m
musculo_control.nodes.<name> [nodes] --ros-args --params-file <file> --params-file
<overrides>``, the command line ``ros2 launch`` gives it, with the environment of the caller
(the ROS 2 wheels' bootstrapper sets the library path in it) and, if asked, its own
``ROS_DOMAIN_ID``; the mock graph's discovery stays on this machine, and every graph's
processes talk over UDP (:mod:`musculo_control.nodes.discovery`). Output goes to one log file
per process. Nodes are addressed by node name; a node's process is the one that runs it
(signals to a node reach every node of its process). :meth:`GraphProcesses.stop` interrupts
every process (each node sends its last safe messages) and kills what does not end in time.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from musculo_control.errors import InputError
from musculo_control.nodes.discovery import graph_transport, localhost_discovery
from musculo_control.nodes.graph import (
    GraphOptions,
    NodeLaunch,
    ProcessLaunch,
    graph_processes,
    write_parameters,
)

# spaced by the pid from other runs on the machine, then one apart per graph of this process
_DOMAINS = itertools.count()


def private_domain_id() -> int:
    """A ROS_DOMAIN_ID for one graph, unlikely to be shared with another run on the machine
    (1-100: inside the range every DDS implementation maps to ports)."""
    return 1 + (os.getpid() * 7 + next(_DOMAINS)) % 100


class GraphProcesses:
    """The node graph of ``options`` as child processes (a context manager)."""

    def __init__(self, options: GraphOptions, workdir: Path, domain_id: int | None = None,
                 env: dict[str, str] | None = None) -> None:
        options.check()
        self.options = options
        self.launches: dict[str, ProcessLaunch] = {p.name: p for p in graph_processes(options)}
        self.nodes: dict[str, NodeLaunch] = {n.name: n for p in self.launches.values()
                                             for n in p.nodes}
        #: node name -> the name of the process that runs it
        self.process_of: dict[str, str] = {n.name: p.name for p in self.launches.values()
                                           for n in p.nodes}
        self.workdir = Path(workdir)
        self.env = dict(os.environ if env is None else env)
        if options.mock:  # the mock graph stays on this machine
            self.env.update(localhost_discovery(self.env))
        self.env.update(graph_transport(self.env))  # a paused process must hear again
        if domain_id is not None:
            self.env["ROS_DOMAIN_ID"] = str(domain_id)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: dict[str, IO[bytes]] = {}
        self.exit_codes: dict[str, int] = {}

    def command(self, name: str) -> list[str]:
        """The command line of the process of node ``name``."""
        launch = self.launches[self.process_of[name]]
        return [sys.executable, "-m", launch.module, *launch.arguments, "--ros-args",
                "--params-file", str(self.options.parameter_file),
                "--params-file", str(self._overrides_file())]

    def _overrides_file(self) -> Path:
        return self.workdir / "graph_parameters.yaml"

    def start(self, names: list[str] | None = None) -> None:
        """Start the nodes ``names`` (default: all), in graph order."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        write_parameters(self._overrides_file(), self.nodes.values())
        for name in names if names is not None else list(self.nodes):
            if name not in self.nodes:
                raise InputError("node", f"one of {list(self.nodes)}", name)
            process = self.process_of[name]
            if process in self.processes:
                continue  # started with another node of its process
            log = open(self.workdir / f"{process}.log", "wb")  # noqa: SIM115 - closed in stop()
            self._logs[process] = log
            self.processes[process] = subprocess.Popen(
                self.command(name), stdout=log, stderr=subprocess.STDOUT, env=self.env,
                start_new_session=True)

    def log_path(self, name: str) -> Path:
        """The log file of node ``name``'s process."""
        return self.workdir / f"{self.process_of[name]}.log"

    def log(self, name: str) -> str:
        path = self.log_path(name)
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def alive(self, name: str) -> bool:
        proc = self.processes.get(self.process_of[name])
        return proc is not None and proc.poll() is None

    def pid(self, name: str) -> int:
        return self.processes[self.process_of[name]].pid

    def send(self, name: str, signum: int) -> None:
        """Send ``signum`` to node ``name``'s process (SIGKILL to kill it, SIGSTOP to freeze
        it)."""
        proc = self.processes[self.process_of[name]]
        if proc.poll() is None:
            os.kill(proc.pid, signum)

    def stop(self, timeout_s: float = 10.0) -> dict[str, int]:
        """Interrupt every process, wait for it, kill what hangs; the exit codes by process."""
        for proc in self.processes.values():
            if proc.poll() is None:
                try:
                    os.kill(proc.pid, signal.SIGCONT)  # a frozen node must hear the interrupt
                    proc.send_signal(signal.SIGINT)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout_s
        for name, proc in self.processes.items():
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self.exit_codes[name] = int(proc.returncode)
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        return dict(self.exit_codes)

    def __enter__(self) -> GraphProcesses:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
