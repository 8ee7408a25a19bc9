"""muscle_marker_node: the muscles for RViz, as lines through their via-points, coloured by load.

At ``rate_hz`` it draws every muscle at the newest joint state
(:class:`musculo_control.model.markers.MusclePathModel`: the controller's own via-point model)
on ``muscle_markers`` (MarkerArray, one LINE_STRIP per muscle). The colour runs from blue
(slack) through yellow to red (full scale) by ``colour_by``: the controller's activations
(uncontrolled muscles by commanded tension), the measured tensions or the commanded tensions.
"""

from __future__ import annotations

import numpy as np
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray

from musculo_control import messages
from musculo_control.loop.health import OK, Health
from musculo_control.model.markers import MusclePathModel, colour_scale, normalised_load
from musculo_control.model.robot import load_robot
from musculo_control.nodes.node_config import (
    MUSCLE_MARKER_NODE,
    MuscleMarkerNodeParams,
    config_dir_of,
)
from musculo_control.nodes.process import run
from musculo_control.nodes.ros_common import MSGS, QOS_STATE_PUB, StageNode, now_stamp

JOINTS_TOPIC = "joint_states"
OUT_TOPIC = "muscle_markers"


class MuscleMarkerNode(StageNode[MuscleMarkerNodeParams]):
    def __init__(self) -> None:
        super().__init__(MUSCLE_MARKER_NODE, MuscleMarkerNodeParams)
        p = self.params
        config_dir = config_dir_of(p.config_dir)
        robot = self.robot = load_robot(config_dir)
        self.frame_id = robot.arm.base_frame
        self.model = MusclePathModel(robot)
        self.controlled_idx = robot.controlled_idx
        self.health = Health("muscle markers", p.warn_throttle_s)
        self._joint_order = messages.NameOrder(JOINTS_TOPIC, robot.arm.joint_names, "joint name")
        self._muscle_orders = {
            t: messages.NameOrder(t, robot.muscle_names, "muscle name")
            for t in ("muscle_states", "muscle_commands")}
        self._activation_order = messages.NameOrder(
            "controller/activations", tuple(robot.muscle_names[i] for i in robot.controlled_idx),
            "muscle name")
        self._q: np.ndarray | None = None
        self._tension = {t: np.full(robot.n_muscles, np.nan) for t in self._muscle_orders}
        self._activation = np.full(len(robot.controlled_idx), np.nan)
        self._pub = self.create_publisher(MarkerArray, OUT_TOPIC, QOS_STATE_PUB)
        # everything is polled at the draw tick (see ros_common): 20 Hz of pictures need no
        # wake-up for each of 500 joint states per second
        self._joints_in = self.inputs.subscribe(JointState, JOINTS_TOPIC)
        self._tension_in = {t: self.inputs.subscribe(JointState, t)
                            for t in self._muscle_orders}
        self._activation_in = self.inputs.subscribe(JointState, "controller/activations")
        self.watch(self.health, "muscle markers", self.health.values)
        self.health.set(OK, f"drawing {OUT_TOPIC}", self.clock_s())
        self.every(1.0 / p.rate_hz, self._draw)

    def _on_joints(self, msg: JointState) -> None:
        arrays = messages.read_joint_state(msg, self._joint_order, finite=True)
        if isinstance(arrays, str):
            self.health.refuse(JOINTS_TOPIC, arrays, self.clock_s())
            return
        self._q = arrays.position

    def _on_tension(self, topic: str, msg: JointState) -> None:
        arrays = messages.read_joint_state(msg, self._muscle_orders[topic], required=("effort",))
        if isinstance(arrays, str):
            self.health.refuse(topic, arrays, self.clock_s())
            return
        self._tension[topic] = arrays.effort

    def _on_activation(self, msg: JointState) -> None:
        arrays = messages.read_joint_state(msg, self._activation_order)
        if isinstance(arrays, str):
            self.health.refuse("controller/activations", arrays, self.clock_s())
            return
        self._activation = arrays.position

    def _load(self) -> np.ndarray:
        p = self.params
        f_min = self.robot.hill.f_min_n
        if p.colour_by == "tension":
            return normalised_load(self._tension["muscle_states"], f_min, p.tension_full_scale_n)
        command = normalised_load(self._tension["muscle_commands"], f_min,
                                  p.tension_full_scale_n)
        if p.colour_by == "command":
            return command
        load = command.copy()  # uncontrolled muscles: by their (fixed) commanded tension
        load[self.controlled_idx] = self._activation / p.activation_full_scale
        return load

    def _take_inputs(self) -> None:
        msg = self._joints_in.take_newest()
        if msg is not None:
            self._on_joints(msg)
        for topic, sub in self._tension_in.items():
            msg = sub.take_newest()
            if msg is not None:
                self._on_tension(topic, msg)
        msg = self._activation_in.take_newest()
        if msg is not None:
            self._on_activation(msg)

    def _draw(self) -> None:
        self._take_inputs()
        if self._q is None:
            return
        paths = self.model.paths(self._q)
        self._pub.publish(messages.muscle_marker_array_msg(
            MSGS, now_stamp(self), self.frame_id, paths, colour_scale(self._load()),
            self.model.names, self.params.line_width_m))


def main() -> None:
    raise SystemExit(run(MUSCLE_MARKER_NODE, MuscleMarkerNodeParams, MuscleMarkerNode))


if __name__ == "__main__":
    main()
