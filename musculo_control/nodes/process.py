"""main() of a process of one or more nodes: parameter files checked first, the nodes built in
order on one executor and one tick loop, shut down in reverse order with a live context.
"""

from __future__ import annotations

import gc
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from musculo_control.errors import InputError, MusculoError
from musculo_control.nodes.executors import SINGLE_THREADED, make_executor
from musculo_control.nodes.node_config import check_params_file, params_files_from_argv
from musculo_control.nodes.polled import PolledInputs
from musculo_control.nodes.ros_common import StageNode
from musculo_control.nodes.tick_loop import spin_tick_loops
from musculo_control.realtime import SchedulingProfile


def _realtime(nodes: Sequence[Node]) -> None:
    """Apply the scheduling the nodes' parameters ask for (the strongest of them) from the
    calling thread, which then runs every tick of the process; say what was done and what was
    refused (:mod:`musculo_control.realtime`)."""
    asked = []
    for node in nodes:
        p = getattr(node, "params", None)
        if p is not None:
            asked.append(SchedulingProfile(p.realtime_priority, p.nice, tuple(p.cpu_affinity),
                                           p.lock_memory))
    profile = SchedulingProfile.strongest(asked)
    if not profile.asked or not nodes:
        return
    done, refused = profile.apply()
    logger = nodes[0].get_logger()
    if done:
        logger.info("real-time profile: " + "; ".join(done))
    for what in refused:
        logger.warning(f"real-time profile: not permitted, running without: {what}")


def _executor_kind(nodes: Sequence[Node]) -> str:
    """The executor the nodes' ``executor`` parameters resolved to: one for all of them."""
    kinds = {n.executor_kind for n in nodes if isinstance(n, StageNode)}
    if len(kinds) > 1:
        asked = {n.get_name(): n.executor_kind for n in nodes if isinstance(n, StageNode)}
        raise InputError("executor parameters of one process", "one executor for all its nodes",
                         asked)
    return kinds.pop() if kinds else SINGLE_THREADED


#: One node of a process: its name, its parameter dataclass, what builds it.
NodeSpec = tuple[str, type, Callable[[], Node]]


def run(node_name: str, params_cls: type, factory: Callable[[], Node],
        argv: list[str] | None = None) -> int:
    """main() of a node: :func:`run_nodes` with one node; the exit code."""
    return run_nodes(node_name, [(node_name, params_cls, factory)], argv)


def run_nodes(process_name: str, specs: Sequence[NodeSpec],
              argv: list[str] | None = None) -> int:
    """main() of a process of one or more nodes: check the parameter files for every node,
    build the nodes in order, spin them on one executor and one tick loop
    (:func:`spin_tick_loops`), shut them down in reverse order; the exit code.

    rclpy's own signal handlers are off: SIGINT and SIGTERM only set a stop flag that the
    loop checks between ticks, so each node's ``shutdown()`` still has a live context and can
    send its last messages (the tendon driver's minimum tensions) before the process ends. (A
    KeyboardInterrupt raised by the default handler inside an rclpy call surfaces as an
    unrelated RuntimeError from pybind11 and a non-zero exit code.)
    """
    args = list(sys.argv if argv is None else argv)
    try:
        for path in params_files_from_argv(args):
            for node_name, params_cls, _ in specs:
                check_params_file(path, node_name, params_cls)
    except MusculoError as exc:
        print(f"[FATAL] [{process_name}]: parameter file: {exc}", file=sys.stderr, flush=True)
        return 2
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    nodes: list[Node] = []
    code = 0
    try:
        for _, _, factory in specs:
            nodes.append(factory())
        executor = make_executor(_executor_kind(nodes))
        # the EventsExecutor took SIGINT and SIGTERM for itself when it was made: ours again
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, on_signal)
        for node in nodes:
            executor.add_node(node)
        if any(getattr(getattr(n, "params", None), "gc_freeze", False) for n in nodes):
            gc.collect()
            gc.freeze()
        _realtime(nodes)
        spin_tick_loops([n.tick_loop for n in nodes if isinstance(n, StageNode)],
                        executor, stop)
    except MusculoError as exc:
        print(f"[FATAL] [{process_name}]: {exc}", file=sys.stderr, flush=True)
        code = 1
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        # a second Ctrl-C (or launch's escalation) must not cut the orderly shutdown short
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for node in reversed(nodes):
            _shut_down(node)
        rclpy.try_shutdown()
    return code


def _shut_down(node: Node) -> None:
    """The node's last messages (``shutdown()``), then its destruction; errors reported."""
    shutdown = getattr(node, "shutdown", None)
    if callable(shutdown):
        try:
            shutdown()
        except Exception as exc:  # report, then still destroy the node
            print(f"[ERROR] [{node.get_name()}]: during shutdown: {exc}", file=sys.stderr)
    inputs = getattr(node, "inputs", None)
    if isinstance(inputs, PolledInputs):
        inputs.destroy()
    node.destroy_node()
