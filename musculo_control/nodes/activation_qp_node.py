"""activation_qp_node: the 125 Hz controller (paper eq. 9-17) with its safety supervisor.

A shell over :class:`~musculo_control.loop.control_step.ControlStep`, the object the ROS-free
runner ticks in simulation: at each tick (controller.yaml ``loop.control_rate_hz``) the node
hands it the newest ``joint_states``, every ``muscle_states`` sample and every
``hw/tendon_commands`` output of the driver since the last tick, the newest ``dynamics``
snapshot (unless ``loop.fused_dynamics``: then the step computes its own) and the goals
received, all polled; the step checks every input against safety.yaml, ticks the controller
and answers with the command and a safety report. The command goes out on
``muscle_commands``; the report on ``controller/state`` (supervisor state and level) and, at
once on a change of level, on /diagnostics.

Goals: ``hand_goal`` (geometry_msgs/PoseStamped, from RViz or a user: a pose, no
feed-forward) and ``hand_goal/trajectory`` (trajectory_msgs/MultiDOFJointTrajectory with one
point: pose, velocity and acceleration, the feed-forward of paper eq. 14, from goal_node).
Both pass the one goal gate of the supervisor. Before any goal the hand holds where it is.

Latched faults (a snapped tendon, an actuator that cannot deliver, a second writer to the
actuators) are cleared by the ``controller/acknowledge`` service (std_srvs/Trigger).

Who writes ``hw/tendon_commands`` is read from the graph at each tick
(:mod:`musculo_control.nodes.writers`): another node than ``actuator_writer`` (the tendon
driver) is fault ``foreign_actuator_writer``, its node named. ``true`` on ``operator_stop``
(std_msgs/Bool) stops the arm (minimum tension) until ``false`` releases it; goals and the
acknowledge service are refused meanwhile.
"""

from __future__ import annotations

import time
import traceback
from functools import partial

import numpy as np
from geometry_msgs.msg import PointStamped, PoseStamped
from musculo_control_msgs.msg import ControllerState, ControllerTiming, DynamicsSnapshot
from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from std_srvs.srv import Trigger
from trajectory_msgs.msg import MultiDOFJointTrajectory

from musculo_control import messages, msg_types
from musculo_control.control.controller_names import CONTROLLER_NAMES
from musculo_control.control.goal import HandGoal
from musculo_control.control.output import safe_output
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot_codec import SnapshotCodec
from musculo_control.hardware.potentiometer import PotentiometerReading
from musculo_control.hardware.tendon_driver import TendonState
from musculo_control.loop import build
from musculo_control.loop.control_step import (
    COMMAND_TOPIC,
    DYNAMICS_TOPIC,
    JOINTS_TOPIC,
    SENT_TOPIC,
    TENDONS_TOPIC,
)
from musculo_control.loop.lockstep import lockstep_leads
from musculo_control.loop.parts import load_parts
from musculo_control.loop.state_record import controller_state_values
from musculo_control.loop.timing import (
    GcPauses,
    TickTimer,
    TimingSummary,
    timing_record,
)
from musculo_control.loop.topics import (
    CONTROLLER_ACTIVATIONS,
    DYNAMICS,
    JOINT_STATES,
    MUSCLE_STATES,
    TENDON_COMMANDS,
)
from musculo_control.nodes.node_config import (
    ACTIVATION_QP_NODE,
    ActivationQPNodeParams,
    config_dir_of,
)
from musculo_control.nodes.process import run
from musculo_control.nodes.ros_common import (
    MSGS,
    QOS_GOAL,
    QOS_STATE_PUB,
    QOS_STOP,
    StageNode,
    now_stamp,
)
from musculo_control.nodes.writers import GraphWriters, fully_qualified
from musculo_control.safety.authority import FOREIGN_ACTUATOR_WRITER, WriterWatch
from musculo_control.safety.goal_gate import GoalRequest
from musculo_control.safety.operator_stop import STOP_TOPIC
from musculo_control.serialized import (
    SerializedJointStateWriter,
    SerializedPointWriter,
)
from musculo_control.streams import OwnPause

GOAL_TOPIC = "hand_goal"
GOAL_TRAJECTORY_TOPIC = "hand_goal/trajectory"
#: a joint pose for the baselines of eq. 16-17 (sensor_msgs/JointState: name, position [rad])
JOINT_GOAL_TOPIC = "joint_goal"


class ActivationQPNode(StageNode[ActivationQPNodeParams]):
    def __init__(self) -> None:
        super().__init__(ACTIVATION_QP_NODE, ActivationQPNodeParams)
        p = self.params
        parts = self.parts = load_parts(config_dir_of(p.config_dir))
        robot = self.robot = parts.robot
        self.step = build.control_step(parts, p.controller,
                                       use_goal_orientation=p.use_goal_orientation,
                                       warn_throttle_s=p.warn_throttle_s)
        self.frame_id = robot.arm.base_frame
        self.codec = SnapshotCodec(robot.arm.n_joints, robot.n_muscles,
                                   len(parts.controller.task.rows))
        muscles = robot.muscle_names
        controlled = tuple(muscles[i] for i in robot.controlled_idx)
        self._state_out = ControllerState()  # refilled at every tick
        self._cmd_msg = SerializedJointStateWriter(MSGS, muscles)
        self._act_msg = SerializedJointStateWriter(MSGS, controlled)
        self._hand_msg = SerializedPointWriter(MSGS, self.frame_id)
        self._calibration = parts.drivers.calibration
        # outputs
        self._cmd_pub = self.create_publisher(JointState, COMMAND_TOPIC, QOS_STATE_PUB)
        self._act_pub = self.create_publisher(JointState, CONTROLLER_ACTIVATIONS,
                                              QOS_STATE_PUB)
        self._state_pub = self.create_publisher(ControllerState, "controller/state",
                                                QOS_STATE_PUB)
        self._hand_pub = self.create_publisher(PointStamped, "controller/hand", QOS_STATE_PUB)
        self._goal_pub = self.create_publisher(PoseStamped, "controller/goal", QOS_GOAL)
        self._timing_pub = self.create_publisher(ControllerTiming, "controller/timing",
                                                 QOS_STATE_PUB)
        # inputs, polled at the tick
        leads = lockstep_leads(parts)
        self._joints_in = self.joint_states_in(JOINTS_TOPIC, robot.arm.joint_names, "joint name",
                                               required=("position", "velocity"), finite=True,
                                               lead_s=leads[JOINT_STATES], stamped=True)
        self._muscles_in = self.joint_states_in(TENDONS_TOPIC, muscles, "muscle name",
                                                required=("position", "velocity", "effort"),
                                                finite=True, depth=p.tendon_queue,
                                                lead_s=leads[MUSCLE_STATES])
        # (awaited by stamp only: a stray writer's sample may end a wait early, which costs
        # nothing but the wait; the supervisor judges the writers)
        self._sent_in = self.joint_states_in(SENT_TOPIC,
                                             tuple(str(a) for a in robot.actuator_ids),
                                             "actuator id", required=("effort",), finite=True,
                                             depth=p.tendon_queue,
                                             lead_s=leads[TENDON_COMMANDS])
        self._dynamics_in = (None if self.step.fused else
                             self.subscribe_awaited(DynamicsSnapshot, DYNAMICS_TOPIC,
                                                    leads[DYNAMICS],
                                                    partial(messages.snapshot_stamp_s, self.codec)))
        self._goal_in = self.inputs.subscribe(PoseStamped, GOAL_TOPIC, qos=QOS_GOAL)
        self._joint_goal_in = self.joint_states_in(JOINT_GOAL_TOPIC, robot.arm.joint_names,
                                                   "joint name", finite=True, depth=5,
                                                   qos=QOS_GOAL)
        self._trajectory_in = self.inputs.subscribe(MultiDOFJointTrajectory,
                                                    GOAL_TRAJECTORY_TOPIC, qos=QOS_GOAL)
        self._stop_in = self.inputs.subscribe(Bool, STOP_TOPIC, qos=QOS_STOP)
        self.step.writer_watches[FOREIGN_ACTUATOR_WRITER] = WriterWatch(
            SENT_TOPIC, {fully_qualified(self, p.actuator_writer)}, parts.safety.authority)
        self._sent_writers = GraphWriters(self, SENT_TOPIC)
        self.create_service(Trigger, "controller/acknowledge", self._on_acknowledge)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._goal_shown: HandGoal | None = None
        self._pause = OwnPause(parts.safety.inputs.own_pause_s)
        self._joint_bounds = parts.safety.inputs.joint_state
        self._resync = bool(p.resync_after_pause)
        # timing and health
        rate = parts.controller.loop.control_rate_hz
        self._gc = GcPauses()
        self.timer = TickTimer(1.0 / rate, gc_pauses=self._gc)
        self.last_timing: TimingSummary | None = None
        self.watch(self.step.health, "controller", self._values)
        self.every(1.0 / rate, self._tick)
        self.tick_loop.every(p.timing_report_period_s, self._report_timing, report=False)
        self._gc.install()
        self.get_logger().info(f"controller '{p.controller}' at {rate:g} Hz"
                               + (" (fused dynamics)" if self.step.fused else ""))

    # -- inputs ---------------------------------------------------------------------------------
    def _take_inputs(self, now_s: float) -> None:
        step, health = self.step, self.step.health
        # the stop first: a goal in this tick is refused when the stop came with it
        for stop in self._stop_in.take_all():
            step.operator_stop(bool(stop.data), now_s, f"operator stop on {STOP_TOPIC}")
        self.await_lockstep(now_s)
        if self._pause.tick(now_s) and self._resync:
            # its own pause: the joint sample it holds shows the arm before it, which the driver
            # held or lowered meanwhile; wait a little for one taken since (the supervisor ages
            # the inputs from this tick, and ramps the goal from the hand it is given)
            bound = self._joint_bounds.late_s
            self._joints_in.sub.await_stamp(now_s - bound, bound)
        arrays = self._joints_in.take_newest()
        if arrays is not None:
            if isinstance(arrays, str):
                health.refuse(JOINTS_TOPIC, arrays, now_s)
            else:
                step.receive_joints(PotentiometerReading(arrays.stamp.seconds, arrays.position,
                                                         arrays.velocity, ()))
        for arrays in self._muscles_in.take_all():
            if isinstance(arrays, str):
                health.refuse(TENDONS_TOPIC, arrays, now_s)
            else:
                step.receive_tendons(TendonState(arrays.stamp.seconds, arrays.position,
                                                 arrays.velocity, arrays.effort, ()))
        writers = self._sent_writers.to_judge(
            step.writer_watches[FOREIGN_ACTUATOR_WRITER].verdict.admit)
        if writers is not None:
            step.judge_writers(FOREIGN_ACTUATOR_WRITER, writers,
                              self._sent_writers.read_s)
        for arrays in self._sent_in.take_all():
            if isinstance(arrays, str):
                health.refuse(SENT_TOPIC, arrays, now_s)
            else:
                step.receive_sent(arrays.stamp.seconds,
                                  self._calibration.driver_to_n(arrays.effort))
        if self._dynamics_in is not None:
            msg = self._dynamics_in.take_newest()
            if msg is not None:
                try:
                    snapshot, _ = self.codec.from_msg(msg)
                except InputError as exc:
                    health.refuse(DYNAMICS_TOPIC, str(exc), now_s)
                else:
                    step.receive_snapshot(snapshot)
        for msg in self._goal_in.take_all():
            pose = messages.read_pose_stamped(msg)
            step.offer_goal(GoalRequest(pose.position_m, quaternion_xyzw=pose.quaternion_xyzw),
                            pose.stamp.seconds, now_s, pose.frame_id)
        for arrays in self._joint_goal_in.take_all():
            if isinstance(arrays, str):
                health.refuse(JOINT_GOAL_TOPIC, arrays, now_s)
            else:
                step.offer_joint_goal(arrays.position)
        for msg in self._trajectory_in.take_all():
            point = messages.read_goal_trajectory(msg, GOAL_TRAJECTORY_TOPIC)
            if isinstance(point, str):
                health.refuse(GOAL_TRAJECTORY_TOPIC, point, now_s)
                continue
            step.offer_goal(GoalRequest(point.position_m, point.velocity_m_s,
                                        point.acceleration_m_s2,
                                        quaternion_xyzw=point.quaternion_xyzw),
                            point.stamp.seconds, now_s, point.frame_id)

    def _on_acknowledge(self, request: Trigger.Request,
                        response: Trigger.Response) -> Trigger.Response:
        cleared = self.step.acknowledge()
        if self.step.stopped:
            response.success = False
            response.message = (f"refused: the operator stop is set (release it with false on "
                                f"{STOP_TOPIC})")
        else:
            response.success = True
            response.message = ("cleared: " + ", ".join(cleared)) if cleared else "nothing latched"
        self.get_logger().info(f"acknowledge: {response.message}")
        return response

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """``controller`` set while running: switched without a jump, or refused with the
        reason (the parameter then keeps its value); ``use_goal_orientation``: the goal gate's
        (:meth:`~musculo_control.safety.goal_gate.GoalGate.set_orientation`). It runs between
        two ticks, on the tick loop's thread."""
        for param in params:
            if param.name == "use_goal_orientation":
                self.step.set_goal_orientation(bool(param.value))
                self.get_logger().info(f"use_goal_orientation: {bool(param.value)}")
                continue
            if param.name != "controller":
                continue
            name = param.value
            if name not in CONTROLLER_NAMES:
                reason = f"controller must be one of {list(CONTROLLER_NAMES)}, not {name!r}"
            else:
                before = self.step.controller.name
                reason = build.switch_controller(self.step, self.parts, str(name),
                                                 now_stamp(self).seconds)
            if reason:
                self.get_logger().warning(reason)
                return SetParametersResult(successful=False, reason=reason)
            self.get_logger().info(f"controller switched: '{before}' -> '{name}'")
        return SetParametersResult(successful=True)

    # -- the tick -------------------------------------------------------------------------------
    def _tick(self) -> None:
        stamp = now_stamp(self)
        now_s = stamp.seconds
        self.timer.start(time.perf_counter())
        try:
            self._take_inputs(now_s)
            out, report, joint_age = self.step.tick(now_s)
        # faulty inputs are refused with a reason, and the step turns a fault of the control law
        # into minimum tension with its reason (the supervisor's net): what arrives here is a
        # bug. It still sends minimum tension, and leaves its traceback in the log.
        except Exception as exc:  # noqa: BLE001
            self.get_logger().error(f"internal error in a control tick, minimum tension: "
                                    f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            out = safe_output(self.robot, f"internal error {type(exc).__name__}: {exc} "
                                          f"(traceback logged)")
            report, joint_age = None, float("nan")
        self._cmd_pub.publish(self._cmd_msg.write(stamp, effort=out.tension_n))
        self.timer.stop(time.perf_counter())
        self._act_pub.publish(self._act_msg.write(stamp, out.activations))
        if report is not None:
            self._state_pub.publish(msg_types.to_msg(
                MSGS, msg_types.CONTROLLER_STATE,
                controller_state_values(out, report, self.timer.last_period_s, joint_age),
                self.frame_id, stamp, msg=self._state_out))
        if out.ok:
            self._hand_pub.publish(self._hand_msg.write(stamp, out.hand_position_m))
        goal = self.step.supervisor.goals.accepted
        if goal is not None and goal is not self._goal_shown:
            self._goal_shown = goal
            quat = (messages.quaternion_from_rotation(goal.rotation) if goal.rotation is not None
                    else np.array([0.0, 0.0, 0.0, 1.0]))
            self._goal_pub.publish(messages.pose_stamped_msg(MSGS, stamp, self.frame_id,
                                                       goal.position_m, quat))

    def _report_timing(self) -> None:
        summary = self.timer.summary()
        self.last_timing = summary
        self._timing_pub.publish(msg_types.to_msg(MSGS, msg_types.CONTROLLER_TIMING,
                                                  timing_record(summary), self.frame_id,
                                                  now_stamp(self)))

    def _values(self) -> dict[str, str]:
        values = self.step.values()
        t = self.last_timing
        if t is not None:
            values.update({
                "period p50/p99/max [ms]": f"{t.period_p50_s * 1e3:.2f} / "
                                           f"{t.period_p99_s * 1e3:.2f} / "
                                           f"{t.period_max_s * 1e3:.2f}",
                "compute p50/p99/max [ms]": f"{t.compute_p50_s * 1e3:.2f} / "
                                            f"{t.compute_p99_s * 1e3:.2f} / "
                                            f"{t.compute_max_s * 1e3:.2f}",
                "gc collections / longest pause [ms]": f"{t.gc_collections} / "
                                                       f"{t.gc_pause_max_s * 1e3:.2f}",
            })
        return values

    def shutdown(self) -> None:
        """One last minimum-tension command (the tendon driver's watchdog follows anyway)."""
        out = safe_output(self.robot, "shutting down")
        self._cmd_pub.publish(self._cmd_msg.write(now_stamp(self), effort=out.tension_n))
        self._gc.remove()


def main() -> None:
    raise SystemExit(run(ACTIVATION_QP_NODE, ActivationQPNodeParams, ActivationQPNode))


if __name__ == "__main__":
    main()
