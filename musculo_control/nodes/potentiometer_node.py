"""potentiometer_node: hw/potentiometers (ADC counts) -> joint_states (rad, rad/s).

A shell over :class:`musculo_control.hardware.potentiometer.PotentiometerReader`. It reads
its input at ``poll_rate_hz`` (twice the sensor rate) and converts every queued sample, so no
sample is lost and each waits at most one poll period (see :mod:`musculo_control.nodes.ros_common`
for why it polls). A sample
with a fault (a joint at the ADC rail, beyond its limits, a non-finite count) is not
published: consumers then see their joint state go stale and fall back to minimum tension,
while this node says which joint failed on /diagnostics. Messages with the wrong names or an
out-of-order stamp are refused before they reach the reader.
"""

from __future__ import annotations

from rclpy.node import Node
from sensor_msgs.msg import JointState

from musculo_control.hardware.drivers import load_drivers
from musculo_control.model.robot import load_robot
from musculo_control.nodes import conversions as cv
from musculo_control.nodes.node_config import (
    POTENTIOMETER_NODE,
    PotentiometerNodeParams,
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
from musculo_control.stamps import StampOrder

IN_TOPIC = "hw/potentiometers"
OUT_TOPIC = "joint_states"


class PotentiometerNode(Node):
    def __init__(self) -> None:
        super().__init__(POTENTIOMETER_NODE)
        self.params = declare_parameters(self, PotentiometerNodeParams)
        robot = load_robot(config_dir_of(self.params.config_dir))
        self.reader = load_drivers(robot).potentiometers
        self.names = robot.arm.joint_names
        self._order = cv.NameOrder(IN_TOPIC, self.names, "joint name")
        self._stamps = StampOrder(IN_TOPIC)
        self._guard = InputGuard(self, self.params.warn_throttle_s)
        self._published = 0
        self._out = cv.JointStateWriter(MSGS, self.names)
        self._pub = self.create_publisher(JointState, OUT_TOPIC, QOS_STATE_PUB)
        self.inputs = PolledInputs(self)
        self._counts_in = self.inputs.subscribe(JointState, IN_TOPIC, self.params.input_queue)
        self.diag = Diagnostics(self, self.params.diagnostics_period_s, "potentiometers",
                                lambda: {"published": str(self._published),
                                         **self._guard.rejections.summary()})
        self.ticker = Ticker(self, self.params.housekeeping_period_s)
        self.ticker.every(1.0 / self.params.poll_rate_hz, self._poll)
        self.ticker.every(1.0 / self.params.check_rate_hz, self._check)
        self.get_logger().info(f"reading {IN_TOPIC} for joints {list(self.names)}")

    def _poll(self) -> None:
        for msg in self._counts_in.take_all():
            self._on_counts(msg)

    def _on_counts(self, msg: JointState) -> None:
        arrays = cv.read_joint_state(msg, self._order)
        if isinstance(arrays, str):
            self._guard.refuse(IN_TOPIC, arrays)
            return
        late = self._stamps.check(arrays.stamp)
        if late is not None:
            self._guard.refuse(IN_TOPIC, late)
            return
        reading = self.reader.update(arrays.position, arrays.stamp.seconds)
        if not reading.ok:
            self.diag.update(cv.ERROR, "; ".join(reading.faults))
            return
        self._pub.publish(self._out.write(arrays.stamp, reading.q_rad, reading.qd_rad_s))
        self._published += 1

    def _check(self) -> None:
        faults = self.reader.check(now_stamp(self).seconds)
        if faults:
            self.diag.update(cv.ERROR, "; ".join(faults))
        else:
            self.diag.update(cv.OK, "publishing joint_states")


def main() -> None:
    raise SystemExit(run(POTENTIOMETER_NODE, PotentiometerNodeParams, PotentiometerNode))


if __name__ == "__main__":
    main()
