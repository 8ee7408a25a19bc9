"""What every node shares: QoS profiles, parameters from a dataclass, diagnostics, the base class.

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

The tick loop and a process's main() are in :mod:`musculo_control.nodes.tick_loop` and
:mod:`musculo_control.nodes.process`, polled inputs in :mod:`musculo_control.nodes.polled`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.logging import LoggingSeverity
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from musculo_control import messages
from musculo_control.loop.health import ERROR, WARN, Health
from musculo_control.loop.timing import Schedule
from musculo_control.nodes.executors import resolve as resolve_executor
from musculo_control.nodes.node_config import (
    CommonNodeParams,
    parameter_defaults,
    parse_parameters,
)
from musculo_control.nodes.polled import JointStateInput, PolledInputs, PolledSubscription
from musculo_control.nodes.tick_loop import TickLoop
from musculo_control.serialized import SerializedJointStateReader
from musculo_control.stamps import Stamp

T = TypeVar("T")
#: A node's parameter dataclass.
P = TypeVar("P", bound=CommonNodeParams)

QOS_STATE_PUB = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                           reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.VOLATILE)
QOS_STATE_SUB = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                           reliability=ReliabilityPolicy.BEST_EFFORT,
                           durability=DurabilityPolicy.VOLATILE)
QOS_GOAL = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: ``operator_stop``: RELIABLE (a stop must not be lost), VOLATILE (any publisher matches,
#: ``ros2 topic pub`` with its defaults too), depth 10 (none of a quick stop-release is lost).
QOS_STOP = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)
QOS_DIAGNOSTICS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.VOLATILE)

#: The rclpy message factory of :mod:`musculo_control.messages`.
MSGS = messages.RclpyMessages()


def now_stamp(node: Node) -> Stamp:
    """The node's clock (ROS time: system or simulated) as a :class:`Stamp`."""
    if isinstance(node, StageNode):
        return Stamp.from_nanoseconds(node.clock_ns())
    return Stamp.from_nanoseconds(node.get_clock().now().nanoseconds)


def clock_reader(node: Node) -> Callable[[], int]:
    """A function reading ``node``'s clock [ns]: the call ``Clock.now`` makes, without the
    ``Time`` object it builds and checks around it (a few microseconds a call, tens on a busy
    computer, and a tick reads the clock a few times); ``Clock.now`` itself where this rclpy's
    clock has no handle."""
    clock = node.get_clock()
    handle = getattr(clock, "handle", None)
    if handle is None or not hasattr(handle, "get_now"):
        return lambda: int(clock.now().nanoseconds)

    def read() -> int:
        with handle:
            return int(handle.get_now().nanoseconds)

    return read


def declare_parameters(node: Node, cls: type[T]) -> T:
    """Declare one parameter per field of ``cls`` and parse the values received.

    Parameters are read-only: rates, timeouts and models are fixed for the life of the node
    (restart it to change them), but for those ``cls.DYNAMIC`` names, which the node checks
    and applies in its own set-parameters callback. Dynamic typing lets ``rate_hz: 125`` (an
    int in YAML) reach :func:`parse`, which accepts it for a float field and names the key on a
    real error.
    """
    values = {}
    dynamic = getattr(cls, "DYNAMIC", ())
    for name, default, doc in parameter_defaults(cls):
        node.declare_parameter(name, default, ParameterDescriptor(
            description=doc, read_only=name not in dynamic, dynamic_typing=True))
        values[name] = node.get_parameter(name).value
    return parse_parameters(cls, values, f"parameters of node '{node.get_name()}'",
                            f"{node.get_name()}.ros__parameters")


class Diagnostics:
    """The node's one DiagnosticStatus on /diagnostics, from its stage's :class:`Health`:
    periodically (:meth:`publish`, which the node's tick loop calls), and at once when the
    status changes (a fault is reported within one tick,
    not within a second) or an input was refused. Refusal warnings the stage collected are
    logged (throttled per topic by the stage)."""

    def __init__(self, node: Node, health: Health, hardware_id: str = "",
                 values: Callable[[], dict[str, str]] | None = None) -> None:
        self.node = node
        self.health = health
        self.name = f"musculo_control: {node.get_name()}"
        self.hardware_id = hardware_id
        self._values = values
        self._pub = node.create_publisher(DiagnosticArray, "/diagnostics", QOS_DIAGNOSTICS)
        self.publish_error = ""  # why the last publication failed, if it did
        health.on_change = self._on_change

    def _on_change(self, level: int, message: str, t_s: float) -> None:
        """A new level: published at once and logged (what a user reads in the console)."""
        self.publish()
        severity = (LoggingSeverity.ERROR if level >= ERROR else
                    LoggingSeverity.WARN if level == WARN else LoggingSeverity.INFO)
        log(self.node.get_logger(), severity, message)

    def publish(self) -> None:
        values = self._values() if self._values is not None else {}
        h = self.health
        status = messages.Status(h.level, self.name, h.message, self.hardware_id, values)
        try:
            self._pub.publish(messages.diagnostic_array_msg(MSGS, now_stamp(self.node), [status]))
        except Exception as exc:  # the context may be going down: do not crash
            self.publish_error = f"{type(exc).__name__}: {exc}"

    def log_warnings(self) -> None:
        """Log what the stage refused since the last call, and publish at once: a refused
        input is news (the warnings are throttled per topic, so this cannot flood)."""
        if self.health.warnings:
            logger = self.node.get_logger()
            for text in self.health.take_warnings():
                log(logger, LoggingSeverity.WARN, text)
            self.publish()


def log(logger: RcutilsLogger, severity: LoggingSeverity, message: str) -> None:
    """``logger.log(message, severity)`` without its search for the caller: rclpy inspects the
    stack and reads the caller's source file at every call (to key its once and throttle
    filters by call site, which these messages do not use), about a millisecond of CPU on the
    2-core test machine, and a stage whose health flickers on a loaded computer logs tens of
    changes a second. This makes the call to rcutils that rclpy's logger makes itself
    (the same on Humble, Jazzy and Kilted), naming this function as the call site; where that
    call is missing, the logger's own."""
    if not logger.is_enabled_for(severity):
        return
    emit = getattr(_rclpy, "rclpy_logging_rcutils_log", None)
    if emit is None:
        logger.log(message, severity)
        return
    emit(severity, logger.name, message, "log", __file__, _LOG_LINE)


#: The line :func:`log` gives rcutils as its call site.
_LOG_LINE = log.__code__.co_firstlineno


class StageNode(Node, Generic[P]):
    """What every node of the suite repeats: parameters from its dataclass, the tick loop,
    polled inputs, the diagnostics of its stage, the clock. A subclass builds its stage,
    its publishers and subscriptions, and registers its jobs with :meth:`every`."""

    def __init__(self, node_name: str, params_cls: type[P], *,
                 wall_clock: bool | None = None) -> None:
        super().__init__(node_name)
        self.params: P = declare_parameters(self, params_cls)
        #: the executor its process spins (nodes/executors.py): ``events`` or ``single_threaded``
        self.executor_kind, warning = resolve_executor(
            self.params.executor, bool(self.get_parameter("use_sim_time").value))
        if warning:
            self.get_logger().warning(warning)
        self.inputs = PolledInputs(self)
        self.tick_loop = TickLoop(self, self.params.housekeeping_period_s,
                                  wall_clock)
        self.diag: Diagnostics | None = None
        # a consumer of other nodes' outputs, on simulated time with the mock's lockstep
        self._lockstep_wait_s = (float(self.params.lockstep_wait_s)  # type: ignore[attr-defined]
                                 if getattr(self.params, "lockstep", False)
                                 and not self.tick_loop.wall_clock else None)
        self._awaited: list[tuple[PolledSubscription, float]] = []
        #: the node's clock (ROS time: system or simulated) [ns]
        self.clock_ns: Callable[[], int] = clock_reader(self)

    def clock_s(self) -> float:
        """The node's clock (ROS time: system or simulated) [s]."""
        return self.clock_ns() * 1e-9

    def subscribe_awaited(self, msg_type: Any, topic: str, lead_s: float,
                          stamp_of: Callable[[Any], float] | None = None) -> PolledSubscription:
        """A polled input (newest sample) that :meth:`await_lockstep` waits for on simulated
        time in lockstep: its sample stamped ``lead_s`` before the tick or later
        (:mod:`musculo_control.loop.lockstep`). ``stamp_of``: a message's stamp [s], by
        default its header's; read only in lockstep, never on the wall clock."""
        if self._lockstep_wait_s is None:
            return self.inputs.subscribe(msg_type, topic)
        sub = self.inputs.subscribe(msg_type, topic,
                                    stamp_of=stamp_of or (lambda m: messages.stamp_of(m).seconds))
        self._awaited.append((sub, lead_s))
        return sub

    def joint_states_in(self, topic: str, names: Sequence[str], what: str, *,
                        required: Sequence[str] = ("position",), finite: bool = False,
                        depth: int = 1, lead_s: float | None = None,
                        stamped: bool = False, qos: Any = None) -> JointStateInput:
        """A polled ``JointState`` input taken as bytes and read in ``names``' order
        (:class:`~musculo_control.nodes.polled.JointStateInput`; ``what``: what a name is, for
        refusals); with ``lead_s``, awaited as :meth:`subscribe_awaited` says; ``stamped``: its
        stamps read as it is taken, so that the node may wait for a fresh one
        (:meth:`~musculo_control.nodes.polled.PolledSubscription.await_stamp`) itself."""
        reader = SerializedJointStateReader(MSGS, messages.NameOrder(topic, names, what), required,
                                            finite)
        awaited = lead_s is not None and self._lockstep_wait_s is not None
        sub = self.inputs.subscribe(JointState, topic, depth, qos=qos, raw=True,
                                    stamp_of=reader.stamp_s if awaited or stamped else None)
        if awaited:
            self._awaited.append((sub, float(lead_s)))  # type: ignore[arg-type]
        return JointStateInput(sub, reader)

    def await_lockstep(self, now_s: float) -> None:
        """On simulated time in lockstep (``lockstep`` parameter): wait until each input of
        :meth:`subscribe_awaited` has received its sample stamped ``now_s - lead`` or later,
        which the mock arm's lockstep says was sent. Otherwise nothing."""
        if self._lockstep_wait_s is None:
            return
        for sub, lead_s in self._awaited:
            sub.await_stamp(now_s - lead_s, self._lockstep_wait_s)

    def watch(self, health: Health, hardware_id: str,
              values: Callable[[], dict[str, str]] | None = None) -> Diagnostics:
        """Publish ``health`` on /diagnostics (with ``values`` and the tick loop's counts)."""
        def all_values() -> dict[str, str]:
            return {**(values() if values is not None else {}), **self.tick_loop.values()}

        self.diag = Diagnostics(self, health, hardware_id, all_values)
        # on the tick loop, not an rclpy timer: on simulated time rclpy's EventsExecutor ran a
        # timer of the ROS clock only when another event woke it
        self.tick_loop.every(self.params.diagnostics_period_s, self.diag.publish, report=False)
        return self.diag

    def every(self, period_s: float, work: Callable[[], None]) -> Schedule:
        """Run ``work`` every ``period_s``; the stage's refusal warnings are logged after it."""
        def job() -> None:
            work()
            if self.diag is not None:
                self.diag.log_warnings()

        return self.tick_loop.every(period_s, job)

    def shutdown(self) -> None:
        """Called once on the way out, with the context still alive."""
        return None
