"""potentiometer_node: hw/potentiometers (ADC counts) -> joint_states (rad, rad/s).

A shell over :class:`~musculo_control.loop.potentiometer_stage.PotentiometerStage`, the object
the ROS-free runner uses in its place. It reads its input at ``poll_rate_hz`` (twice the sensor
rate) and converts every queued sample, so no sample is lost and each waits at most one poll
period. A sample with a fault is not published (consumers see their joint state go stale and
fall back to minimum tension); the stage says which joint failed on /diagnostics.
"""

from __future__ import annotations

from sensor_msgs.msg import JointState

from musculo_control.loop.driver_parts import load_driver_parts, potentiometer_stage
from musculo_control.loop.potentiometer_stage import IN_TOPIC, OUT_TOPIC
from musculo_control.messages import JointArrays, NameOrder
from musculo_control.nodes.executors import EVENTS
from musculo_control.nodes.node_config import (
    POTENTIOMETER_NODE,
    PotentiometerNodeParams,
    config_dir_of,
)
from musculo_control.nodes.process import run
from musculo_control.nodes.ros_common import MSGS, QOS_STATE_PUB, StageNode
from musculo_control.serialized import SerializedJointStateReader, SerializedJointStateWriter


class PotentiometerNode(StageNode[PotentiometerNodeParams]):
    def __init__(self) -> None:
        # it works on what arrives, stamped by the arm, not on the clock: it polls on the wall
        # clock even on simulated time (a /clock-driven poll would wait for the next clock,
        # which a lockstepped simulation publishes only after this node's output)
        super().__init__(POTENTIOMETER_NODE, PotentiometerNodeParams, wall_clock=True)
        p = self.params
        parts = load_driver_parts(config_dir_of(p.config_dir))
        self.stage = potentiometer_stage(parts, p.warn_throttle_s)
        names = parts.joint_names
        self._out = SerializedJointStateWriter(MSGS, names)
        self._pub = self.create_publisher(JointState, OUT_TOPIC, QOS_STATE_PUB)
        self.watch(self.stage.health, "potentiometers", self.stage.values)
        if self.executor_kind == EVENTS:
            # each sample as it arrives (the tick loop waits in the EventsExecutor): no polling
            self._reader = SerializedJointStateReader(MSGS, NameOrder(IN_TOPIC, names,
                                                                      "joint name"))
            self.create_subscription(JointState, IN_TOPIC, self._on_counts,
                                     self.inputs.qos(p.input_queue), raw=True)
            self.every(1.0 / p.age_check_rate_hz, self._check)
        else:
            self._counts_in = self.joint_states_in(IN_TOPIC, names, "joint name",
                                                   depth=p.input_queue)
            self.every(1.0 / p.poll_rate_hz, self._poll)
        self.get_logger().info(f"reading {IN_TOPIC} for joints {list(names)}")

    def _receive(self, arrays: JointArrays | str) -> None:
        stage = self.stage
        if isinstance(arrays, str):
            stage.health.refuse(IN_TOPIC, arrays, self.clock_s())
            return
        reading = stage.receive(arrays.stamp.seconds, arrays.position)
        if reading is not None:
            self._pub.publish(self._out.write(arrays.stamp, reading.q_rad, reading.qd_rad_s))

    def _poll(self) -> None:
        for arrays in self._counts_in.take_all():
            self._receive(arrays)
        self.stage.check(self.clock_s())

    def _on_counts(self, data: bytes) -> None:
        self._receive(self._reader.read(data))
        if self.diag is not None:
            self.diag.log_warnings()

    def _check(self) -> None:
        self.stage.check(self.clock_s())


def main() -> None:
    raise SystemExit(run(POTENTIOMETER_NODE, PotentiometerNodeParams, PotentiometerNode))


if __name__ == "__main__":
    main()
