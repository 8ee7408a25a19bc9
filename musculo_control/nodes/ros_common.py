"""What every node shares: QoS profiles, parameters from a dataclass, diagnostics, main().

QoS (why, for a control loop):

- :data:`QOS_STATE_PUB` for every stream of states and commands: keep only the newest sample
  (a controller acts on the present; a queue of old samples is worse than a dropped one),
  RELIABLE so that tools with the default reliable QoS (robot_state_publisher, RViz,
  ``ros2 topic echo``, rosbag2) can subscribe, VOLATILE.
- :data:`QOS_STATE_SUB` for the same streams in the control path: BEST_EFFORT, depth 1. A
  best-effort reader matches a reliable writer; it never asks for a retransmission of a sample
  that the next one makes obsolete. Every consumer checks its inputs' age anyway.
- :data:`QOS_GOAL` for ``hand_goal``: RELIABLE and TRANSIENT_LOCAL, depth 1: a goal is sent
  once, on change, and a consumer that (re)starts later still gets the last one.
- :data:`QOS_DIAGNOSTICS`: RELIABLE, VOLATILE, depth 10 (what diagnostic_aggregator uses).

Executor and tick loop: one node per process. rclpy's SingleThreadedExecutor costs 200 to
300 microseconds of CPU per wake-up on the 2-core test machine (it rebuilds its wait set from
every timer, subscription, service and QoS-event waitable at each wake-up), which at 500 Hz is
a quarter of a core per node before any work. A MultiThreadedExecutor adds locking and no
parallelism (the GIL). So a node's periodic work runs in :class:`TickLoop`, whose deadlines are
:class:`~musculo_control.loop.timing.Schedule` objects (the same rules, tested on a fake clock:
a drift-free grid, a late tick counted and the grid restarted from it, never two ticks
bunched). In real time the loop sleeps to the next deadline and every
``housekeeping_period_s`` lets the executor run whatever is ready (parameter and acknowledge
services, the gauge topic, the diagnostics timer) without blocking. On simulated time
(``use_sim_time``) rclpy timers on the ROS clock, driven by /clock, wake the same schedules.

Polled inputs (:class:`PolledInputs`): rclpy's executor costs a few hundred microseconds of
CPU per wake-up on the 2-core test machine, so a node that would wake for every one of 500
joint states per second only to keep the newest spends a quarter of a core on nothing. A node
that acts at its own tick (dynamics at 20 Hz, the QP at 125 Hz, the drivers' output ticks)
instead takes the newest sample of such a stream at the tick, from a subscription that the
executor never waits on: DDS keeps the newest sample (KEEP_LAST 1) in its own thread, and the
tick takes it with the call rclpy's executor and ``wait_for_message`` use themselves. The
subscriptions live on a hidden helper node (``_<node>_inputs``, same namespace) that is never
spun; command-line topic remaps do not apply to it (use namespaces instead).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import (
    ExternalShutdownException,
    ShutdownException,
    SingleThreadedExecutor,
    TimeoutException,
)
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

from musculo_control import messages as cv
from musculo_control.errors import MusculoError
from musculo_control.loop.health import ERROR, WARN, Health
from musculo_control.loop.timing import Schedule
from musculo_control.nodes.node_config import (
    check_params_file,
    parameter_defaults,
    params_files_from_argv,
    parse_parameters,
)
from musculo_control.stamps import Stamp

T = TypeVar("T")

QOS_STATE_PUB = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                           reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.VOLATILE)
QOS_STATE_SUB = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                           reliability=ReliabilityPolicy.BEST_EFFORT,
                           durability=DurabilityPolicy.VOLATILE)
QOS_GOAL = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)
QOS_DIAGNOSTICS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.VOLATILE)

#: The rclpy message factory of :mod:`musculo_control.messages`.
MSGS = cv.RclpyMessages()


def now_stamp(node: Node) -> Stamp:
    """The node's clock (ROS time: system or simulated) as a :class:`Stamp`."""
    return Stamp.from_nanoseconds(node.get_clock().now().nanoseconds)


def declare_parameters(node: Node, cls: type[T]) -> T:
    """Declare one read-only parameter per field of ``cls`` and parse the values received.

    Parameters are read-only: rates, timeouts and models are fixed for the life of the node
    (restart it to change them). Dynamic typing lets ``rate_hz: 125`` (an int in YAML) reach
    :func:`parse`, which accepts it for a float field and names the key on a real error.
    """
    values = {}
    for name, default, doc in parameter_defaults(cls):
        node.declare_parameter(name, default, ParameterDescriptor(
            description=doc, read_only=True, dynamic_typing=True))
        values[name] = node.get_parameter(name).value
    return parse_parameters(cls, values, f"parameters of node '{node.get_name()}'",
                            f"{node.get_name()}.ros__parameters")


class Diagnostics:
    """The node's one DiagnosticStatus on /diagnostics, from its stage's :class:`Health`:
    periodically, and at once when the status changes (a fault is reported within one tick,
    not within a second) or an input was refused. Refusal warnings the stage collected are
    logged (throttled per topic by the stage)."""

    def __init__(self, node: Node, health: Health, period_s: float, hardware_id: str = "",
                 values: Callable[[], dict[str, str]] | None = None) -> None:
        self.node = node
        self.health = health
        self.name = f"musculo_control: {node.get_name()}"
        self.hardware_id = hardware_id
        self._values = values
        self._pub = node.create_publisher(DiagnosticArray, "/diagnostics", QOS_DIAGNOSTICS)
        self.publish_error = ""  # why the last publication failed, if it did
        health.on_change = self._on_change
        node.create_timer(period_s, self.publish)

    def _on_change(self, level: int, message: str, t_s: float) -> None:
        """A new level: published at once and logged (what a user reads in the console)."""
        self.publish()
        logger = self.node.get_logger()
        # rclpy fixes a call site's severity on first use: one call site per severity
        if level >= ERROR:
            logger.error(message)
        elif level == WARN:
            logger.warning(message)
        else:
            logger.info(message)

    def publish(self) -> None:
        values = self._values() if self._values is not None else {}
        h = self.health
        status = cv.Status(h.level, self.name, h.message, self.hardware_id, values)
        try:
            self._pub.publish(cv.diagnostic_array_msg(MSGS, now_stamp(self.node), [status]))
        except Exception as exc:  # the context may be going down: do not crash
            self.publish_error = f"{type(exc).__name__}: {exc}"

    def log_warnings(self) -> None:
        """Log what the stage refused since the last call, and publish at once: a refused
        input is news (the warnings are throttled per topic, so this cannot flood)."""
        if self.health.warnings:
            logger = self.node.get_logger()
            for text in self.health.take_warnings():
                logger.warning(text)
            self.publish()


def _never_called(msg: Any) -> None:  # the executor never spins the input node
    return None


class PolledSubscription:
    """The newest message of one topic, taken when asked (see :class:`PolledInputs`)."""

    def __init__(self, node: Node, msg_type: Any, topic: str, qos: QoSProfile) -> None:
        self.topic = topic
        self._sub = node.create_subscription(msg_type, topic, _never_called, qos)
        self._type = msg_type

    def take_newest(self) -> Any | None:
        """The newest message received since the last call, or ``None``."""
        newest = None
        handle = self._sub.handle
        with handle:
            while True:
                got = handle.take_message(self._type, False)
                if got is None:
                    return newest
                newest = got[0]

    def take_all(self) -> list[Any]:
        """Every message queued since the last call (at most the QoS depth), oldest first."""
        out: list[Any] = []
        handle = self._sub.handle
        with handle:
            while True:
                got = handle.take_message(self._type, False)
                if got is None:
                    return out
                out.append(got[0])


class PolledInputs:
    """A hidden, never-spun node holding a node's polled subscriptions."""

    def __init__(self, owner: Node) -> None:
        self.node = Node(f"_{owner.get_name()}_inputs", namespace=owner.get_namespace(),
                         use_global_arguments=False, start_parameter_services=False,
                         enable_rosout=False)

    def subscribe(self, msg_type: Any, topic: str, depth: int = 1,
                  qos: QoSProfile | None = None) -> PolledSubscription:
        """Best-effort, keep-last ``depth`` (1: only the newest matters), unless ``qos``."""
        if qos is None:
            qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                             reliability=ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.VOLATILE)
        return PolledSubscription(self.node, msg_type, topic, qos)

    def destroy(self) -> None:
        self.node.destroy_node()


class TickLoop:
    """A node's periodic work on :class:`Schedule` deadlines (see the module docstring)."""

    def __init__(self, node: Node, housekeeping_period_s: float,
                 wall_clock: bool | None = None) -> None:
        self.node = node
        self.housekeeping_period_s = housekeeping_period_s
        # the loop runs on the wall clock unless the node runs on simulated time
        self.wall_clock = (not node.get_parameter("use_sim_time").value
                           if wall_clock is None else wall_clock)
        self.jobs: list[tuple[Schedule, Callable[[], None]]] = []

    def every(self, period_s: float, work: Callable[[], None]) -> Schedule:
        """Call ``work`` every ``period_s`` (wall time, or ROS time on simulated time)."""
        if self.wall_clock:
            schedule = Schedule(period_s, time.monotonic())
            self.jobs.append((schedule, work))
            return schedule
        now = self.node.get_clock().now().nanoseconds * 1e-9
        schedule = Schedule(period_s, now)

        def on_timer() -> None:
            # a late rclpy timer may fire again before /clock has moved: the schedule says no
            if schedule.due(self.node.get_clock().now().nanoseconds * 1e-9):
                work()

        self.node.create_timer(period_s, on_timer)
        self.jobs.append((schedule, work))
        return schedule

    def values(self) -> dict[str, str]:
        """Late and skipped ticks of every job (for diagnostics)."""
        return {f"job {i} ({1.0 / s.period_s:g} Hz) ticks / late / skipped":
                f"{s.ticks} / {s.late} / {s.skipped}" for i, (s, _) in enumerate(self.jobs)}

    def spin(self, executor: SingleThreadedExecutor, stop: threading.Event) -> None:
        """Run until ``stop`` is set (by SIGINT or SIGTERM, see :func:`run`)."""
        spin_tick_loops([self], executor, stop)

    @staticmethod
    def _housekeeping(executor: SingleThreadedExecutor, most: int = 10) -> None:
        """Run the callbacks that are ready now (at most ``most``), without blocking."""
        for _ in range(most):
            try:
                handler, _, _ = executor.wait_for_ready_callbacks(timeout_sec=0.0)
            except (TimeoutException, ShutdownException):
                return
            handler()
            exc = handler.exception()
            if exc is not None:
                raise exc


class StageNode(Node):
    """What every node of the suite repeats: parameters from its dataclass, the tick loop,
    polled inputs, the diagnostics of its stage, the clock. A subclass builds its stage,
    its publishers and subscriptions, and registers its jobs with :meth:`every`."""

    def __init__(self, node_name: str, params_cls: type[T], *,
                 wall_clock: bool | None = None) -> None:
        super().__init__(node_name)
        self.params = declare_parameters(self, params_cls)
        self.inputs = PolledInputs(self)
        self.tick_loop = TickLoop(self, self.params.housekeeping_period_s,  # type: ignore[attr-defined]
                                  wall_clock)
        self.diag: Diagnostics | None = None
        self._injection_values: Callable[[], dict[str, str]] = dict

    def clock_s(self) -> float:
        """The node's clock (ROS time: system or simulated) [s]."""
        return self.get_clock().now().nanoseconds * 1e-9

    def watch(self, health: Health, hardware_id: str,
              values: Callable[[], dict[str, str]] | None = None) -> Diagnostics:
        """Publish ``health`` on /diagnostics (with ``values`` and the tick loop's counts)."""
        def all_values() -> dict[str, str]:
            return {**(values() if values is not None else {}), **self.tick_loop.values(),
                    **self._injection_values()}

        self.diag = Diagnostics(self, health, self.params.diagnostics_period_s,  # type: ignore[attr-defined]
                                hardware_id, all_values)
        return self.diag

    def every(self, period_s: float, work: Callable[[], None]) -> Schedule:
        """Run ``work`` every ``period_s``; the stage's refusal warnings are logged after it."""
        def job() -> None:
            work()
            if self.diag is not None:
                self.diag.log_warnings()

        return self.tick_loop.every(period_s, job)

    def offer_injection(self, injector: Any, duration_s: float,
                        now_s: Callable[[], float] | None = None) -> None:
        """Serve ``~/inject_fault`` (std_srvs/Trigger): the fault of ``injector`` starts now,
        for ``duration_s`` (tests and the graph's fault matrix). ``now_s``: the time the
        injector counts in (default: this node's clock)."""
        from std_srvs.srv import Trigger

        clock = now_s or self.clock_s

        def start(request: Any, response: Any) -> Any:
            now = clock()
            injector.start_now(now, duration_s)
            response.success = True
            response.message = f"{injector.name} from {now:.6f} s for {duration_s} s"
            self.get_logger().warning(f"fault injection: {response.message}")
            return response

        self.create_service(Trigger, "~/inject_fault", start)

        def values() -> dict[str, str]:
            # the onset (when the fault first touched data), from which the graph's fault
            # matrix counts the detection time, as the runner's does
            onset = injector.onset_s
            return {"injected fault": injector.name, "injection target": injector.target,
                    "injection onset [s]": "-" if onset is None
                    else f"{onset + injector.origin_s:.6f}"}

        self._injection_values = values

    def shutdown(self) -> None:
        """Called once on the way out, with the context still alive."""
        return None


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


#: Poll period of a plain executor loop for the stop request [s].
_STOP_POLL_S = 0.1


def spin_until(executor: SingleThreadedExecutor, stop: threading.Event) -> None:
    """The executor's spin, until ``stop`` is set."""
    while not stop.is_set():
        executor.spin_once(timeout_sec=_STOP_POLL_S)


def spin_tick_loops(loops: Sequence[TickLoop], executor: SingleThreadedExecutor,
                    stop: threading.Event) -> None:
    """Run the jobs of every loop in ``loops`` (the nodes of one process) until ``stop``.

    Wall-clock jobs: one thread sleeps to the earliest deadline of all of them and runs every
    job that is due, in the order the nodes were given; every (shortest) housekeeping period
    the executor serves what is ready. Jobs on simulated time are rclpy timers on the ROS
    clock, which the executor runs. A process with both (the potentiometer node polls on the
    wall clock on simulated time too, beside nodes on /clock) runs its wall-clock jobs in a
    second thread while the executor spins in this one: an executor woken every poll period
    rebuilds its wait set each time and would fall behind /clock.
    """
    wall = [job for loop in loops if loop.wall_clock for job in loop.jobs]
    timers = any(not loop.wall_clock and loop.jobs for loop in loops)
    if not wall:
        spin_until(executor, stop)
        return
    housekeeping_s = min(loop.housekeeping_period_s for loop in loops)
    if not timers:
        _wall_loop(wall, stop, executor, housekeeping_s)
        return
    failed: list[BaseException] = []

    def wall_thread() -> None:
        try:
            _wall_loop(wall, stop, None, housekeeping_s)
        except BaseException as exc:  # handed to the main thread, which re-raises it
            failed.append(exc)
            stop.set()

    thread = threading.Thread(target=wall_thread, name="wall-clock jobs", daemon=True)
    thread.start()
    try:
        spin_until(executor, stop)
    finally:
        stop.set()
        thread.join()
    if failed:
        raise failed[0]


def _wall_loop(jobs: Sequence[tuple[Schedule, Callable[[], None]]], stop: threading.Event,
               executor: SingleThreadedExecutor | None, housekeeping_s: float) -> None:
    """Sleep to the earliest deadline, run what is due; with ``executor``, let it serve what
    is ready every ``housekeeping_s``."""
    now = time.monotonic()
    for schedule, _ in jobs:
        schedule.next_s = now
    housekeeping = Schedule(housekeeping_s, now)
    schedules = [s for s, _ in jobs] + ([housekeeping] if executor is not None else [])
    while not stop.is_set():
        delay = min(s.next_s for s in schedules) - time.monotonic()
        if delay > 0.0:
            time.sleep(delay)
        for schedule, work in jobs:
            if schedule.due(time.monotonic()):
                work()
        if executor is not None and housekeeping.due(time.monotonic()):
            TickLoop._housekeeping(executor)


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
