"""dynamics_node: joint_states -> the dynamics snapshot on ``dynamics`` (the paper's 20 Hz thread).

A shell over :class:`~musculo_control.loop.dynamics_stage.DynamicsStage`, the object the
ROS-free runner uses in its place, ticking at controller.yaml ``loop.dynamics_rate_hz``: at
each tick the newest joint state (polled) gives M, g, C qd, the task Jacobian, Lambda, Jbar, N,
the muscle lengths and the muscle Jacobian, published as a ``musculo_control_msgs/
DynamicsSnapshot`` (:mod:`musculo_control.estimation.snapshot_codec`) that carries that joint
state's stamp. No
snapshot from a stale joint state (safety.yaml ``inputs.joint_state.hold_s``) and none twice from
the same one.
"""

from __future__ import annotations

import time

from musculo_control_msgs.msg import DynamicsSnapshot

from musculo_control.estimation.snapshot_codec import SnapshotCodec
from musculo_control.hardware.potentiometer import PotentiometerReading
from musculo_control.loop import build
from musculo_control.loop.dynamics_stage import IN_TOPIC, OUT_TOPIC
from musculo_control.loop.lockstep import lockstep_leads
from musculo_control.loop.parts import load_parts
from musculo_control.loop.timing import TickTimer
from musculo_control.loop.topics import JOINT_STATES
from musculo_control.nodes.node_config import DYNAMICS_NODE, DynamicsNodeParams, config_dir_of
from musculo_control.nodes.process import run
from musculo_control.nodes.ros_common import MSGS, QOS_STATE_PUB, StageNode
from musculo_control.stamps import Stamp


class DynamicsNode(StageNode[DynamicsNodeParams]):
    def __init__(self) -> None:
        super().__init__(DYNAMICS_NODE, DynamicsNodeParams)
        p = self.params
        parts = load_parts(config_dir_of(p.config_dir))
        self.stage = build.dynamics_stage(parts, p.warn_throttle_s)
        robot, task = parts.robot, parts.controller.task
        self.codec = SnapshotCodec(robot.arm.n_joints, robot.n_muscles, len(task.rows))
        self._out = DynamicsSnapshot()  # refilled at every snapshot
        self._frame_id = robot.arm.base_frame
        self._stamps: dict[float, Stamp] = {}  # the newest joint state's exact stamp
        self._pub = self.create_publisher(DynamicsSnapshot, OUT_TOPIC, QOS_STATE_PUB)
        self._joints_in = self.joint_states_in(IN_TOPIC, robot.arm.joint_names, "joint name",
                                               required=("position", "velocity"), finite=True,
                                               lead_s=lockstep_leads(parts)[JOINT_STATES])
        rate = parts.controller.loop.dynamics_rate_hz
        self.timer = TickTimer(1.0 / rate)
        self.watch(self.stage.health, "dynamics", self._values)
        self.every(1.0 / rate, self._tick)
        self.get_logger().info(f"snapshots at {rate:g} Hz on {OUT_TOPIC}")

    def _tick(self) -> None:
        self.timer.start(time.perf_counter())
        stage = self.stage
        self.await_lockstep(self.clock_s())
        arrays = self._joints_in.take_newest()
        if arrays is not None:
            if isinstance(arrays, str):
                stage.health.refuse(IN_TOPIC, arrays, self.clock_s())
            else:
                stamp_s = arrays.stamp.seconds
                self._stamps = {stamp_s: arrays.stamp}
                stage.receive_joints(PotentiometerReading(stamp_s, arrays.position,
                                                          arrays.velocity, ()))
        snap = stage.tick(self.clock_s())
        if snap is not None:
            stamp = self._stamps.get(snap.stamp_s) or Stamp.from_seconds(snap.stamp_s)
            self._pub.publish(self.codec.to_msg(MSGS, snap, self._frame_id, stamp, self._out))
        self.timer.stop(time.perf_counter())

    def _values(self) -> dict[str, str]:
        return {**self.stage.values(),
                "compute time [ms]": f"{self.timer.last_compute_s * 1e3:.3f}"}


def main() -> None:
    raise SystemExit(run(DYNAMICS_NODE, DynamicsNodeParams, DynamicsNode))


if __name__ == "__main__":
    main()
