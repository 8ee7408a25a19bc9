"""main() of a process of one or more nodes: parameter files checked first, the nodes built in
order on one executor and one tick loop, shut down in reverse order with a live context.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from musculo_control.errors import MusculoError
from musculo_control.nodes.node_config import check_params_file, params_files_from_argv
from musculo_control.nodes.polled import PolledInputs
from musculo_control.nodes.ros_common import StageNode
from musculo_control.nodes.tick_loop import spin_tick_loops


def _realtime(nodes: Sequence[Node]) -> None:
    """Put the calling (tick) thread on SCHED_FIFO if a node's parameters ask for it (the
    highest priority asked by the nodes of the process)."""
    asked = [(getattr(getattr(n, "params", None), "realtime_priority", 0), n) for n in nodes]
    priority, node = max(asked, key=lambda a: a[0], default=(0, None))
    if not priority or node is None:
        return
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (OSError, AttributeError) as exc:
        node.get_logger().warning(f"realtime_priority {priority}: SCHED_FIFO not permitted "
                                  f"({exc}); running on the normal scheduler")
        return
    node.get_logger().info(f"tick thread on SCHED_FIFO priority {priority}")


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
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda signum, frame: stop.set())
    nodes: list[Node] = []
    code = 0
    try:
        executor = SingleThreadedExecutor()
        for _, _, factory in specs:
            nodes.append(factory())
            executor.add_node(nodes[-1])
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
