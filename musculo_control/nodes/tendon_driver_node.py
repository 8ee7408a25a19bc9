"""tendon_driver_node: the last line of defence between the controller and the actuators.

A shell over :class:`musculo_control.hardware.tendon_driver.TendonDriver`, working at one
tick of ``output_rate_hz`` that takes the newest message of each input (polled, see
:mod:`musculo_control.nodes.ros_common`):

- ``muscle_commands`` (JointState, name = muscle, effort = target tension [N]) are checked
  (names, stamp order) and latched with their header stamp;
- at ``output_rate_hz`` the driver's output (clamped, rate-limited, minimum tension on a bad
  command or when commands stop for longer than the watchdog) goes to ``hw/tendon_commands``
  (name = actuator id, effort = driver units);
- ``hw/tendon_states`` (name = actuator id, position = winch encoder counts, effort =
  load-cell counts) become ``muscle_states`` (name = muscle, position = length [m], velocity =
  lengthening speed [m/s], effort = tension [N]).

On shutdown it sends minimum tension for a few cycles before the process ends.
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState

from musculo_control.hardware.drivers import load_drivers
from musculo_control.model.robot import load_robot
from musculo_control.nodes import conversions as cv
from musculo_control.nodes.node_config import (
    TENDON_DRIVER_NODE,
    TendonDriverNodeParams,
    config_dir_of,
)
from musculo_control.nodes.ros_common import (
    MSGS,
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

COMMAND_TOPIC = "muscle_commands"
STATE_IN_TOPIC = "hw/tendon_states"
HW_COMMAND_TOPIC = "hw/tendon_commands"
STATE_OUT_TOPIC = "muscle_states"
#: Minimum-tension messages sent on the way out (at the output period).
_STOP_CYCLES = 5


class TendonDriverNode(Node):
    def __init__(self) -> None:
        super().__init__(TENDON_DRIVER_NODE)
        self.params = declare_parameters(self, TendonDriverNodeParams)
        robot = load_robot(config_dir_of(self.params.config_dir))
        self.driver = load_drivers(robot).tendons
        self.muscles = robot.muscle_names
        self.actuators = tuple(str(a) for a in robot.actuator_ids)
        self._cmd_order = cv.NameOrder(COMMAND_TOPIC, self.muscles, "muscle name")
        self._state_order = cv.NameOrder(STATE_IN_TOPIC, self.actuators, "actuator id")
        self._cmd_stamps = StampOrder(COMMAND_TOPIC)
        self._hw_msg = cv.JointStateWriter(MSGS, self.actuators)
        self._state_msg = cv.JointStateWriter(MSGS, self.muscles)
        self._state_stamps = StampOrder(STATE_IN_TOPIC)
        self._guard = InputGuard(self, self.params.warn_throttle_s)
        self._hw_pub = self.create_publisher(JointState, HW_COMMAND_TOPIC, QOS_STATE_PUB)
        self._state_pub = self.create_publisher(JointState, STATE_OUT_TOPIC, QOS_STATE_PUB)
        self.inputs = PolledInputs(self)
        self._commands_in = self.inputs.subscribe(JointState, COMMAND_TOPIC)
        self._states_in = self.inputs.subscribe(JointState, STATE_IN_TOPIC,
                                                self.params.input_queue)
        self.diag = Diagnostics(self, self.params.diagnostics_period_s, "tendon actuators",
                                self._values)
        self._period_s = 1.0 / self.params.output_rate_hz
        self.ticker = Ticker(self, self.params.housekeeping_period_s)
        self.ticker.every(self._period_s, self._output)
        self._limited_ticks = 0
        self._last_tick: Stamp | None = None
        self._ticks = 0
        self.get_logger().info(f"driving {len(self.actuators)} tendons at "
                               f"{self.params.output_rate_hz:g} Hz")

    def _on_command(self, msg: JointState) -> None:
        arrays = cv.read_joint_state(msg, self._cmd_order, required=("effort",))
        if isinstance(arrays, str):
            self._guard.refuse(COMMAND_TOPIC, arrays)
            return
        late = self._cmd_stamps.check(arrays.stamp)
        if late is not None:
            self._guard.refuse(COMMAND_TOPIC, late)
            return
        # non-finite tensions are the driver's to refuse: it then holds minimum tension
        faults = self.driver.command(arrays.effort, arrays.stamp.seconds)
        if faults:
            self._guard.refuse(COMMAND_TOPIC, "; ".join(faults))

    def _on_state(self, msg: JointState) -> None:
        arrays = cv.read_joint_state(msg, self._state_order, required=("position", "effort"))
        if isinstance(arrays, str):
            self._guard.refuse(STATE_IN_TOPIC, arrays)
            return
        late = self._state_stamps.check(arrays.stamp)
        if late is not None:
            self._guard.refuse(STATE_IN_TOPIC, late)
            return
        state = self.driver.read(arrays.position, arrays.effort, arrays.stamp.seconds)
        if state.faults:
            self._guard.refuse(STATE_IN_TOPIC, "; ".join(state.faults))
        self._state_pub.publish(self._state_msg.write(arrays.stamp, state.length_m,
                                                      state.velocity_m_s, state.tension_n))

    def _output(self) -> None:
        for msg in self._states_in.take_all():
            self._on_state(msg)
        msg = self._commands_in.take_newest()
        if msg is not None:
            self._on_command(msg)
        stamp = now_stamp(self)
        if self._last_tick is not None and stamp.nanoseconds <= self._last_tick.nanoseconds:
            return  # simulated time: a late timer fired again before /clock moved
        self._last_tick = stamp
        out = self.driver.output(stamp.seconds)
        self._hw_pub.publish(self._hw_msg.write(stamp, effort=out.units))
        self._ticks += 1
        self._limited_ticks += int(np.any(out.limited))
        if out.faults:
            self.diag.update(cv.ERROR, "minimum tension: " + "; ".join(out.faults))
        else:
            self.diag.update(cv.OK, "passing commands")

    def _values(self) -> dict[str, str]:
        return {"output ticks": str(self._ticks),
                "ticks with a clamped or rate-limited tendon": str(self._limited_ticks),
                **self._guard.rejections.summary()}

    def shutdown(self) -> None:
        """Minimum tension on every tendon for a few cycles, whatever came before."""
        self.driver.reset()
        for _ in range(_STOP_CYCLES):
            stamp = now_stamp(self)
            out = self.driver.output(stamp.seconds)  # reset -> no command -> minimum tension
            self._hw_pub.publish(self._hw_msg.write(stamp, effort=out.units))
            time.sleep(self._period_s)


def main() -> None:
    raise SystemExit(run(TENDON_DRIVER_NODE, TendonDriverNodeParams, TendonDriverNode))


if __name__ == "__main__":
    main()
