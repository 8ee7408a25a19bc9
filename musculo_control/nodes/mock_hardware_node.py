"""mock_hardware_node: the MuJoCo mock arm behind the same raw topics as the real arm.

A shell over :class:`musculo_control.hardware.mock_arm.MockArm`, stepped as the ROS-free
runner steps it: physics at its own rate (``mock_arm.yaml`` physics.timestep_s, 1 kHz), raw
sensor samples every ``sensor_rate_hz`` (hw/potentiometers: ADC counts per joint;
hw/tendon_states: encoder and load-cell counts per actuator id), and the newest
hw/tendon_commands (driver units per actuator id) applied before each step.

Pacing: a wall-clock tick loop runs every sensor period / ``real_time_factor``; each tick steps
as many physics steps as the elapsed wall time calls for (in real time at most
``max_catch_up_s`` worth; time beyond is dropped and reported, and the stamps jump forward with
it). Stamps are the sample times: in real time, the ROS time at physics time 0 plus the physics
time; with ``publish_clock`` the physics time itself, also published on /clock, so the other
nodes run on simulated time (``use_sim_time``). Then the node never catches up in a burst (at
most one sensor period per tick): when the machine cannot keep ``real_time_factor``, simulated
time runs slower, steadily, instead of jumping over instants the other nodes' timers would miss.

Start-up: the arm is held still (physics paused, sensors running) until commands above the
minimum tension have arrived for ``release_after_s``; then the actuators start at the commanded
tensions and physics runs: a controller takes over an arm that was being held, as in the
ROS-free runner's reset, instead of catching a falling one.

Also offered: the hand-held force gauge (``mock/gauge``: PoseStamped, tip = position, push
axis = the pose's x axis; service ``mock/clear_gauge``) and ground truth for evaluation
(``mock/joint_states``, ``mock/hand``, ``mock/gauge_force``), never used by the controller.
"""

from __future__ import annotations

import time

import numpy as np
from geometry_msgs.msg import PointStamped, PoseStamped
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import Trigger

from musculo_control.control.goal import rotation_from_quaternion
from musculo_control.errors import ConfigError, InputError
from musculo_control.hardware.calibration import load_calibration
from musculo_control.hardware.drivers import load_drivers
from musculo_control.hardware.mock_arm import MockArm, load_mock_config
from musculo_control.model.robot import load_robot
from musculo_control.nodes import conversions as cv
from musculo_control.nodes.node_config import (
    MOCK_HARDWARE_NODE,
    MockHardwareNodeParams,
    config_dir_of,
    with_robot_base_frame,
)
from musculo_control.nodes.ros_common import (
    MSGS,
    QOS_STATE_PUB,
    Diagnostics,
    InputGuard,
    PolledInputs,
    Ticker,
    declare_parameters,
    run,
)
from musculo_control.stamps import Stamp

COMMAND_TOPIC = "hw/tendon_commands"
GAUGE_TOPIC = "mock/gauge"
#: Relative tolerance of "a rate divides the physics rate".
_DIVIDES_TOL = 1e-9


def _divisor(rate_hz: float, dt_s: float, key: str) -> int:
    ratio = 1.0 / (rate_hz * dt_s)
    n = round(ratio)
    if n < 1 or abs(ratio - n) > _DIVIDES_TOL * ratio:
        raise ConfigError(f"parameters of node '{MOCK_HARDWARE_NODE}'",
                          f"{MOCK_HARDWARE_NODE}.ros__parameters.{key}",
                          f"a rate that divides the physics rate {1.0 / dt_s:g} Hz", rate_hz)
    return n


class MockHardwareNode(Node):
    def __init__(self) -> None:
        super().__init__(MOCK_HARDWARE_NODE)
        p = self.params = declare_parameters(self, MockHardwareNodeParams)
        if p.publish_clock and self.get_parameter("use_sim_time").value:
            raise ConfigError(f"parameters of node '{MOCK_HARDWARE_NODE}'",
                              f"{MOCK_HARDWARE_NODE}.ros__parameters.use_sim_time",
                              "false when publish_clock is true (this node is the clock)", True)
        config_dir = config_dir_of(p.config_dir)
        robot = self.robot = load_robot(config_dir)
        p = self.params = with_robot_base_frame(p, robot)
        hardware_file = config_dir / "hardware.yaml"
        mock_file = config_dir / "mock_arm.yaml"
        calibration = load_calibration(robot, hardware_file)
        self.mock = MockArm(robot, calibration, load_mock_config(robot, mock_file),
                            None if p.seed < 0 else p.seed, str(mock_file))
        self.calibration = calibration
        self._min_tension_n = load_drivers(robot, hardware_file).tendons.config.min_tension_n
        self.q0 = (robot.home_pose_rad.copy() if not p.initial_pose_rad
                   else robot.arm.check_q(np.array(p.initial_pose_rad),
                                          "initial_pose_rad parameter"))
        self.mock.reset(self.q0, self._min_tension_n)
        self.dt_s = self.mock.dt_s
        self._sensor_div = _divisor(p.sensor_rate_hz, self.dt_s, "sensor_rate_hz")
        self._truth_div = _divisor(p.truth_rate_hz, self.dt_s, "truth_rate_hz")
        # in simulated time this node is the clock: it never catches up in a burst (the other
        # nodes' timers would skip the instants it jumps over); it lets simulated time run slower
        self._max_steps = (self._sensor_div if p.publish_clock
                           else max(1, round(p.max_catch_up_s / self.dt_s)))
        self.joints = robot.arm.joint_names
        self.actuators = tuple(str(a) for a in robot.actuator_ids)
        self._cmd_order = cv.NameOrder(COMMAND_TOPIC, self.actuators, "actuator id")
        self._pot_msg = cv.JointStateWriter(MSGS, self.joints)
        self._ten_msg = cv.JointStateWriter(MSGS, self.actuators)
        self._truth_msg = cv.JointStateWriter(MSGS, self.joints)
        self._guard = InputGuard(self, p.warn_throttle_s)
        # state
        self.steps = 0  # physics steps since start (held or not)
        self.running = p.release_after_s == 0.0
        self._held_good_s = 0.0
        self._command_n: np.ndarray | None = None
        self._command_wall_s = -np.inf
        self._overrun_steps = 0
        self._wall0 = self._wall_start = time.monotonic()
        # stamp of physics time 0: simulated time starts at clock_start_s; real time at now
        self._anchor_ns = (round(p.clock_start_s * 1e9) if p.publish_clock
                           else self.get_clock().now().nanoseconds)
        # topics
        self._pot_pub = self.create_publisher(JointState, "hw/potentiometers", QOS_STATE_PUB)
        self._ten_pub = self.create_publisher(JointState, "hw/tendon_states", QOS_STATE_PUB)
        self._truth_pub = self.create_publisher(JointState, "mock/joint_states", QOS_STATE_PUB)
        self._hand_pub = self.create_publisher(PointStamped, "mock/hand", QOS_STATE_PUB)
        self._force_pub = self.create_publisher(Float64, "mock/gauge_force", QOS_STATE_PUB)
        self._clock_pub = (self.create_publisher(Clock, "/clock", QOS_STATE_PUB)
                           if p.publish_clock else None)
        self.inputs = PolledInputs(self)
        self._commands_in = self.inputs.subscribe(JointState, COMMAND_TOPIC)
        self.create_subscription(PoseStamped, GAUGE_TOPIC, self._on_gauge, 10)
        self.create_service(Trigger, "mock/clear_gauge", self._on_clear_gauge)
        self.diag = Diagnostics(self, p.diagnostics_period_s, "mock arm", self._values)
        self.diag.update(cv.OK, self._status())
        # always on the wall clock: in simulated time this node is the clock
        self.ticker = Ticker(self, p.housekeeping_period_s, wall_clock=True)
        self.ticker.every(1.0 / (p.sensor_rate_hz * p.real_time_factor), self._tick)
        self.get_logger().info(
            f"mock arm: physics {1.0 / self.dt_s:g} Hz, sensors {p.sensor_rate_hz:g} Hz, "
            f"{'simulated time on /clock' if p.publish_clock else 'real time'} x"
            f"{p.real_time_factor:g}; "
            + ("running" if self.running else f"holding until commands hold it for "
                                              f"{p.release_after_s:g} s"))

    # -- inputs -------------------------------------------------------------------------------
    def _on_command(self, msg: JointState) -> None:
        arrays = cv.read_joint_state(msg, self._cmd_order, required=("effort",), finite=True)
        if isinstance(arrays, str):
            self._guard.refuse(COMMAND_TOPIC, arrays)
            return
        try:
            self.mock.set_command(arrays.effort)
        except InputError as exc:
            self._guard.refuse(COMMAND_TOPIC, str(exc))
            return
        self._command_n = self.calibration.driver_to_n(arrays.effort)
        self._command_wall_s = time.monotonic()

    def _on_gauge(self, msg: PoseStamped) -> None:
        pose = cv.read_pose_stamped(msg)
        if pose.frame_id != self.params.base_frame:
            self._guard.refuse(GAUGE_TOPIC, f"frame_id '{pose.frame_id}', expected "
                                            f"'{self.params.base_frame}'")
            return
        try:
            quat = pose.quaternion_xyzw / np.linalg.norm(pose.quaternion_xyzw)
            axis = rotation_from_quaternion(quat)[:, 0]
            self.mock.set_gauge(pose.position_m, axis)
        except (InputError, FloatingPointError, ValueError) as exc:
            self._guard.refuse(GAUGE_TOPIC, str(exc))
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
    def _stamp(self) -> Stamp:
        return Stamp.from_nanoseconds(self._anchor_ns + round(self.steps * self.dt_s * 1e9))

    def _tick(self) -> None:
        p = self.params
        msg = self._commands_in.take_newest()
        if msg is not None:
            self._on_command(msg)
        wall = time.monotonic()
        due = int((wall - self._wall0) * p.real_time_factor / self.dt_s) - self.steps
        if due > self._max_steps:
            skipped = due - self._max_steps
            self._overrun_steps += skipped
            # drop that time: physics falls behind the wall clock by it; in real time the stamps
            # jump forward by it, so that they stay the ROS time of the sample
            self._wall0 += skipped * self.dt_s / p.real_time_factor
            if not p.publish_clock:
                self._anchor_ns += round(skipped * self.dt_s * 1e9)
            due = self._max_steps
        if not self.running and due > 0:
            self._hold(wall, due * self.dt_s)
        for _ in range(max(due, 0)):
            if self.steps % self._sensor_div == 0:
                self._publish_sensors()
            if self.steps % self._truth_div == 0:
                self._publish_truth()
            if self.running:
                self.mock.step()
            self.steps += 1

    def _hold(self, wall_s: float, elapsed_s: float) -> None:
        """Count how long commands have been holding the arm; let go after release_after_s."""
        p = self.params
        fresh = wall_s - self._command_wall_s <= p.command_timeout_s
        cmd = self._command_n
        if fresh and cmd is not None and float(np.max(cmd)) > self._min_tension_n * (1 + 1e-6):
            self._held_good_s += elapsed_s
        else:
            self._held_good_s = 0.0
        if self._held_good_s >= p.release_after_s and cmd is not None:
            self.mock.reset(self.q0, np.maximum(cmd, 0.0))
            self.mock.set_command(self.calibration.n_to_driver(cmd))
            self.running = True
            self.get_logger().info("released: the commands hold the arm, physics runs")
            self.diag.update(cv.OK, self._status())

    def _publish_sensors(self) -> None:
        stamp = self._stamp()
        if self._clock_pub is not None:
            self._clock_pub.publish(cv.clock_msg(MSGS, stamp))
        enc, cell = self.mock.read_tendons()
        self._pot_pub.publish(self._pot_msg.write(stamp, self.mock.read_potentiometers()))
        self._ten_pub.publish(self._ten_msg.write(stamp, enc, effort=cell))

    def _publish_truth(self) -> None:
        stamp = self._stamp()
        mock = self.mock
        self._truth_pub.publish(self._truth_msg.write(stamp, mock.q_rad, mock.qd_rad_s))
        self._hand_pub.publish(cv.point_stamped_msg(MSGS, stamp, self.params.base_frame,
                                                    mock.hand_position_m))
        self._force_pub.publish(Float64(data=float(mock.gauge_force_n)))

    # -- health ---------------------------------------------------------------------------------
    def _status(self) -> str:
        return "running" if self.running else "holding the arm until the controller holds it"

    def _values(self) -> dict[str, str]:
        wall = time.monotonic() - self._wall_start
        values = {
            "physics time [s]": f"{self.steps * self.dt_s:.3f}",
            "dropped physics time [s]": f"{self._overrun_steps * self.dt_s:.3f}",
            "real-time factor achieved": f"{self.steps * self.dt_s / max(wall, 1e-9):.3f}",
            **{f"mujoco warning {k}": str(v) for k, v in self.mock.warnings().items()},
            **self._guard.rejections.summary(),
        }
        return values


def main() -> None:
    raise SystemExit(run(MOCK_HARDWARE_NODE, MockHardwareNodeParams, MockHardwareNode))


if __name__ == "__main__":
    main()
