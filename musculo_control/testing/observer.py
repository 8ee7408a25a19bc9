"""Watching a running node graph from outside: the tests' and the graph fault matrix's eyes.

:class:`GraphObserver` is an rclpy node, spun in a thread of its own, that records what the
graph says on its topics (every command, the driver's output in newtons, stamps of every
stream, /diagnostics, the mock's ground truth, the controller's state) with the time it was
received on the observer's clock (the simulated one when the graph runs on ``/clock``), and
that can act like an operator: send goals, push with the force gauge, acknowledge latched
faults.

Its node is spun by a thread of its own, and an rclpy executor must not find an entity of the
node it waits on destroyed under it (it raises ``InvalidHandle`` and stops spinning): so
publishers and clients the tests add or remove go through :meth:`GraphObserver.between_spins`,
and an error that stops the spinning is raised by :meth:`GraphObserver.wait_until` rather than
left to look like a stalled clock.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PointStamped, PoseStamped
from musculo_control_msgs.msg import ControllerState, DynamicsSnapshot
from rcl_interfaces.srv import SetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64
from std_srvs.srv import Trigger
from trajectory_msgs.msg import MultiDOFJointTrajectory

from musculo_control import messages, msg_types
from musculo_control.estimation.snapshot_codec import SnapshotCodec
from musculo_control.loop.parts import LoopParts
from musculo_control.loop.state_record import controller_state_layout
from musculo_control.nodes.ros_common import (
    MSGS,
    QOS_GOAL,
    QOS_STATE_SUB,
    QOS_STOP,
)
from musculo_control.safety.operator_stop import STOP_TOPIC
from musculo_control.stamps import Stamp

FloatArray = npt.NDArray[np.float64]
T = TypeVar("T")
#: Wall time an action waits for the spinning thread to run it [s].
_BETWEEN_SPINS_TIMEOUT_S = 30.0


@dataclass
class Recording:
    """What one topic brought: receive time [s] (observer clock), stamp [s], values."""

    t: list[float] = field(default_factory=list)
    stamp: list[float] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)

    def add(self, t: float, stamp: float, value: Any) -> None:
        self.t.append(t)
        self.stamp.append(stamp)
        self.values.append(value)

    def since(self, t0: float) -> Recording:
        i = int(np.searchsorted(np.asarray(self.t), t0))
        return Recording(self.t[i:], self.stamp[i:], self.values[i:])

    def __len__(self) -> int:
        return len(self.t)


class Diagnostic:
    """One DiagnosticStatus as received."""

    def __init__(self, t: float, status: messages.Status, stamp: float | None = None) -> None:
        self.t = t  # receive time [s] (observer clock)
        #: when the node published it [s] (its header; a node publishes at once on a change,
        #: so this is when it found it, however late the observer reads it)
        self.stamp = t if stamp is None else stamp
        self.name = status.name
        self.level = status.level
        self.message = status.message
        self.values = dict(status.values)

    def __repr__(self) -> str:
        return f"Diagnostic({self.t:.3f}, {self.name!r}, {self.level}, {self.message!r})"


class GraphObserver:
    """See the module docstring. ``with GraphObserver(robot, calibration) as obs: ...``"""

    def __init__(self, parts: LoopParts, *, use_sim_time: bool = False,
                 name: str = "graph_observer", domain_id: int | None = None,
                 fast_streams: bool | Collection[str] = True) -> None:
        """``fast_streams``: also record the 500 Hz streams (``hw/tendon_commands``,
        ``joint_states``, ``hw/potentiometers``, ``muscle_states``), or those of them named.
        Off, the observer takes about a tenth of the messages (benchmarks, where its own load
        would be measured; a loaded computer, where a Python callback per sample of four 500 Hz
        streams leaves the observer seconds behind)."""
        robot = self.robot = parts.robot
        self.calibration = parts.drivers.calibration
        self.frame_id = robot.arm.base_frame
        self._codec = SnapshotCodec(robot.arm.n_joints, robot.n_muscles,
                                    len(parts.controller.task.rows))
        self._own_context = not rclpy.ok()
        if self._own_context:
            rclpy.init(domain_id=domain_id)
        self.node = rclpy.create_node(name, parameter_overrides=[
            Parameter("use_sim_time", Parameter.Type.BOOL, use_sim_time)])
        self._lock = threading.RLock()  # conditions of wait_until may read recordings too
        joints = robot.arm.joint_names
        muscles = robot.muscle_names
        actuators = tuple(str(a) for a in robot.actuator_ids)
        self.commands = Recording()  # muscle_commands: tension [N]
        self.sent = Recording()  # hw/tendon_commands: tension [N]
        self.joint_states = Recording()  # joint_states: q [rad]
        self.potentiometers = Recording()  # hw/potentiometers: stamps only
        self.muscle_states = Recording()  # muscle_states: tension [N]
        self.dynamics = Recording()  # dynamics: stamps only
        self.hand = Recording()  # mock/hand (truth) [m]
        self.elbow = Recording()  # mock/elbow (truth) [m]
        self.gauge_force = Recording()  # mock/gauge_force [N]
        self.controller_state = Recording()  # controller/state records (dict of fields)
        self.goals_in_force = Recording()  # controller/goal: (position [m], quaternion xyzw)
        self.goal_points = Recording()  # hand_goal/trajectory: position [m]
        self.diagnostics: list[Diagnostic] = []
        self._orders = {
            "muscle_commands": messages.NameOrder("muscle_commands", muscles, "muscle name"),
            "hw/tendon_commands": messages.NameOrder("hw/tendon_commands", actuators,
                                                     "actuator id"),
            "joint_states": messages.NameOrder("joint_states", joints, "joint name"),
            "muscle_states": messages.NameOrder("muscle_states", muscles, "muscle name"),
        }
        self._state_layout = controller_state_layout(robot.arm.n_joints)
        n = self.node
        # deep (2 s at 500 Hz), so that a sample is counted even when the observer's thread is
        # late; best effort, as the nodes publish (a reliable reader that acknowledges late
        # would block the publisher's write: doc/timing.md)
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.BEST_EFFORT,
                         durability=DurabilityPolicy.VOLATILE)
        n.create_subscription(JointState, "muscle_commands", self._on_commands, qos)
        fast = {"hw/tendon_commands": self._on_sent, "joint_states": self._on_joints,
                "hw/potentiometers": self._on_pots, "muscle_states": self._on_muscles}
        #: the 500 Hz streams recorded
        self.fast_streams = frozenset(fast if fast_streams is True
                                      else () if fast_streams is False else fast_streams)
        for topic in self.fast_streams:
            n.create_subscription(JointState, topic, fast[topic], qos)
        n.create_subscription(DynamicsSnapshot, "dynamics", self._on_dynamics, qos)
        n.create_subscription(PointStamped, "mock/hand", self._on_hand, QOS_STATE_SUB)
        n.create_subscription(PointStamped, "mock/elbow", self._on_elbow, QOS_STATE_SUB)
        n.create_subscription(Float64, "mock/gauge_force", self._on_force, QOS_STATE_SUB)
        n.create_subscription(ControllerState, "controller/state", self._on_state, qos)
        n.create_subscription(PoseStamped, "controller/goal", self._on_goal, QOS_GOAL)
        n.create_subscription(MultiDOFJointTrajectory, "hand_goal/trajectory",
                              self._on_goal_point, 50)  # sent on change, reliable
        # best effort and deep too: a reliable reader that reads late stalls the nodes'
        # publishers, and a shallow one drops the status that named a fault
        # reliable (the nodes publish it so, a few messages a second): a verdict may rest on
        # the nodes' own counts in it, which a busy observer must not lose
        n.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics,
                              QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                                         reliability=ReliabilityPolicy.RELIABLE,
                                         durability=DurabilityPolicy.VOLATILE))
        self._goal_pub = n.create_publisher(PoseStamped, "hand_goal", QOS_GOAL)
        self._joint_goal_pub = n.create_publisher(JointState, "joint_goal", QOS_GOAL)
        self._trajectory_pub = n.create_publisher(MultiDOFJointTrajectory,
                                                  "hand_goal/trajectory", QOS_GOAL)
        self._gauge_pub = n.create_publisher(PoseStamped, "mock/gauge", 10)
        # a second writer of muscle_commands is a fault of the tendon driver: made when used
        self._commands_pub: Any = None
        self._stop_pub = n.create_publisher(Bool, STOP_TOPIC, QOS_STOP)
        self._param_clients: dict[str, Any] = {}  # node -> its set_parameters client
        self._foreign: list[Any] = []  # nodes made by foreign_node()
        self._acknowledge: Any = n.create_client(Trigger, "controller/acknowledge")
        self._clear_gauge: Any = n.create_client(Trigger, "mock/clear_gauge")
        self._injectors: dict[str, Any] = {}
        # actions on the node's entities, run by the spinning thread between two spins; the
        # guard condition wakes the executor for them
        self._actions: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = \
            queue.SimpleQueue()
        self._wake = n.create_guard_condition(lambda: None)
        self.spin_error: BaseException | None = None  # what stopped the spinning, if not close()
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(n)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    # -- life -------------------------------------------------------------------------------------
    def _spin(self) -> None:
        while not self._stop.is_set():
            self._run_actions()
            try:
                self._executor.spin_once(timeout_sec=0.05)
            except Exception as exc:  # noqa: BLE001 - kept for wait_until unless closing
                if not self._stop.is_set() and self.node.context.ok():
                    self.spin_error = exc
                return

    def _run_actions(self) -> None:
        while True:
            try:
                action, done = self._actions.get_nowait()
            except queue.Empty:
                return
            try:
                done.set_result(action())
            except Exception as exc:  # noqa: BLE001 - handed to the caller
                done.set_exception(exc)

    def between_spins(self, action: Callable[[], T]) -> T:
        """``action()`` run by the spinning thread between two spins (to create or destroy a
        publisher or client of :attr:`node`); its result."""
        if threading.current_thread() is self._thread or not self._thread.is_alive():
            self._check_spinning()
            return action()
        done: Future[T] = Future()
        self._actions.put((action, done))
        self._wake.trigger()
        end = time.monotonic() + _BETWEEN_SPINS_TIMEOUT_S
        while time.monotonic() < end:
            try:
                return done.result(timeout=0.1)
            except TimeoutError:
                if not self._thread.is_alive():  # closed meanwhile: nothing spins any more
                    self._check_spinning()
                    return done.result() if done.done() else action()
        raise RuntimeError(f"the observer's thread did not run an action within "
                           f"{_BETWEEN_SPINS_TIMEOUT_S:g} s")

    def create_publisher(self, msg_type: Any, topic: str, qos: Any) -> Any:
        """A publisher of :attr:`node` (made between two spins)."""
        return self.between_spins(lambda: self.node.create_publisher(msg_type, topic, qos))

    def destroy_publisher(self, publisher: Any) -> None:
        """Destroy a publisher of :attr:`node` (between two spins)."""
        self.between_spins(lambda: self.node.destroy_publisher(publisher))

    def _check_spinning(self) -> None:
        """Raise the error that stopped the spinning thread, if one did."""
        if self.spin_error is not None:
            raise RuntimeError(f"the observer stopped spinning: {self.spin_error!r}") \
                from self.spin_error

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._executor.shutdown()
        for node in self._foreign:
            node.destroy_node()
        self.node.destroy_node()
        if self._own_context:
            rclpy.try_shutdown()

    def __enter__(self) -> GraphObserver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- clock ------------------------------------------------------------------------------------
    def now_s(self) -> float:
        """The observer's clock (simulated when the graph runs on /clock) [s]."""
        return self.node.get_clock().now().nanoseconds * 1e-9

    def wait_until(self, condition: Callable[[], bool], timeout_s: float,
                   poll_s: float = 0.02) -> bool:
        """Wait (wall time) until ``condition()``; whether it came true in time."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            self._check_spinning()  # a dead thread would freeze the clock and every recording
            with self._lock:
                if condition():
                    return True
            time.sleep(poll_s)
        self._check_spinning()
        with self._lock:
            return condition()

    def wait_for(self, seconds: float, timeout_s: float) -> bool:
        """Wait until ``seconds`` have passed on the observer's clock (sim or wall)."""
        t0 = self.now_s()
        return self.wait_until(lambda: self.now_s() - t0 >= seconds, timeout_s)

    def snapshot(self, recording: Recording) -> Recording:
        """A consistent copy of ``recording``."""
        with self._lock:
            return Recording(list(recording.t), list(recording.stamp), list(recording.values))

    def newest_stamp(self, recording: Recording) -> float:
        """The stamp of the newest sample of ``recording`` [s] (-inf: none yet)."""
        with self._lock:
            return recording.stamp[-1] if recording.stamp else -math.inf

    def caught_up(self, recording: Recording, t: float, timeout_s: float = 60.0) -> bool:
        """Wait until ``recording`` holds what was sent by ``t`` (its newest stamp is at or
        after it): an observer on a loaded computer reads seconds late."""
        return self.wait_until(lambda: self.newest_stamp(recording) >= t, timeout_s)

    def diagnostics_of(self, node: str) -> list[Diagnostic]:
        with self._lock:
            return [d for d in self.diagnostics if d.name == f"musculo_control: {node}"]

    # -- callbacks --------------------------------------------------------------------------------
    def _joint_state(self, topic: str, msg: Any, required: tuple[str, ...]) -> Any:
        arrays = messages.read_joint_state(msg, self._orders[topic], required=required)
        return None if isinstance(arrays, str) else arrays

    def _on_commands(self, msg: JointState) -> None:
        a = self._joint_state("muscle_commands", msg, ("effort",))
        if a is not None:
            with self._lock:
                self.commands.add(self.now_s(), a.stamp.seconds, a.effort)

    def _on_sent(self, msg: JointState) -> None:
        a = self._joint_state("hw/tendon_commands", msg, ("effort",))
        if a is not None:
            with self._lock:
                self.sent.add(self.now_s(), a.stamp.seconds, self.calibration.driver_to_n(a.effort))

    def _on_joints(self, msg: JointState) -> None:
        a = self._joint_state("joint_states", msg, ("position",))
        if a is not None:
            with self._lock:
                self.joint_states.add(self.now_s(), a.stamp.seconds, a.position)

    def _on_pots(self, msg: JointState) -> None:
        with self._lock:
            self.potentiometers.add(self.now_s(), messages.stamp_of(msg).seconds, None)

    def _on_muscles(self, msg: JointState) -> None:
        a = self._joint_state("muscle_states", msg, ("effort",))
        if a is not None:
            with self._lock:
                self.muscle_states.add(self.now_s(), a.stamp.seconds, a.effort)

    def _on_dynamics(self, msg: DynamicsSnapshot) -> None:
        try:
            snapshot, _ = self._codec.from_msg(msg)
        except Exception:  # noqa: BLE001 - a malformed record is simply not recorded
            return
        with self._lock:
            self.dynamics.add(self.now_s(), snapshot.stamp_s, None)

    def _on_hand(self, msg: PointStamped) -> None:
        with self._lock:
            self.hand.add(self.now_s(), messages.stamp_of(msg).seconds,
                          messages.read_point(msg.point))

    def _on_elbow(self, msg: PointStamped) -> None:
        with self._lock:
            self.elbow.add(self.now_s(), messages.stamp_of(msg).seconds,
                           messages.read_point(msg.point))

    def _on_force(self, msg: Float64) -> None:
        with self._lock:
            self.gauge_force.add(self.now_s(), float("nan"), float(msg.data))

    def _on_state(self, msg: ControllerState) -> None:
        try:
            fields = msg_types.from_msg(msg, msg_types.CONTROLLER_STATE, self._state_layout)
        except Exception:  # noqa: BLE001 - a malformed message is simply not recorded
            return
        with self._lock:
            self.controller_state.add(self.now_s(), msg_types.stamp_seconds(msg), fields)

    def _on_goal(self, msg: PoseStamped) -> None:
        pose = messages.read_pose_stamped(msg)
        with self._lock:
            self.goals_in_force.add(self.now_s(), pose.stamp.seconds,
                                    (pose.position_m, pose.quaternion_xyzw))

    def _on_goal_point(self, msg: MultiDOFJointTrajectory) -> None:
        point = messages.read_goal_trajectory(msg, "hand_goal/trajectory")
        if not isinstance(point, str):
            with self._lock:
                self.goal_points.add(self.now_s(), point.stamp.seconds, point.position_m)

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        t = self.now_s()
        stamp = messages.stamp_of(msg).seconds
        with self._lock:
            for status in messages.read_diagnostic_array(msg):
                self.diagnostics.append(Diagnostic(t, status, stamp))

    # -- acting -----------------------------------------------------------------------------------
    def _stamp(self) -> Stamp:
        return Stamp.from_nanoseconds(self.node.get_clock().now().nanoseconds)

    def send_goal_pose(self, position_m: npt.ArrayLike,
                       quaternion_xyzw: npt.ArrayLike = (0.0, 0.0, 0.0, 1.0), *,
                       frame_id: str | None = None, stamp: Stamp | None = None) -> None:
        self._goal_pub.publish(messages.pose_stamped_msg(
            MSGS, self._stamp() if stamp is None else stamp,
            self.frame_id if frame_id is None else frame_id, position_m, quaternion_xyzw))

    def send_goal_point(self, position_m: npt.ArrayLike, quaternion_xyzw: npt.ArrayLike,
                        velocity_m_s: npt.ArrayLike, acceleration_m_s2: npt.ArrayLike) -> None:
        self._trajectory_pub.publish(messages.goal_trajectory_msg(
            MSGS, self._stamp(), self.frame_id, "goal", position_m, quaternion_xyzw,
            velocity_m_s, acceleration_m_s2))

    def send_commands(self, tension_n: npt.ArrayLike, stamp: Stamp | None = None) -> None:
        """Publish a muscle command as if from a (faulty) controller: the observer's node is
        then a foreign writer of ``muscle_commands``."""
        if self._commands_pub is None:
            self._commands_pub = self.create_publisher(JointState, "muscle_commands", 10)
        writer = messages.JointStateWriter(MSGS, self.robot.muscle_names)
        self._commands_pub.publish(writer.write(self._stamp() if stamp is None else stamp,
                                                effort=np.asarray(tension_n, dtype=float)))

    def send_joint_goal(self, q_rad: npt.ArrayLike) -> None:
        """A joint goal for the baselines (``joint_goal``), in the arm's joint order."""
        self._joint_goal_pub.publish(messages.joint_state_msg(
            MSGS, self._stamp(), self.robot.arm.joint_names, position=q_rad))

    def send_stop(self, on: bool) -> None:
        """``true`` (stop) or ``false`` (release) on the operator stop topic."""
        self._stop_pub.publish(Bool(data=bool(on)))

    def foreign_node(self, name: str) -> Any:
        """Another node on the observer's domain (never spun: for publishers), e.g. a stray
        commander; destroyed with the observer."""
        node = rclpy.create_node(name, context=self.node.context)
        self._foreign.append(node)
        return node

    def push_gauge(self, tip_m: npt.ArrayLike, axis: npt.ArrayLike) -> None:
        """Hold the mock's force gauge with its tip at ``tip_m``, pushing along ``axis``."""
        a = np.asarray(axis, dtype=float)
        a = a / np.linalg.norm(a)
        # a quaternion whose x axis is ``a``: the shortest turn from (1, 0, 0)
        c = np.cross([1.0, 0.0, 0.0], a)
        w = 1.0 + a[0]
        q = np.array([c[0], c[1], c[2], w]) if w > 1e-9 else np.array([0.0, 0.0, 1.0, 0.0])
        self._gauge_pub.publish(messages.pose_stamped_msg(MSGS, self._stamp(), self.frame_id, tip_m,
                                                    q / np.linalg.norm(q)))

    def call(self, client: Any, timeout_s: float = 5.0) -> tuple[bool, str]:
        result = self._request(client, Trigger.Request(), timeout_s)
        if isinstance(result, str):
            return False, result
        return bool(result.success), str(result.message)

    @staticmethod
    def _request(client: Any, request: Any, timeout_s: float) -> Any:
        """The service's answer to ``request``, or why there is none (a str)."""
        if not client.wait_for_service(timeout_sec=timeout_s):
            return "service not available"
        future = client.call_async(request)
        end = time.monotonic() + timeout_s
        while not future.done() and time.monotonic() < end:
            time.sleep(0.01)
        return future.result() if future.done() else "no answer"

    def set_parameter(self, node: str, name: str, value: Any,
                      timeout_s: float = 5.0) -> tuple[bool, str]:
        """Set the parameter ``name`` of ``node`` as ``ros2 param set`` does: (successful,
        the node's reason)."""
        client = self._param_clients.get(node)
        if client is None:
            client = self._param_clients[node] = self.between_spins(
                lambda: self.node.create_client(SetParameters, f"/{node}/set_parameters"))
        request = SetParameters.Request(
            parameters=[Parameter(name, value=value).to_parameter_msg()])
        result = self._request(client, request, timeout_s)
        if isinstance(result, str):
            return False, result
        answer = result.results[0]
        return bool(answer.successful), str(answer.reason)

    def acknowledge(self, timeout_s: float = 5.0) -> tuple[bool, str]:
        """Call ``controller/acknowledge``: (success, message)."""
        return self.call(self._acknowledge, timeout_s)

    def inject(self, node: str, timeout_s: float = 5.0) -> tuple[bool, str]:
        """Start the fault node ``node`` was launched to inject (``inject_fault``) now."""
        client = self._injectors.get(node)
        if client is None:
            client = self._injectors[node] = self.between_spins(
                lambda: self.node.create_client(Trigger, f"/{node}/inject_fault"))
        return self.call(client, timeout_s)

    def clear_gauge(self, timeout_s: float = 5.0) -> tuple[bool, str]:
        return self.call(self._clear_gauge, timeout_s)
