"""mock_hardware_node: the MuJoCo mock arm behind the same raw topics as the real arm.

A shell over :class:`~musculo_control.sim.mock_stage.MockStage`, the object the ROS-free runner
steps in simulation: physics at its own rate (``mock_arm.yaml`` physics.timestep_s), raw sensor
samples at hardware.yaml ``rates.sensor_rate_hz`` (hw/potentiometers: ADC counts per joint;
hw/tendon_states: encoder and load-cell counts per actuator id), every hw/tendon_commands
(driver units per actuator id) applied at the physics step of its stamp, the arm held still at
start-up until the commands hold it (``mock_arm.yaml`` startup), the actuator modules' own
watchdog.

Pacing: a wall-clock tick loop runs every sensor period / ``real_time_factor``; each tick steps
as many physics steps as the elapsed wall time calls for (in real time at most
``max_catch_up_s`` worth; time beyond is dropped and reported, and the stamps jump forward with
it). Stamps are the sample times: in real time, the ROS time at physics time 0 plus the physics
time; with ``publish_clock`` the physics time itself, also published on /clock, so the other
nodes run on simulated time (``use_sim_time``). Then the node never catches up in a burst (at
most one sensor period per tick): when the machine cannot keep ``real_time_factor``, simulated
time runs slower, steadily, instead of jumping over instants the other nodes' timers would miss.

Also offered: the hand-held force gauge (``mock/gauge``: PoseStamped, tip = position, push
axis = the pose's x axis; service ``mock/clear_gauge``) and ground truth for evaluation
(``mock/joint_states``, ``mock/hand``, ``mock/elbow``, ``mock/gauge_force``), never used by the
controller.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from geometry_msgs.msg import PointStamped, PoseStamped
from musculo_control_msgs.msg import DynamicsSnapshot
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import Trigger

from musculo_control import messages
from musculo_control.control.goal import rotation_from_quaternion
from musculo_control.errors import ConfigError, InputError
from musculo_control.estimation.snapshot_codec import SnapshotCodec
from musculo_control.loop.lockstep import WATCHED, lockstep_leads
from musculo_control.loop.parts import load_parts
from musculo_control.loop.timing import divisor
from musculo_control.loop.topics import (
    CONTROLLER_ACTIVATIONS,
    DYNAMICS,
    JOINT_STATES,
    MUSCLE_COMMANDS,
    TENDON_COMMANDS,
)
from musculo_control.nodes.node_config import (
    MOCK_HARDWARE_NODE,
    MockHardwareNodeParams,
    config_dir_of,
)
from musculo_control.nodes.process import run
from musculo_control.nodes.ros_common import MSGS, QOS_STATE_PUB, StageNode
from musculo_control.nodes.writers import GraphWriters, fully_qualified
from musculo_control.safety.authority import WriterWatch
from musculo_control.serialized import (
    SerializedJointStateReader,
    SerializedJointStateWriter,
    SerializedPointWriter,
)
from musculo_control.sim.mock_arm import load_mock_config
from musculo_control.sim.mock_stage import COMMAND_TOPIC, mock_stage
from musculo_control.stamps import Stamp

GAUGE_TOPIC = "mock/gauge"
#: Lockstep watches every node's newest output: reliable, so that no sample it waits for is lost
QOS_PROGRESS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                          reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.VOLATILE)
QOS_PROGRESS_SIFTED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=20,
                                 reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.VOLATILE)


class MockHardwareNode(StageNode[MockHardwareNodeParams]):
    def __init__(self) -> None:
        # always on the wall clock: in simulated time this node is the clock
        super().__init__(MOCK_HARDWARE_NODE, MockHardwareNodeParams, wall_clock=True)
        p = self.params
        if p.publish_clock and self.get_parameter("use_sim_time").value:
            raise ConfigError(f"parameters of node '{MOCK_HARDWARE_NODE}'",
                              f"{MOCK_HARDWARE_NODE}.ros__parameters.use_sim_time",
                              "false when publish_clock is true (this node is the clock)", True)
        config_dir = config_dir_of(p.config_dir)
        parts = self.parts = load_parts(config_dir)
        robot = self.robot = parts.robot
        mock_file = config_dir / "mock_arm.yaml"
        self.stage = mock_stage(parts, load_mock_config(robot, mock_file),
                                      None if p.seed < 0 else p.seed, 0.0, str(mock_file),
                                      p.warn_throttle_s)
        self.mock = self.stage.arm
        self._q0 = (robot.home_pose_rad.copy() if not p.initial_pose_rad else
                    robot.arm.check_q(np.array(p.initial_pose_rad), "initial_pose_rad parameter"))
        self.dt_s = self.mock.dt_s
        folder = str(config_dir)
        rate = parts.drivers.rates.sensor_rate_hz
        self._sensor_div = divisor(rate, self.dt_s, f"{folder}/hardware.yaml",
                                   "rates.sensor_rate_hz")
        self._truth_div = divisor(p.truth_rate_hz, self.dt_s,
                                  f"parameters of node '{MOCK_HARDWARE_NODE}'",
                                  f"{MOCK_HARDWARE_NODE}.ros__parameters.truth_rate_hz")
        # in simulated time this node is the clock: it never catches up in a burst (the other
        # nodes' timers would skip the instants it jumps over); it lets simulated time run slower
        self._max_steps = (self._sensor_div if p.publish_clock
                           else max(1, round(p.max_catch_up_s / self.dt_s)))
        self.frame_id = robot.arm.base_frame
        joints = robot.arm.joint_names
        actuators = tuple(str(a) for a in robot.actuator_ids)
        self._pot_msg = SerializedJointStateWriter(MSGS, joints)
        self._ten_msg = SerializedJointStateWriter(MSGS, actuators)
        self._truth_msg = SerializedJointStateWriter(MSGS, joints)
        self._point_msg = SerializedPointWriter(MSGS, self.frame_id)
        self.steps = 0  # physics steps since start (held or not)
        self._overrun_steps = 0
        self._pot_pub = self.create_publisher(JointState, "hw/potentiometers", QOS_STATE_PUB)
        self._ten_pub = self.create_publisher(JointState, "hw/tendon_states", QOS_STATE_PUB)
        self._truth_pub = self.create_publisher(JointState, "mock/joint_states", QOS_STATE_PUB)
        self._hand_pub = self.create_publisher(PointStamped, "mock/hand", QOS_STATE_PUB)
        self._elbow_pub = self.create_publisher(PointStamped, "mock/elbow", QOS_STATE_PUB)
        self._force_pub = self.create_publisher(Float64, "mock/gauge_force", QOS_STATE_PUB)
        self._clock_pub = (self.create_publisher(Clock, "/clock", QOS_STATE_PUB)
                           if p.publish_clock else None)
        self._commands_in = self.joint_states_in(COMMAND_TOPIC, actuators, "actuator id",
                                                 required=("effort",), finite=True,
                                                 depth=p.command_queue)
        self.stage.writers = WriterWatch(COMMAND_TOPIC, {fully_qualified(self, p.command_writer)},
                                         parts.safety.authority)
        self._writers = GraphWriters(self, COMMAND_TOPIC)
        # lockstep: the newest stamp each node has put out, when it was seen (wall), and how
        # far behind the next clock it may be (loop/lockstep.py)
        leads = lockstep_leads(parts)
        self._lockstep = p.lockstep and p.publish_clock
        # topic -> [stamp, wall time seen, lead, wall time it fell behind (-inf: it is not)]
        self._progress: dict[str, list[float]] = {}
        self._progress_in = {}
        self._progress_stamp: dict[str, Callable[[Any], float]] = {}  # a message's stamp [s]
        self._given_up: set[str] = set()
        if self._lockstep:
            codec = SnapshotCodec(robot.arm.n_joints, robot.n_muscles,
                                  len(parts.controller.task.rows))
            # a malformed snapshot keeps the last good stamp (-inf); the joint states and
            # commands are taken as bytes and only their stamps read
            names = {JOINT_STATES: joints, MUSCLE_COMMANDS: robot.muscle_names,
                     TENDON_COMMANDS: actuators}
            # the controller's progress read from its activations, which carry the same tick
            # stamp as its commands: anyone may publish on muscle_commands (a stray commander,
            # refused by the driver), and its samples must not release the clock
            watched = {MUSCLE_COMMANDS: CONTROLLER_ACTIVATIONS}
            for topic in WATCHED:
                lead = leads[topic]
                raw, source = topic in names, watched.get(topic, topic)
                # hw/tendon_commands is sifted by writer (_newest_progress): a queue, so that a
                # stray's newer sample does not take the place of the driver's
                qos = QOS_PROGRESS_SIFTED if topic == TENDON_COMMANDS else QOS_PROGRESS
                self._progress_in[topic] = self.inputs.subscribe(
                    JointState if raw else DynamicsSnapshot, source, qos=qos, raw=raw)
                self._progress_stamp[topic] = (
                    SerializedJointStateReader(
                        MSGS, messages.NameOrder(source, names[topic])).stamp_s
                    if raw else partial(messages.snapshot_stamp_s, codec))
                self._progress[topic] = [-np.inf, -np.inf, lead, -np.inf]
        self.lockstep_waits = 0  # ticks that waited for a lagging node
        self.create_subscription(PoseStamped, GAUGE_TOPIC, self._on_gauge, 10)
        self.create_service(Trigger, "mock/clear_gauge", self._on_clear_gauge)
        self.watch(self.stage.health, "mock arm", self._values)
        # physics time 0 is now: on the wall clock and, in real time, on the ROS clock
        self._wall0 = self._wall_start = time.monotonic()
        self.stage.reset(self._q0, p.clock_start_s if p.publish_clock else self.clock_s())
        self.stage.check()
        self.every(1.0 / (rate * p.real_time_factor), self._tick)
        self.get_logger().info(
            f"mock arm: physics {1.0 / self.dt_s:g} Hz, sensors {rate:g} Hz, real time "
            f"x{p.real_time_factor:g}" + (", publishing /clock" if p.publish_clock else "")
            + f"; holding until commands hold it for {self.stage.startup.release_after_s:g} s")

    # -- inputs ---------------------------------------------------------------------------------
    def _take_command(self) -> None:
        taken = self._commands_in.take_all_from()
        stage = self.stage
        if stage.writers is not None:  # samples first, then the graph (tendon_driver_node)
            writers = self._writers.to_judge(stage.writers.verdict.admit)
            if writers is not None:
                stage.writers.judge(writers, self._writers.read_s)
        for arrays, writer in taken:
            if isinstance(arrays, str):
                self.stage.health.refuse(COMMAND_TOPIC, arrays, self.stage.time_s)
                continue
            self.stage.receive_command(arrays.effort, arrays.stamp.seconds, writer)

    def _on_gauge(self, msg: PoseStamped) -> None:
        pose = messages.read_pose_stamped(msg)
        health = self.stage.health
        if pose.frame_id != self.frame_id:
            health.refuse(GAUGE_TOPIC, f"frame_id '{pose.frame_id}', expected "
                                       f"'{self.frame_id}'", self.stage.time_s)
            return
        try:
            quat = pose.quaternion_xyzw / np.linalg.norm(pose.quaternion_xyzw)
            axis = rotation_from_quaternion(quat)[:, 0]
            self.mock.set_gauge(pose.position_m, axis)
        except (InputError, FloatingPointError, ValueError) as exc:
            health.refuse(GAUGE_TOPIC, str(exc), self.stage.time_s)
            return
        self.get_logger().info(f"gauge at {np.round(pose.position_m, 3).tolist()} m pushing "
                               f"along {np.round(axis, 3).tolist()}")

    def _on_clear_gauge(self, request: Trigger.Request,
                        response: Trigger.Response) -> Trigger.Response:
        self.mock.clear_gauge()
        response.success = True
        response.message = "gauge removed"
        return response

    # -- stepping -------------------------------------------------------------------------------
    def _lagging(self, wall: float) -> str | None:
        """A node that is more than its lead behind the next clock to publish (lockstep)."""
        t_next = self.stage.time_s  # published at the next step (a sensor instant)
        for topic, sub in self._progress_in.items():
            entry = self._progress[topic]
            msg = self._newest_progress(topic, sub)
            if msg is not None:
                stamp_s = self._progress_stamp[topic](msg)
                entry[0] = max(entry[0], stamp_s) if topic == DYNAMICS else stamp_s
                entry[1] = wall
                self._given_up.discard(topic)
            stamp, seen, lead, behind = entry
            if seen == -np.inf or stamp >= t_next - lead + 1e-9:
                entry[3] = -np.inf  # up to date
                continue
            if behind == -np.inf:
                entry[3] = behind = wall
            # silent since it fell behind or since its last output, whichever came later: a
            # node idle while the clock was held for another one is not silent (counted from
            # its last output alone, every node was given up on after one long hold)
            silent = wall - max(seen, behind)
            if silent <= self.params.lockstep_timeout_s:
                return topic
            if topic not in self._given_up:
                self._given_up.add(topic)
                self.get_logger().warning(
                    f"lockstep: no {topic} stamped {t_next - lead:.3f} s or later (newest "
                    f"{stamp:.3f} s) for {silent:.1f} s (wall): no longer waiting for it")
        return None

    def _newest_progress(self, topic: str, sub: Any) -> Any | None:
        """The newest sample of a watched stream; of ``hw/tendon_commands``, the newest of its
        authorised writer (the tendon driver): a stray actuator writer's current-stamped
        samples would release the clock ahead of the driver. Where samples carry no writer id
        (Humble, Jazzy), only while every writer listed is authorised."""
        watch = self.stage.writers
        if topic != TENDON_COMMANDS or watch is None:
            return sub.take_newest()
        own = [msg for msg, gid in sub.take_all_from() if watch.from_authorised(gid)]
        return own[-1] if own else None

    def _held(self) -> bool:
        """Lockstep: whether a node lags, and then hold the clock (the simulation runs slower
        instead of leaving a node behind)."""
        if not (self._lockstep and self.stage.arm.steps > 0):
            return False
        wall = time.monotonic()
        lagging = self._lagging(wall)
        if lagging is None:
            return False
        self.lockstep_waits += 1
        self.lagging_topic = lagging
        self._wall0 = wall - self.steps * self.dt_s / self.params.real_time_factor
        return True

    def _tick(self) -> None:
        p = self.params
        self._take_command()
        if self._held():
            return
        wall = time.monotonic()
        due = int((wall - self._wall0) * p.real_time_factor / self.dt_s) - self.steps
        if due > self._max_steps:
            skipped = due - self._max_steps
            self._overrun_steps += skipped
            # drop that time: physics falls behind the wall clock by it; in real time the stamps
            # jump forward by it, so that they stay the ROS time of the sample
            self._wall0 += skipped * self.dt_s / p.real_time_factor
            if not p.publish_clock:
                self.stage.skip(skipped * self.dt_s)
            due = self._max_steps
        stage = self.stage
        for k in range(max(due, 0)):
            if self.steps % self._sensor_div == 0:
                # a tick that catches up steps several sensor instants: each clock after the
                # first waits for the nodes too (else a node saw the clock jump past its ticks)
                if k > 0 and self._held():
                    return
                if self._clock_pub is not None:
                    self._clock_pub.publish(
                        messages.clock_msg(MSGS, Stamp.from_seconds(stage.time_s)))
                self._publish_sensors()
                stage.check()
            if self.steps % self._truth_div == 0:
                self._publish_truth()
            was_held = self.mock.held
            stage.step()
            if was_held and not self.mock.held:
                self.get_logger().info("released: the commands hold the arm, physics runs")
            self.steps += 1

    def _publish_sensors(self) -> None:
        for stamp_s, counts, enc, cell in self.stage.sense():
            stamp = Stamp.from_seconds(stamp_s)
            if counts is not None:
                self._pot_pub.publish(self._pot_msg.write(stamp, counts))
            if enc is not None and cell is not None:
                self._ten_pub.publish(self._ten_msg.write(stamp, enc, effort=cell))

    def _publish_truth(self) -> None:
        stamp = Stamp.from_seconds(self.stage.time_s)
        mock = self.mock
        self._truth_pub.publish(self._truth_msg.write(stamp, mock.q_rad, mock.qd_rad_s))
        self._hand_pub.publish(self._point_msg.write(stamp, mock.hand_position_m))
        self._elbow_pub.publish(self._point_msg.write(stamp, mock.elbow_position_m))
        self._force_pub.publish(Float64(data=float(mock.gauge_force_n)))

    def _values(self) -> dict[str, str]:
        wall = time.monotonic() - self._wall_start
        return {**self.stage.values(),
                "dropped physics time [s]": f"{self._overrun_steps * self.dt_s:.3f}",
                "lockstep waits": str(self.lockstep_waits),
                "last waited for": getattr(self, "lagging_topic", ""),
                "real-time factor achieved": f"{self.steps * self.dt_s / max(wall, 1e-9):.3f}"}


def main() -> None:
    raise SystemExit(run(MOCK_HARDWARE_NODE, MockHardwareNodeParams, MockHardwareNode))


if __name__ == "__main__":
    main()
