"""dynamics_node: joint_states -> the dynamics snapshot on ``dynamics`` (the paper's 20 Hz thread).

A shell over :class:`musculo_control.estimation.snapshot.DynamicsEstimator`: at every tick it
takes the newest joint state (polled: see :mod:`musculo_control.nodes.ros_common`), computes
M, g, C qd, the task Jacobian, Lambda, Jbar, N, the muscle lengths and the muscle Jacobian at
it, and publishes them as a labelled ``Float64MultiArray``
(:mod:`musculo_control.estimation.snapshot_codec`) that carries the stamp of that joint state.
It skips a tick (and says so) when the newest joint state is older than
``joint_state_timeout_s``; the QP node then refuses the ageing snapshot by itself.
"""

from __future__ import annotations

import time

from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from musculo_control.control.controller import load_controller_config
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.estimation.snapshot_codec import SnapshotCodec
from musculo_control.loop.timing import TickTimer
from musculo_control.model.robot import load_robot
from musculo_control.nodes import conversions as cv
from musculo_control.nodes.node_config import (
    DYNAMICS_NODE,
    DynamicsNodeParams,
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

IN_TOPIC = "joint_states"
OUT_TOPIC = "dynamics"


class DynamicsNode(Node):
    def __init__(self) -> None:
        super().__init__(DYNAMICS_NODE)
        self.params = declare_parameters(self, DynamicsNodeParams)
        config_dir = config_dir_of(self.params.config_dir)
        robot = load_robot(config_dir)
        task = load_controller_config(config_dir).task
        self.estimator = DynamicsEstimator(robot, task)
        self.codec = SnapshotCodec(robot.arm.n_joints, robot.n_muscles, len(task.rows))
        self._out = cv.RecordWriter(MSGS, self.codec.dims())
        self._order = cv.NameOrder(IN_TOPIC, robot.arm.joint_names, "joint name")
        self._stamps = StampOrder(IN_TOPIC)
        self._guard = InputGuard(self, self.params.warn_throttle_s)
        self._latest: cv.JointArrays | None = None
        self._pub = self.create_publisher(Float64MultiArray, OUT_TOPIC, QOS_STATE_PUB)
        self.inputs = PolledInputs(self)
        self._joints_in = self.inputs.subscribe(JointState, IN_TOPIC)
        self.timer = TickTimer(1.0 / self.params.rate_hz)
        self._published = 0
        self._damped = 0
        self._last_compute_s = float("nan")
        self.diag = Diagnostics(self, self.params.diagnostics_period_s, "dynamics",
                                self._values)
        self.ticker = Ticker(self, self.params.housekeeping_period_s)
        self.ticker.every(1.0 / self.params.rate_hz, self._tick)
        self.get_logger().info(f"snapshots at {self.params.rate_hz:g} Hz on {OUT_TOPIC}")

    def _take_joints(self) -> None:
        msg = self._joints_in.take_newest()
        if msg is None:
            return
        arrays = self._guard.joint_state(IN_TOPIC, msg, self._order, self._stamps)
        if arrays is not None:
            self._latest = arrays

    def _tick(self) -> None:
        self.timer.start(time.perf_counter())
        self._take_joints()
        joints = self._latest
        now_s = now_stamp(self).seconds
        if joints is None:
            self.diag.update(cv.WARN, f"no {IN_TOPIC} yet")
            return
        age = now_s - joints.stamp.seconds
        if not age <= self.params.joint_state_timeout_s:
            self.diag.update(cv.ERROR, f"{IN_TOPIC} {age * 1e3:.1f} ms old (limit "
                                       f"{self.params.joint_state_timeout_s * 1e3:.0f} ms): "
                                       f"no snapshot")
            return
        try:
            snap = self.estimator.compute(joints.position, joints.velocity,
                                          joints.stamp.seconds)
        except InputError as exc:
            self.diag.update(cv.ERROR, f"snapshot not computed: {exc}")
            return
        data = self.codec.encode(snap, joints.stamp)
        self._pub.publish(self._out.write(data))
        self._published += 1
        self._last_compute_s = self.timer.stop(time.perf_counter())
        if snap.damped:
            self._damped += 1
            self.diag.update(cv.WARN, f"near-singular task: damped inverse (smallest eigenvalue "
                                      f"{snap.min_task_eigenvalue:.2e})")
        else:
            self.diag.update(cv.OK, "publishing snapshots")

    def _values(self) -> dict[str, str]:
        return {"published": str(self._published), "damped": str(self._damped),
                "compute time [ms]": f"{self._last_compute_s * 1e3:.3f}",
                **self._guard.rejections.summary()}


def main() -> None:
    raise SystemExit(run(DYNAMICS_NODE, DynamicsNodeParams, DynamicsNode))


if __name__ == "__main__":
    main()
