"""A client that runs one of the paper's experiments over the node graph, by topics, parameters
and services only (``musculo experiment --graph``), on the mock graph or on the robot.

It does what :mod:`musculo_control.sim.graph_schedule` says: brings the arm to the start pose
under eq. 16 (``joint_goal``), switches the QP node's ``controller`` parameter to the
experiment's controller (bumpless), then sends the run's hand goals (``hand_goal``, B's move on
``hand_goal/trajectory`` with its feed-forward), a baseline's joint goals, and on the mock A's
gauge (``mock/gauge``). What it does is printed as it goes. Ctrl-C (KeyboardInterrupt) stops
the run with the arm held, not dropped: the goal in force becomes one at rest where it is (a
joint goal at the measured pose during the move to the start pose or under a baseline, the hand
goal's point otherwise), which the QP node keeps, and the mock's gauge is withdrawn. The
client's own context takes no ROS signal handler, so it can still say so after the signal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import rclpy
from geometry_msgs.msg import PointStamped, PoseStamped
from musculo_control_msgs.msg import ControllerState
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import MultiDOFJointTrajectory

from musculo_control import messages
from musculo_control.control.goal import HandGoal
from musculo_control.loop.topics import JOINT_STATES
from musculo_control.nodes.ros_common import MSGS, QOS_GOAL
from musculo_control.sim.graph_schedule import MOVER, RunSchedule, StartMove
from musculo_control.sim.setup import Setup
from musculo_control.stamps import Stamp

FloatArray = npt.NDArray[np.float64]

#: the QP node whose controller parameter the client sets
QP_NODE = "activation_qp_node"
#: how long a refused switch is retried while a fault passes and control recovers [s]
SWITCH_RETRY_S = 15.0
#: a wait on the graph's clock gives up after this many times as long on the wall's
WALL_CAP = 10.0


class ExperimentClient:
    """See the module docstring. ``mock``: the graph is the mock's (its gauge pushes in A);
    ``say``: where progress goes (a line each)."""

    def __init__(self, setup: Setup, *, use_sim_time: bool = False,
                 domain_id: int | None = None, mock: bool = True,
                 say: Callable[[str], None] = print) -> None:
        self.setup, self.mock, self.say = setup, mock, say
        self.frame_id = setup.robot.arm.base_frame
        self._own_context = not rclpy.ok()
        if self._own_context:
            # no ROS handler: Ctrl-C is Python's KeyboardInterrupt, and the context stays up
            # to send the goal that holds the arm (:meth:`hold`)
            rclpy.init(domain_id=domain_id, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node("experiment_client", parameter_overrides=[
            Parameter("use_sim_time", Parameter.Type.BOOL, use_sim_time)])
        n = self.node
        self._lock = threading.Lock()
        self._joints: tuple[FloatArray, FloatArray] | None = None
        self._elbow: FloatArray | None = None
        self._hand: FloatArray | None = None  # the controller's forward kinematics [m]
        names = setup.robot.arm.joint_names
        self._order = messages.NameOrder(JOINT_STATES, names)
        n.create_subscription(JointState, JOINT_STATES, self._on_joints, 10)
        n.create_subscription(PointStamped, "mock/elbow", self._on_elbow, 10)
        self._state = -1  # the supervisor's state code of the newest controller/state
        n.create_subscription(ControllerState, "controller/state", self._on_state, 10)
        self._joint_goal = n.create_publisher(JointState, "joint_goal", QOS_GOAL)
        self._hand_goal = n.create_publisher(PoseStamped, "hand_goal", QOS_GOAL)
        self._trajectory = n.create_publisher(MultiDOFJointTrajectory, "hand_goal/trajectory",
                                              QOS_GOAL)
        self._gauge = n.create_publisher(PoseStamped, "mock/gauge", 10)
        self._params: Any = n.create_client(SetParameters, f"/{QP_NODE}/set_parameters")
        self._get_params: Any = n.create_client(GetParameters, f"/{QP_NODE}/get_parameters")
        self._clear_gauge: Any = n.create_client(Trigger, "mock/clear_gauge")
        #: the goal last sent: a hand goal, or a joint goal (None: none yet)
        self._last_goal: HandGoal | FloatArray | None = None
        self._executor = SingleThreadedExecutor(context=n.context)
        self._executor.add_node(n)
        self._spin = threading.Thread(target=self._executor.spin, daemon=True)
        self._spin.start()

    # -- what comes in ----------------------------------------------------------------------------
    def _on_joints(self, msg: JointState) -> None:
        arrays = messages.read_joint_state(msg, self._order, ("position", "velocity"))
        if not isinstance(arrays, str):
            with self._lock:
                self._joints = (arrays.position, arrays.velocity)

    def _on_state(self, msg: ControllerState) -> None:
        self._state = int(msg.supervisor_state)
        with self._lock:
            self._hand = np.array(msg.hand_position_m, dtype=float)

    def running(self) -> bool:
        """The controller's own commands go out (supervisor state RUNNING)."""
        return self._state == ControllerState.RUNNING

    def _on_elbow(self, msg: PointStamped) -> None:
        with self._lock:
            self._elbow = messages.read_point(msg.point)

    def joints(self) -> tuple[FloatArray, FloatArray] | None:
        with self._lock:
            return self._joints

    def now_s(self) -> float:
        return float(self.node.get_clock().now().nanoseconds) * 1e-9

    def _graph_timeout(self, seconds: float) -> Callable[[], bool]:
        """Whether ``seconds`` have passed on the graph's clock since the call (simulated
        time runs slower than the wall's on a busy computer), or :data:`WALL_CAP` times as
        many on the wall's (a graph whose clock stopped)."""
        end, wall_end = self.now_s() + seconds, time.monotonic() + WALL_CAP * seconds
        return lambda: self.now_s() >= end or time.monotonic() >= wall_end

    def _stamp(self) -> Stamp:
        return Stamp.from_nanoseconds(self.node.get_clock().now().nanoseconds)

    def wait_until(self, ready: Callable[[], bool], timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while not ready():
            if time.monotonic() > end:
                return False
            time.sleep(0.01)
        return True

    # -- what goes out ----------------------------------------------------------------------------
    def set_parameter(self, name: str, value: Any, timeout_s: float = 5.0) -> str:
        """Set a parameter of the QP node; '' when done, else the reason."""
        if not self._params.wait_for_service(timeout_sec=timeout_s):
            return f"/{QP_NODE}/set_parameters: no such service (is the graph running?)"
        future = self._params.call_async(SetParameters.Request(
            parameters=[Parameter(name, value=value).to_parameter_msg()]))
        if not self.wait_until(future.done, timeout_s):
            return f"/{QP_NODE}/set_parameters: no answer"
        answer = future.result().results[0]  # type: ignore[union-attr]
        return "" if answer.successful else str(answer.reason)

    def get_parameter(self, name: str, timeout_s: float = 5.0) -> Any:
        """A parameter's value on the QP node (None: no answer)."""
        if not self._get_params.wait_for_service(timeout_sec=timeout_s):
            return None
        future = self._get_params.call_async(GetParameters.Request(names=[name]))
        if not self.wait_until(future.done, timeout_s):
            return None
        values = future.result().values  # type: ignore[union-attr]
        if not values:
            return None
        return Parameter.from_parameter_msg(ParameterMsg(name=name, value=values[0])).value

    def set_controller(self, name: str, timeout_s: float = 5.0) -> str:
        """Switch the QP node's controller; '' when done, else the node's reason (a switch
        refused during a fault that passes, or while control recovers or resumes after one, is
        retried for ``SWITCH_RETRY_S``; one refused for a latched fault is not)."""
        end = time.monotonic() + SWITCH_RETRY_S
        while True:
            reason = self.set_parameter("controller", name, timeout_s)
            if not reason:
                return ""
            # a fault that passes (not a latched one: an operator acknowledges that) is
            # waited out, as control recovers from it; the service's own failures are not
            passing = "is latched" not in reason and "refused" in reason
            if not passing or time.monotonic() > end:
                return reason
            time.sleep(0.1)

    def send_joint_goal(self, q_rad: npt.ArrayLike) -> None:
        self._last_goal = np.array(q_rad, dtype=float)
        self._joint_goal.publish(messages.joint_state_msg(
            MSGS, self._stamp(), self.setup.robot.arm.joint_names, position=q_rad))

    def send_hand_goal(self, goal: HandGoal, moving: bool) -> None:
        """A goal at rest on ``hand_goal``; a point of a move (with its velocity and
        acceleration) on ``hand_goal/trajectory``."""
        self._last_goal = goal
        quat = (messages.quaternion_from_rotation(goal.rotation) if goal.rotation is not None
                else np.array([0.0, 0.0, 0.0, 1.0]))
        if moving:
            self._trajectory.publish(messages.goal_trajectory_msg(
                MSGS, self._stamp(), self.frame_id, "goal", goal.position_m, quat,
                goal.velocity_m_s, goal.acceleration_m_s2))
        else:
            self._hand_goal.publish(messages.pose_stamped_msg(
                MSGS, self._stamp(), self.frame_id, goal.position_m, quat))

    def send_gauge(self, tip_m: FloatArray, axis: FloatArray) -> None:
        """The mock's gauge tip at ``tip_m``, pushing along ``axis`` (the pose's x axis)."""
        x = axis / np.linalg.norm(axis)
        helper = np.array([0.0, 0.0, 1.0]) if abs(x[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
        y = np.cross(helper, x)
        y /= np.linalg.norm(y)
        rotation = np.column_stack([x, y, np.cross(x, y)])
        self._gauge.publish(messages.pose_stamped_msg(
            MSGS, self._stamp(), self.frame_id, tip_m,
            messages.quaternion_from_rotation(rotation)))

    def withdraw_gauge(self) -> None:
        if self.mock and self._clear_gauge.wait_for_service(timeout_sec=1.0):
            future = self._clear_gauge.call_async(Trigger.Request())
            self.wait_until(future.done, 2.0)

    def hold(self) -> str:
        """The goal in force becomes one at rest where it is (Ctrl-C): a joint goal at the
        measured pose, or the hand goal's point; what was sent."""
        last, joints = self._last_goal, self.joints()
        if isinstance(last, HandGoal):
            self.send_hand_goal(HandGoal.hold(last.position_m, last.rotation), False)
            self.withdraw_gauge()
            return f"hand goal at rest at {np.round(last.position_m, 3).tolist()} m"
        if last is not None and joints is not None:
            self.send_joint_goal(joints[0])
            return "joint goal at rest at the measured pose"
        return "no goal sent yet: the controller's goal stands"

    # -- the phases -------------------------------------------------------------------------------
    def bring_to(self, q_start: FloatArray, label: str) -> tuple[bool, str]:
        """Bring the arm to ``q_start`` under eq. 16 (:class:`StartMove`): (reached, what
        happened)."""
        if not self.wait_until(lambda: self.joints() is not None and self.running(), 60.0):
            return False, ("no joint_states, or the controller not running (controller/state): "
                           "is the graph running, a fault standing?")
        reason = self.set_controller(MOVER)
        if reason:
            return False, f"switch to {MOVER} for the move to the start pose: {reason}"
        q, _ = self.joints()  # type: ignore[misc]
        move = StartMove(q, q_start, self.setup.experiments.graph)
        self.say(f"to the start pose '{label}': {move.duration_s:.1f} s along a minimum-jerk "
                 f"joint path ({MOVER})")
        period = 1.0 / move.config.goal_rate_hz
        t0 = self.now_s()
        while (t := self.now_s() - t0) <= move.duration_s:
            self.send_joint_goal(move.joint_goal(t))
            time.sleep(period)
        held, before = False, self.now_s()
        # on the graph's clock, as the move: under simulated time on a busy computer a wall
        # second may be a tenth of one of the arm's, and the holding goal's integral would
        # then run ten times too fast and shake the arm instead of settling it
        timeout = self._graph_timeout(move.config.reach_timeout_s)
        while not held and not timeout():
            q, qd = self.joints()  # type: ignore[misc]
            held = move.reached(q, qd)
            now = self.now_s()
            self.send_joint_goal(move.holding_goal(q, now - before))
            before = now
            time.sleep(period)
        q, qd = self.joints()  # type: ignore[misc]
        error = q - q_start
        worst = int(np.argmax(np.abs(error)))
        off = float(abs(error[worst]))
        if not held:
            name = self.setup.robot.arm.joint_names[worst]
            return False, (f"start pose '{label}' not reached: {name} {error[worst]:+.3f} rad "
                           f"off (moving at {qd[worst]:+.3f} rad/s) after "
                           f"{move.config.reach_timeout_s:g} s of holding")
        return True, f"start pose '{label}' reached ({off:.3f} rad off)"

    def run(self, schedule: RunSchedule, on_start: Callable[[float], None] | None = None) -> float:
        """Switch to the schedule's controller and run it; returns the run's start on the
        graph's clock [s]. ``on_start``: called with that time (a recorder's t = 0)."""
        orientation = self.get_parameter("use_goal_orientation")
        reason = self.set_parameter("use_goal_orientation",
                                    bool(orientation) and schedule.track_orientation)
        if reason:
            raise RuntimeError(f"use_goal_orientation: {reason}")
        try:
            return self._run(schedule, on_start)
        finally:
            if orientation is not None:  # as it was before the run
                self.set_parameter("use_goal_orientation", bool(orientation))

    def _run(self, schedule: RunSchedule, on_start: Callable[[float], None] | None) -> float:
        reason = self.set_controller(schedule.controller)
        if reason:
            raise RuntimeError(f"switch to {schedule.controller}: {reason}")
        period = 1.0 / self.setup.experiments.graph.goal_rate_hz
        if schedule.settles and schedule.joint_goal(0.0) is None:
            self._settle(schedule.hand_goal(0.0), period)
        t0 = self.now_s()
        if on_start is not None:
            on_start(t0)
        self.say(f"{schedule.experiment} with {schedule.controller} from '{schedule.pose}': "
                 f"{schedule.duration_s:g} s")
        self.send_hand_goal(schedule.hand_goal(0.0), False)
        elbow_at_touch: FloatArray | None = None
        said, sent_rest = 0, False
        try:
            while (t := self.now_s() - t0) <= schedule.duration_s:
                moving = schedule.moving(t)
                if moving or not sent_rest:
                    self.send_hand_goal(schedule.hand_goal(t), moving)
                    q_goal = schedule.joint_goal(t)
                    if q_goal is not None:
                        self.send_joint_goal(q_goal)
                    sent_rest = not moving
                if schedule.gauge_axis is not None and self.mock:
                    elbow_at_touch = self._push(schedule, t, elbow_at_touch)
                if int(t) > said:
                    said = int(t)
                    self.say(f"  {t:4.0f} / {schedule.duration_s:g} s")
                time.sleep(period)
        finally:
            self.withdraw_gauge()
        return t0

    def _settle(self, goal: HandGoal, period: float) -> None:
        """The run's first hand goal, held until the hand is there and still (the runner
        starts with the arm placed exactly; the graph's start pose is within
        ``graph.reach_tolerance_rad``) or ``graph.settle_timeout_s`` passes."""
        cfg = self.setup.experiments.graph
        self.send_hand_goal(HandGoal.hold(goal.position_m, goal.rotation), False)
        timeout = self._graph_timeout(cfg.settle_timeout_s)
        off = float("nan")
        while not timeout():
            with self._lock:
                hand, joints = self._hand, self._joints
            if hand is not None and joints is not None:
                off = float(np.linalg.norm(hand - goal.position_m))
                if off <= cfg.settle_tolerance_m and \
                        float(np.abs(joints[1]).max()) < cfg.reach_speed_rad_s:
                    self.say(f"  the hand is at the run's first goal ({1e3 * off:.1f} mm)")
                    return
            time.sleep(period)
        self.say(f"  the hand {1e3 * off:.1f} mm from the run's first goal after "
                 f"{cfg.settle_timeout_s:g} s of holding it; the run starts (its start hold "
                 f"judges it)")

    def _push(self, schedule: RunSchedule, t: float,
              elbow_at_touch: FloatArray | None) -> FloatArray | None:
        """A's gauge at ``t``: the elbow taken at the touch (``mock/elbow``), then the tip
        along the axis; returns the elbow at the touch (None before it)."""
        if t < schedule.config.settle_s:
            return None
        if elbow_at_touch is None:
            with self._lock:
                elbow_at_touch = None if self._elbow is None else self._elbow.copy()
        if elbow_at_touch is None:
            return None
        tip = schedule.gauge_tip(t, elbow_at_touch)
        if tip is None:
            return None
        assert schedule.gauge_axis is not None
        self.send_gauge(tip, schedule.gauge_axis)
        return elbow_at_touch

    def close(self) -> None:
        self._executor.shutdown(timeout_sec=1.0)
        # the spinning thread out of rclpy before the node and the context go (a thread still
        # inside the executor at the interpreter's exit aborted the process)
        self._spin.join(timeout=2.0)
        self.node.destroy_node()
        if self._own_context:
            rclpy.try_shutdown()

    def __enter__(self) -> ExperimentClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
