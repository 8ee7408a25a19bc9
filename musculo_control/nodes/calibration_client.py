"""``musculo calibrate`` over the node graph: the raw topics in, raw tendon commands out.

A thin rclpy shell around :class:`~musculo_control.hardware.calibrator.Calibrator` (which
decides everything): at each hw/tendon_states sample it pairs the newest hw/potentiometers
sample with it, offers both to the calibrator and publishes its tensions on hw/tendon_commands
in driver units. It commands the tendons itself, so it refuses to start while anything else
publishes hw/tendon_commands (the tendon driver, a controller), and stops, commands and all, if
one appears. Between the phases with the arm held and the pulls it waits for the operator to
let the arm go (Enter), unless told not to; the modules keep their taut tension meanwhile.
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.publisher import Publisher
from sensor_msgs.msg import JointState

from musculo_control import messages
from musculo_control.errors import InputError
from musculo_control.hardware.calibrator import Calibrator
from musculo_control.loop.topics import TENDON_COMMANDS
from musculo_control.model.robot import Robot
from musculo_control.nodes.ros_common import MSGS, QOS_STATE_PUB, QOS_STATE_SUB

POT_TOPIC = "hw/potentiometers"
TENDON_TOPIC = "hw/tendon_states"
#: How often others publishing hw/tendon_commands are looked for during the run [s].
_WATCH_S = 0.5


class CalibrationClient(Node):
    def __init__(self, robot: Robot, calibrator: Calibrator) -> None:
        super().__init__("musculo_calibrate")
        self.calibrator = calibrator
        actuators = tuple(str(a) for a in robot.actuator_ids)
        self._pot_order = messages.NameOrder(POT_TOPIC, robot.arm.joint_names, "joint name")
        self._ten_order = messages.NameOrder(TENDON_TOPIC, actuators, "actuator id")
        self._out = messages.JointStateWriter(MSGS, actuators)
        self._pot: np.ndarray | None = None
        self.samples = 0
        self.refused = ""  # why a message was refused (the first)
        self.paused = False  # the operator has not let the arm go yet
        self._pub: Publisher | None = None
        self.create_subscription(JointState, POT_TOPIC, self._on_pot, QOS_STATE_SUB)
        self.create_subscription(JointState, TENDON_TOPIC, self._on_tendons, QOS_STATE_SUB)

    def others_commanding(self) -> list[str]:
        """Nodes other than this one that publish hw/tendon_commands."""
        mine = self.get_fully_qualified_name()
        others = []
        for info in self.get_publishers_info_by_topic(TENDON_COMMANDS):
            name = f"{info.node_namespace.rstrip('/')}/{info.node_name}"
            if name != mine:
                others.append(name)
        return others

    def start_commanding(self) -> None:
        self._pub = self.create_publisher(JointState, TENDON_COMMANDS, QOS_STATE_PUB)

    def _on_pot(self, msg: JointState) -> None:
        arrays = messages.read_joint_state(msg, self._pot_order, finite=True)
        if isinstance(arrays, str):
            self.refused = self.refused or arrays
            return
        self._pot = arrays.position

    def _on_tendons(self, msg: JointState) -> None:
        arrays = messages.read_joint_state(msg, self._ten_order, required=("position", "effort"),
                                     finite=True)
        if isinstance(arrays, str):
            self.refused = self.refused or arrays
            return
        if self._pot is None or self._pub is None:
            return
        c = self.calibrator
        was_held = c.held
        if not self.paused:
            c.offer(arrays.stamp.seconds, self._pot, arrays.position, arrays.effort)
            self.samples += 1
            self.paused = was_held and not c.held and not c.finished
        # stamped as the sample it answers: a simulated arm applies it at once, wherever its
        # physics time stands against this process's clock
        units = c.cal.n_to_driver(c.command_n())
        self._pub.publish(self._out.write(arrays.stamp, effort=units))


def calibrate_over_graph(robot: Robot, calibrator: Calibrator, timeout_s: float,
                         wait_for_user: bool = True) -> Calibrator:
    """Run ``calibrator`` to its end on the arm behind the raw topics (see the module
    docstring); raises :class:`InputError` when the graph is not fit for it."""
    rclpy.init()
    node = CalibrationClient(robot, calibrator)
    try:
        t0 = time.monotonic()
        while node._pot is None and time.monotonic() - t0 < timeout_s:
            rclpy.spin_once(node, timeout_sec=0.05)
        if node._pot is None:
            raise InputError(f"{POT_TOPIC} and {TENDON_TOPIC}",
                             f"raw samples within {timeout_s:g} s (is the arm or the mock arm "
                             f"running on this ROS_DOMAIN_ID?)", node.refused or None)
        others = node.others_commanding()
        if others:
            raise InputError(TENDON_COMMANDS, "no other publisher: stop the tendon driver and "
                                              "the controller before calibrating", others)
        node.start_commanding()
        released = threading.Event()
        if not wait_for_user:
            released.set()
        print(f"hold the arm at the calibration pose "
              f"{np.round(calibrator.cal.calibration_pose_rad, 3).tolist()} rad", flush=True)
        last_watch = time.monotonic()
        asked = False
        limit = time.monotonic() + 2.0 * calibrator.duration_s() + timeout_s
        while not calibrator.finished:
            rclpy.spin_once(node, timeout_sec=0.05)
            if node.paused and not asked and wait_for_user:
                asked = True
                threading.Thread(target=_ask, args=(released,), daemon=True).start()
            if node.paused and released.is_set():
                node.paused = False
            now = time.monotonic()
            if now - last_watch > _WATCH_S:
                last_watch = now
                others = node.others_commanding()
                if others:
                    raise InputError(TENDON_COMMANDS, "no other publisher during the "
                                                      "calibration", others)
            if now > limit and not node.paused:
                raise InputError(TENDON_TOPIC, f"the procedure to end within "
                                               f"{limit - t0:.0f} s", f"{node.samples} samples")
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return calibrator


def _ask(released: threading.Event) -> None:
    print("recorded at the pose: let the arm go (remove the jig), then press Enter for the "
          "pulls", flush=True)
    sys.stdin.readline()
    released.set()
