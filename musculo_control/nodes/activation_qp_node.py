"""activation_qp_node: the 125 Hz controller (paper eq. 9-17) as a ROS 2 node.

The same composition as the ROS-free runner's control step
(:meth:`musculo_control.sim.runner.ClosedLoop._control`): at every tick, the newest joint state
(fresh), the newest dynamics snapshot (up to ~50 ms old) and the hand goal in force go into
:meth:`Controller.tick`; its tensions go out on ``muscle_commands``. Joint states and
snapshots are taken at the tick (polled, see :mod:`musculo_control.nodes.ros_common`); the
measured muscle states are not subscribed, because the controller (as the paper's) commands
tensions open-loop and leaves the tension loop to the actuator modules. Any stale or invalid
input, or a QP that does not solve, sends every muscle to the minimum tension and says why on
/diagnostics at once:

- no joint state, or the newest older than ``joint_state_timeout_s`` (node clock - stamp);
- no dynamics message received for ``dynamics_timeout_s`` (a dead dynamics node is noticed
  here, by receipt time, well before its last snapshot exceeds ``qp.snapshot_max_age_s``);
- the controller's own refusals (snapshot too old, non-finite values, QP not solved).

Before the first goal arrives the hand holds the pose it had at the first tick. Goals pass
:class:`musculo_control.control.goal_input.GoalGate` (frame, NaN, workspace, stamp order).

Timing: :class:`musculo_control.control.timing.TickTimer` measures each tick's period and
compute time; the per-tick values go out on ``controller/state``, window statistics (p50, p99,
max, overruns, GC pauses) on ``controller/timing`` and /diagnostics.
"""

from __future__ import annotations

import gc
import time

import numpy as np
from geometry_msgs.msg import PointStamped, PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from musculo_control.control.controller import load_controller_config, make_controller
from musculo_control.control.fresh_state import FreshStateEstimator
from musculo_control.control.goal import HandGoal
from musculo_control.control.goal_input import GoalGate
from musculo_control.control.output import ControlOutput, safe_output
from musculo_control.control.state_record import (
    controller_state_layout,
    controller_state_values,
)
from musculo_control.control.timing import (
    TIMING_LAYOUT,
    GcPauses,
    Percentiles,
    TickTimer,
    TimingSummary,
    WindowStats,
    timing_record,
)
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.estimation.snapshot_codec import SnapshotCodec
from musculo_control.model.robot import load_robot
from musculo_control.nodes import conversions as cv
from musculo_control.nodes.node_config import (
    ACTIVATION_QP_NODE,
    ActivationQPNodeParams,
    config_dir_of,
    with_robot_base_frame,
)
from musculo_control.nodes.ros_common import (
    MSGS,
    QOS_GOAL,
    QOS_STATE_PUB,
    Diagnostics,
    InputGuard,
    PolledInputs,
    Ticker,
    declare_parameters,
    now_stamp,
    run,
)
from musculo_control.stamps import Stamp, StampOrder

JOINTS_TOPIC = "joint_states"
DYNAMICS_TOPIC = "dynamics"
GOAL_TOPIC = "hand_goal"
COMMAND_TOPIC = "muscle_commands"


class ActivationQPNode(Node):
    def __init__(self) -> None:
        super().__init__(ACTIVATION_QP_NODE)
        p = self.params = declare_parameters(self, ActivationQPNodeParams)
        config_dir = config_dir_of(p.config_dir)
        robot = self.robot = load_robot(config_dir)
        p = self.params = with_robot_base_frame(p, robot)
        config = load_controller_config(config_dir)
        self.controller = make_controller(p.controller, robot, config)
        self.codec = SnapshotCodec(robot.arm.n_joints, robot.n_muscles, len(config.task.rows))
        self.gate = GoalGate(config.workspace, p.base_frame, GOAL_TOPIC, p.use_goal_orientation)
        self._fk = FreshStateEstimator(robot)
        self.muscles = robot.muscle_names
        self.controlled = tuple(robot.muscle_names[i] for i in robot.controlled_idx)
        self._state_layout = controller_state_layout(robot.arm.n_joints)
        self._cmd_msg = cv.JointStateWriter(MSGS, self.muscles)
        self._act_msg = cv.JointStateWriter(MSGS, self.controlled)
        self._state_msg = cv.RecordWriter(MSGS, self._state_layout.dims())
        self._timing_msg = cv.RecordWriter(MSGS, TIMING_LAYOUT.dims())
        # inputs: the newest of each, checked
        self._joint_order = cv.NameOrder(JOINTS_TOPIC, robot.arm.joint_names, "joint name")
        self._joint_stamps = StampOrder(JOINTS_TOPIC)
        self._snapshot_stamps = StampOrder(DYNAMICS_TOPIC)
        self._guard = InputGuard(self, p.warn_throttle_s)
        self._joints: cv.JointArrays | None = None
        self._snapshot: DynamicsSnapshot | None = None
        self._snapshot_received_s: float | None = None
        self._goal: HandGoal | None = None
        # outputs
        self._cmd_pub = self.create_publisher(JointState, COMMAND_TOPIC, QOS_STATE_PUB)
        self._act_pub = self.create_publisher(JointState, "controller/activations",
                                              QOS_STATE_PUB)
        self._state_pub = self.create_publisher(Float64MultiArray, "controller/state",
                                                QOS_STATE_PUB)
        self._hand_pub = self.create_publisher(PointStamped, "controller/hand", QOS_STATE_PUB)
        self._goal_pub = self.create_publisher(PoseStamped, "controller/goal", QOS_GOAL)
        self._timing_pub = self.create_publisher(Float64MultiArray, "controller/timing",
                                                 QOS_STATE_PUB)
        self.inputs = PolledInputs(self)
        self._joints_in = self.inputs.subscribe(JointState, JOINTS_TOPIC)
        self._dynamics_in = self.inputs.subscribe(Float64MultiArray, DYNAMICS_TOPIC)
        self.create_subscription(PoseStamped, GOAL_TOPIC, self._on_goal, QOS_GOAL)
        # timing and health
        self._gc = GcPauses()
        self.timer = TickTimer(1.0 / p.rate_hz, gc_pauses=self._gc)
        self.last_timing: TimingSummary | None = None
        # how old the inputs are at the ticks: joint state (now - stamp), dynamics (time since
        # a message last arrived) [s]
        self._joint_age = WindowStats()
        self._dynamics_silence = WindowStats()
        self.last_ages: tuple[Percentiles, Percentiles] | None = None
        # the tick's CPU time (thread time): the wall-clock compute time minus the time the
        # process waited for a CPU [s]
        self._compute_cpu = WindowStats()
        self.last_compute_cpu: Percentiles | None = None
        self._ever_ok = False
        self._last_ok: bool | None = None
        self._fault_ticks = 0
        self._last_output: ControlOutput | None = None
        self._last_tick: Stamp | None = None
        self.diag = Diagnostics(self, p.diagnostics_period_s, "controller", self._values)
        self.create_timer(p.timing_report_period_s, self._report_timing)
        self.ticker = Ticker(self, p.housekeeping_period_s)
        self.ticker.every(1.0 / p.rate_hz, self._tick)
        if p.gc_freeze:
            # start-up objects (models, solver, libraries) leave the collector's working set, so
            # that an oldest-generation collection in the loop does not walk them all
            gc.collect()  # the start-up garbage
            t0 = time.perf_counter()
            gc.collect()  # what a full collection of the live heap costs
            t1 = time.perf_counter()
            gc.freeze()
            gc.collect()
            t2 = time.perf_counter()
            self.get_logger().info(f"gc: a full collection takes {(t1 - t0) * 1e3:.1f} ms "
                                   f"before gc.freeze(), {(t2 - t1) * 1e3:.2f} ms after "
                                   f"({gc.get_freeze_count()} objects frozen)")
        self._gc.install()  # counts the collections of the running loop, not the ones above
        self.get_logger().info(f"controller '{p.controller}' at {p.rate_hz:g} Hz")

    # -- inputs -------------------------------------------------------------------------------
    def _take_inputs(self) -> None:
        """The newest joint state and dynamics message, if new ones arrived since the last tick."""
        msg = self._joints_in.take_newest()
        if msg is not None:
            self._on_joints(msg)
        msg = self._dynamics_in.take_newest()
        if msg is not None:
            self._on_dynamics(msg)

    def _on_joints(self, msg: JointState) -> None:
        arrays = self._guard.joint_state(JOINTS_TOPIC, msg, self._joint_order, self._joint_stamps)
        if arrays is not None:
            self._joints = arrays

    def _on_dynamics(self, msg: Float64MultiArray) -> None:
        dims, data, offset = cv.read_float64_multiarray(msg)
        try:
            snapshot, stamp = self.codec.decode(dims, data, offset)
        except InputError as exc:
            self._guard.refuse(DYNAMICS_TOPIC, str(exc))
            return
        late = self._snapshot_stamps.check(stamp)
        if late is not None:
            self._guard.refuse(DYNAMICS_TOPIC, late)
            return
        self._snapshot = snapshot
        self._snapshot_received_s = now_stamp(self).seconds

    def _on_goal(self, msg: PoseStamped) -> None:
        pose = cv.read_pose_stamped(msg)
        goal = self.gate.accept(pose.stamp, pose.frame_id, pose.position_m, pose.quaternion_xyzw)
        if isinstance(goal, str):
            self._guard.refuse(GOAL_TOPIC, goal)
            return
        self._set_goal(goal)
        self.get_logger().info(f"new hand goal {np.round(goal.position_m, 3).tolist()} m")

    def _set_goal(self, goal: HandGoal) -> None:
        self._goal = goal
        quat = (cv.quaternion_from_rotation(goal.rotation) if goal.rotation is not None
                else np.array([0.0, 0.0, 0.0, 1.0]))
        self._goal_pub.publish(cv.pose_stamped_msg(MSGS, now_stamp(self), self.params.base_frame,
                                                   goal.position_m, quat))

    # -- the tick -------------------------------------------------------------------------------
    def _tick(self) -> None:
        stamp = now_stamp(self)
        if self._last_tick is not None and stamp.nanoseconds <= self._last_tick.nanoseconds:
            # on simulated time a late rclpy timer can fire again before /clock has moved:
            # one command per instant (the driver would refuse the repeat as out of order)
            return
        self._last_tick = stamp
        self.timer.start(time.perf_counter())
        cpu0 = time.thread_time()
        try:
            self._take_inputs()
            out = self._control(stamp.seconds)
        except Exception as exc:  # a fault in the shell must still send f_min
            out = safe_output(self.robot, f"node fault: {type(exc).__name__}: {exc}")
        self._cmd_pub.publish(self._cmd_msg.write(stamp, effort=out.tension_n))
        self.timer.stop(time.perf_counter())
        self._compute_cpu.add(time.thread_time() - cpu0)
        self._act_pub.publish(self._act_msg.write(stamp, out.activations))
        self._state_pub.publish(self._state_msg.write(
            self._state_layout.pack(controller_state_values(out, self.timer.last_period_s))))
        if out.ok:
            self._hand_pub.publish(cv.point_stamped_msg(MSGS, stamp, self.params.base_frame,
                                                        out.hand_position_m))
        self._report(out)

    def _control(self, t_s: float) -> ControlOutput:
        """The runner's control step, with the node's receipt-time checks in front."""
        p = self.params
        joints = self._joints
        if joints is None:
            return safe_output(self.robot, f"joint state: no {JOINTS_TOPIC} received yet")
        age = t_s - joints.stamp.seconds
        self._joint_age.add(age)
        if not age <= p.joint_state_timeout_s:
            return safe_output(self.robot, f"joint state: newest {JOINTS_TOPIC} is "
                                           f"{age * 1e3:.1f} ms old (limit "
                                           f"{p.joint_state_timeout_s * 1e3:.0f} ms)")
        if self._snapshot_received_s is not None:
            silent = t_s - self._snapshot_received_s
            self._dynamics_silence.add(silent)
            if not silent <= p.dynamics_timeout_s:
                return safe_output(self.robot, f"dynamics: no {DYNAMICS_TOPIC} message for "
                                               f"{silent * 1e3:.0f} ms (limit "
                                               f"{p.dynamics_timeout_s * 1e3:.0f} ms)")
        goal = self._goal
        if goal is None:
            hand = self._fk.hand_state(joints.position, np.zeros_like(joints.position))
            goal = HandGoal.hold(hand.position_m,
                                 hand.rotation if p.use_goal_orientation else None)
            self._set_goal(goal)
        return self.controller.tick(self._snapshot, joints.position, joints.velocity, goal, t_s)

    def _report(self, out: ControlOutput) -> None:
        self._last_output = out
        if out.ok:
            self._ever_ok = True
            if self._last_ok is not True:
                self.get_logger().info("commanding the controller's tensions")
            self.diag.update(cv.OK, f"{self.params.controller}: commanding tensions")
        else:
            self._fault_ticks += 1
            level = cv.ERROR if self._ever_ok else cv.WARN
            text = f"minimum tension: {out.reason}"
            if self._last_ok is not False:
                # rclpy fixes a call site's severity on first use: one call per severity
                if self._ever_ok:
                    self.get_logger().error(text)
                else:
                    self.get_logger().warning(text)
            self.diag.update(level, text)
        self._last_ok = out.ok

    def _report_timing(self) -> None:
        summary = self.timer.summary()
        self.last_timing = summary
        self.last_ages = (self._joint_age.take(), self._dynamics_silence.take())
        self.last_compute_cpu = self._compute_cpu.take()
        self._timing_pub.publish(self._timing_msg.write(TIMING_LAYOUT.pack(timing_record(summary))))

    def _values(self) -> dict[str, str]:
        values = {"minimum-tension ticks": str(self._fault_ticks)}
        t = self.last_timing
        if t is not None:
            values.update({
                "period p50/p99/max [ms]": f"{t.period_p50_s * 1e3:.2f} / "
                                           f"{t.period_p99_s * 1e3:.2f} / "
                                           f"{t.period_max_s * 1e3:.2f}",
                "jitter p99/max [ms]": f"{t.jitter_p99_s * 1e3:.2f} / {t.jitter_max_s * 1e3:.2f}",
                "compute p50/p99/max [ms]": f"{t.compute_p50_s * 1e3:.2f} / "
                                            f"{t.compute_p99_s * 1e3:.2f} / "
                                            f"{t.compute_max_s * 1e3:.2f}",
                "overruns": str(t.overruns),
                "ticks skipped by the loop (late by a period)": str(self.ticker.late_ticks),
                "gc collections / longest pause [ms]": f"{t.gc_collections} / "
                                                       f"{t.gc_pause_max_s * 1e3:.2f}",
            })
        cpu = self.last_compute_cpu
        if cpu is not None:
            values["compute CPU time p50/p99/max [ms]"] = \
                f"{cpu.p50 * 1e3:.2f} / {cpu.p99 * 1e3:.2f} / {cpu.max * 1e3:.2f}"
        if self.last_ages is not None:
            for label, pct in zip(("joint_states age", "time since a dynamics message"),
                                  self.last_ages):
                values[f"{label} p50/p99/max [ms]"] = \
                    f"{pct.p50 * 1e3:.1f} / {pct.p99 * 1e3:.1f} / {pct.max * 1e3:.1f}"
        out = self._last_output
        if out is not None and out.ok:
            values["solve time [ms]"] = f"{out.solve_time_s * 1e3:.3f}"
            values["snapshot age [ms]"] = f"{out.snapshot_age_s * 1e3:.1f}"
        values.update(self._guard.rejections.summary())
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
