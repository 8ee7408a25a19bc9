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
parallelism (the GIL). So a node's periodic work runs in :class:`Ticker`: in real time its own
loop sleeps to the next deadline (deadlines step by the period from the previous deadline, so
the loop does not drift; a tick later than a whole period is counted and skipped, not
bunched), and every ``housekeeping_period_s`` it lets the executor run whatever is ready
(parameter services, goal subscription, the diagnostics timer) without blocking. On simulated
time (``use_sim_time``) the ticks are ordinary rclpy timers on the ROS clock, driven by /clock:
correct at any real-time factor, at the executor's price.

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
from collections.abc import Callable
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

from musculo_control.errors import MusculoError
from musculo_control.loop.rejections import Rejections
from musculo_control.nodes import conversions as cv
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

#: The rclpy message factory of :mod:`musculo_control.nodes.conversions`.
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
    """One DiagnosticStatus per node on /diagnostics: periodically, and at once on a change
    of level (so a fault is reported within one tick, not within a second)."""

    def __init__(self, node: Node, period_s: float, hardware_id: str = "",
                 values: Callable[[], dict[str, str]] | None = None) -> None:
        self.node = node
        self.name = f"musculo_control: {node.get_name()}"
        self.hardware_id = hardware_id
        self._values = values
        self._pub = node.create_publisher(DiagnosticArray, "/diagnostics", QOS_DIAGNOSTICS)
        self.level = cv.STALE
        self.message = "starting"
        self._published_level: int | None = None
        self.publish_error = ""  # why the last publication failed, if it did
        node.create_timer(period_s, self.publish)

    def update(self, level: int, message: str) -> None:
        """Set the status; publishes at once when the level changed (cheap otherwise)."""
        self.level, self.message = level, message
        if level != self._published_level:
            self.publish()

    def publish(self) -> None:
        values = self._values() if self._values is not None else {}
        status = cv.Status(self.level, self.name, self.message, self.hardware_id, values)
        try:
            self._pub.publish(cv.diagnostic_array_msg(MSGS, now_stamp(self.node), [status]))
            self._published_level = self.level
        except Exception as exc:  # the context may be going down: do not crash
            self.publish_error = f"{type(exc).__name__}: {exc}"


class InputGuard:
    """Refusals of input messages: counted, and warned about at most once per interval per
    topic (naming the topic and the fault)."""

    def __init__(self, node: Node, throttle_s: float) -> None:
        self.node = node
        self.rejections = Rejections(throttle_s)
        self._clock = node.get_clock()

    def refuse(self, topic: str, reason: str) -> None:
        now_s = self._clock.now().nanoseconds * 1e-9
        text = self.rejections.refuse(topic, reason, now_s)
        if text is not None:
            self.node.get_logger().warning(text)

    def joint_state(self, topic: str, msg: Any, order: cv.NameOrder, stamps: Any) -> Any:
        """Positions and velocities of a JointState in ``order``, or None after refusing it
        (names, non-finite values, a stamp not after the previous one: ``stamps.check``)."""
        arrays = cv.read_joint_state(msg, order, required=("position", "velocity"), finite=True)
        if isinstance(arrays, str):
            self.refuse(topic, arrays)
            return None
        late = stamps.check(arrays.stamp)
        if late is not None:
            self.refuse(topic, late)
            return None
        return arrays


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

    def subscribe(self, msg_type: Any, topic: str, depth: int = 1) -> PolledSubscription:
        """Best-effort, keep-last ``depth`` (1: only the newest matters)."""
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                         reliability=ReliabilityPolicy.BEST_EFFORT,
                         durability=DurabilityPolicy.VOLATILE)
        return PolledSubscription(self.node, msg_type, topic, qos)

    def destroy(self) -> None:
        self.node.destroy_node()


class Ticker:
    """A node's periodic work (see the module docstring): a tick loop, or rclpy timers."""

    def __init__(self, node: Node, housekeeping_period_s: float,
                 wall_clock: bool | None = None) -> None:
        self.node = node
        self.housekeeping_period_s = housekeeping_period_s
        # the loop runs on the wall clock unless the node runs on simulated time
        self.wall_clock = (not node.get_parameter("use_sim_time").value
                           if wall_clock is None else wall_clock)
        self._entries: list[tuple[float, Callable[[], None]]] = []
        self.late_ticks = 0  # ticks that started more than one period late (skipped ahead)

    def every(self, period_s: float, work: Callable[[], None]) -> None:
        """Call ``work`` every ``period_s`` (wall time, or ROS time on simulated time)."""
        if self.wall_clock:
            self._entries.append((period_s, work))
        else:
            self.node.create_timer(period_s, work)

    def spin(self, executor: SingleThreadedExecutor, stop: threading.Event) -> None:
        """Run until ``stop`` is set (by SIGINT or SIGTERM, see :func:`run`)."""
        if not self._entries:
            spin_until(executor, stop)
            return
        now = time.monotonic()
        deadlines = [now + period for period, _ in self._entries]
        housekeeping = now
        while not stop.is_set():
            wake = min(min(deadlines), housekeeping)
            delay = wake - time.monotonic()
            if delay > 0.0:
                time.sleep(delay)
            for i, (period, work) in enumerate(self._entries):
                now = time.monotonic()
                if now >= deadlines[i]:
                    work()
                    deadlines[i] += period
                    if now - deadlines[i] > period:  # more than a period behind: skip ahead
                        self.late_ticks += 1
                        deadlines[i] = now + period
            if time.monotonic() >= housekeeping:
                self._housekeeping(executor)
                housekeeping += self.housekeeping_period_s

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


def _realtime(node: Node) -> None:
    """Put the calling (tick) thread on SCHED_FIFO if the node's parameters ask for it."""
    params = getattr(node, "params", None)
    priority = getattr(params, "realtime_priority", 0)
    if not priority:
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


def run(node_name: str, params_cls: type, factory: Callable[[], Node],
        argv: list[str] | None = None) -> int:
    """main() of a node: check parameter files, spin, shut down in order; the exit code.

    rclpy's own signal handlers are off: SIGINT and SIGTERM only set a stop flag that the
    loop checks between ticks, so the node's ``shutdown()`` still has a live context and can
    send its last messages (the tendon driver's minimum tensions) before the process ends. (A
    KeyboardInterrupt raised by the default handler inside an rclpy call surfaces as an
    unrelated RuntimeError from pybind11 and a non-zero exit code.)
    """
    args = list(sys.argv if argv is None else argv)
    try:
        for path in params_files_from_argv(args):
            check_params_file(path, node_name, params_cls)
    except MusculoError as exc:
        print(f"[FATAL] [{node_name}]: parameter file: {exc}", file=sys.stderr, flush=True)
        return 2
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda signum, frame: stop.set())
    node: Node | None = None
    code = 0
    try:
        node = factory()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        _realtime(node)
        ticker = getattr(node, "ticker", None)
        if isinstance(ticker, Ticker):
            ticker.spin(executor, stop)
        else:
            spin_until(executor, stop)
    except MusculoError as exc:
        print(f"[FATAL] [{node_name}]: {exc}", file=sys.stderr, flush=True)
        code = 1
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        # a second Ctrl-C (or launch's escalation) must not cut the orderly shutdown short
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if node is not None:
            shutdown = getattr(node, "shutdown", None)
            if callable(shutdown):
                try:
                    shutdown()
                except Exception as exc:  # report, then still destroy the node
                    print(f"[ERROR] [{node_name}]: during shutdown: {exc}", file=sys.stderr)
            inputs = getattr(node, "inputs", None)
            if isinstance(inputs, PolledInputs):
                inputs.destroy()
            node.destroy_node()
        rclpy.try_shutdown()
    return code
