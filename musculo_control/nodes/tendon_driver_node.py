"""tendon_driver_node: the last line of defence between the controller and the actuators.

A shell over :class:`~musculo_control.loop.tendon_stage.TendonStage`, the object the ROS-free
runner uses in its place, ticking at hardware.yaml ``rates.driver_rate_hz``. At each tick it
takes every queued ``hw/tendon_states`` sample (encoder and load-cell counts per actuator id)
and publishes it as ``muscle_states`` (length [m], lengthening speed [m/s], tension [N] per
muscle), takes the newest ``muscle_commands`` (tension [N] per muscle), and sends the driver's
output (clamped, rate-limited, minimum tension on a bad command, when commands stop, or when
the arm's tendon states stop) on ``hw/tendon_commands`` in driver units. On shutdown it sends
minimum tension for a few cycles before the process ends.

It obeys only its ``commander`` (the controller): at each tick it reads the graph's publishers
of ``muscle_commands`` (:mod:`musculo_control.nodes.writers`); another node publishing there
is named on /diagnostics and none of its samples is used: where rclpy gives each sample's
publisher id the controller's samples still pass, otherwise (or with ``sample_ids`` false)
none does and every tendon is at minimum tension. And the operator: ``true`` on
``operator_stop`` (std_msgs/Bool) puts every tendon at minimum tension until ``false``
releases it.
"""

from __future__ import annotations

import time

from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from musculo_control.loop.driver_parts import load_driver_parts, tendon_stage
from musculo_control.loop.tendon_stage import (
    COMMAND_IN_TOPIC,
    COMMAND_OUT_TOPIC,
    STATE_IN_TOPIC,
    STATE_OUT_TOPIC,
)
from musculo_control.loop.topics import MUSCLE_COMMANDS, TENDON_STATES
from musculo_control.nodes.node_config import (
    TENDON_DRIVER_NODE,
    TendonDriverNodeParams,
    config_dir_of,
)
from musculo_control.nodes.process import run
from musculo_control.nodes.ros_common import MSGS, QOS_STATE_PUB, QOS_STOP, StageNode, now_stamp
from musculo_control.nodes.writers import GraphWriters, fully_qualified
from musculo_control.safety.authority import WriterWatch
from musculo_control.safety.operator_stop import STOP_TOPIC
from musculo_control.serialized import SerializedJointStateWriter

#: Minimum-tension messages sent on the way out (at the output period).
_STOP_CYCLES = 5


class TendonDriverNode(StageNode[TendonDriverNodeParams]):
    def __init__(self) -> None:
        super().__init__(TENDON_DRIVER_NODE, TendonDriverNodeParams)
        p = self.params
        parts = load_driver_parts(config_dir_of(p.config_dir))
        self.stage = tendon_stage(parts, p.warn_throttle_s)
        muscles = parts.muscle_names
        actuators = tuple(str(a) for a in parts.actuator_ids)
        self._hw_msg = SerializedJointStateWriter(MSGS, actuators)
        self._state_msg = SerializedJointStateWriter(MSGS, muscles)
        self._hw_pub = self.create_publisher(JointState, COMMAND_OUT_TOPIC, QOS_STATE_PUB)
        self._state_pub = self.create_publisher(JointState, STATE_OUT_TOPIC, QOS_STATE_PUB)
        self._commands_in = self.joint_states_in(
            COMMAND_IN_TOPIC, muscles, "muscle name", required=("effort",),
            lead_s=parts.lockstep_leads[MUSCLE_COMMANDS])
        self._states_in = self.joint_states_in(STATE_IN_TOPIC, actuators, "actuator id",
                                               required=("position", "effort"),
                                               depth=p.input_queue,
                                               lead_s=parts.lockstep_leads[TENDON_STATES])
        self._stop_in = self.inputs.subscribe(Bool, STOP_TOPIC, qos=QOS_STOP)
        self.stage.writers = WriterWatch(COMMAND_IN_TOPIC, {fully_qualified(self, p.commander)},
                                         parts.safety.authority)
        self._graph = GraphWriters(self, COMMAND_IN_TOPIC)
        self.watch(self.stage.health, "tendon actuators", self.stage.values)
        self._period_s = 1.0 / parts.drivers.rates.driver_rate_hz
        self.every(self._period_s, self._tick)
        self.get_logger().info(f"driving {len(actuators)} tendons at "
                               f"{parts.drivers.rates.driver_rate_hz:g} Hz")

    def _tick(self) -> None:
        stage = self.stage
        now_s = self.clock_s()  # the inputs' time; the output is stamped after them
        self.await_lockstep(now_s)
        for arrays in self._states_in.take_all():
            if isinstance(arrays, str):
                stage.health.refuse(STATE_IN_TOPIC, arrays, now_s)
                continue
            state = stage.receive_state(arrays.stamp.seconds, arrays.position, arrays.effort)
            if state is not None:
                self._state_pub.publish(self._state_msg.write(
                    arrays.stamp, state.length_m, state.velocity_m_s, state.tension_n))
        for stop in self._stop_in.take_all():
            stage.operator_stop(bool(stop.data), now_s, f"operator stop on {STOP_TOPIC}")
        # the samples first, then the graph: a sample of a writer new since the last tick is
        # judged with that writer listed (discovery lists a writer before its data can come)
        taken = self._commands_in.take_all_from()
        writers = self._graph.to_judge(stage.writers is None or stage.writers.verdict.admit)
        if writers is not None:
            stage.judge_writers(writers, self._graph.read_s)
        for arrays, writer in taken:  # oldest first (one, unless a foreign writer crowds in)
            if isinstance(arrays, str):
                stage.health.refuse(COMMAND_IN_TOPIC, arrays, now_s)
            else:
                stage.receive_command(arrays.stamp.seconds, arrays.effort,
                                      writer if self.params.sample_ids else None)
        stamp = now_stamp(self)
        out = stage.output(stamp.seconds)
        self._hw_pub.publish(self._hw_msg.write(stamp, effort=out.units))

    def shutdown(self) -> None:
        """Minimum tension on every tendon for a few cycles, whatever came before."""
        self.stage.driver.reset()
        for _ in range(_STOP_CYCLES):
            stamp = now_stamp(self)
            out = self.stage.driver.output(stamp.seconds)  # reset: no command -> minimum
            self._hw_pub.publish(self._hw_msg.write(stamp, effort=out.units))
            time.sleep(self._period_s)


def main() -> None:
    raise SystemExit(run(TENDON_DRIVER_NODE, TendonDriverNodeParams, TendonDriverNode))


if __name__ == "__main__":
    main()
