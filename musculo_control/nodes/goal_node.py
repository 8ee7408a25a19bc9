"""goal_node: hand goals on ``hand_goal`` (PoseStamped) from RViz or from a trajectory file.

- ``mode: interactive`` (the paper's simple GUI): an interactive marker at the hand, which
  the user drags (and turns) in RViz (InteractiveMarkers display, namespace ``hand_goal``);
  every pose it reports while dragging becomes a goal.
- ``mode: trajectory``: plays ``trajectory_file``
  (:mod:`musculo_control.control.trajectory_file`) from the hand pose at the first joint state,
  publishing the goal at ``publish_rate_hz`` until the last waypoint.
- ``mode: none``: publishes nothing (goals come from elsewhere, e.g. a test).

Goals outside the workspace are not sent (a warning says why); the QP node checks them again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from visualization_msgs.msg import (
    InteractiveMarker,
    InteractiveMarkerControl,
    InteractiveMarkerFeedback,
    Marker,
)

from musculo_control.control.controller import load_controller_config
from musculo_control.control.fresh_state import FreshStateEstimator
from musculo_control.control.goal import HandGoal, check_goal
from musculo_control.control.trajectory_file import GoalTrajectory, load_trajectory
from musculo_control.errors import ConfigError, InputError
from musculo_control.model.robot import load_robot
from musculo_control.nodes import conversions as cv
from musculo_control.nodes.node_config import (
    GOAL_NODE,
    GoalNodeParams,
    config_dir_of,
    with_robot_base_frame,
)
from musculo_control.nodes.ros_common import (
    MSGS,
    QOS_GOAL,
    QOS_STATE_SUB,
    Diagnostics,
    InputGuard,
    declare_parameters,
    now_stamp,
    run,
)

JOINTS_TOPIC = "joint_states"
GOAL_TOPIC = "hand_goal"
MARKER_NAMESPACE = "hand_goal"
MARKER_NAME = "hand_goal"


class GoalNode(Node):
    def __init__(self) -> None:
        super().__init__(GOAL_NODE)
        p = self.params = declare_parameters(self, GoalNodeParams)
        config_dir = config_dir_of(p.config_dir)
        robot = load_robot(config_dir)
        p = self.params = with_robot_base_frame(p, robot)
        self.workspace = load_controller_config(config_dir).workspace
        self._fk = FreshStateEstimator(robot)
        self._order = cv.NameOrder(JOINTS_TOPIC, robot.arm.joint_names, "joint name")
        self._guard = InputGuard(self, p.warn_throttle_s)
        self._trajectory_config = None
        if p.mode == "trajectory":
            if not p.trajectory_file:
                raise ConfigError(f"parameters of node '{GOAL_NODE}'",
                                  f"{GOAL_NODE}.ros__parameters.trajectory_file",
                                  "a trajectory file in mode 'trajectory'", "")
            path = Path(p.trajectory_file)
            if not path.is_absolute():
                path = config_dir / path
            self._trajectory_config = load_trajectory(path)
            if self._trajectory_config.frame_id != p.base_frame:
                raise ConfigError(str(path), "frame_id", f"the base frame '{p.base_frame}'",
                                  self._trajectory_config.frame_id)
        self._pub = self.create_publisher(PoseStamped, GOAL_TOPIC, QOS_GOAL)
        self._joint_sub = self.create_subscription(JointState, JOINTS_TOPIC, self._on_joints,
                                                   QOS_STATE_SUB)
        self._server: Any = None  # interactive_markers.InteractiveMarkerServer
        self._trajectory: GoalTrajectory | None = None
        self._start_s: float | None = None
        self._finished = False
        self._sent = 0
        self.diag = Diagnostics(self, p.diagnostics_period_s, "goal",
                                lambda: {"goals sent": str(self._sent),
                                         **self._guard.rejections.summary()})
        self.diag.update(cv.OK, f"mode {p.mode}: waiting for the first {JOINTS_TOPIC}")
        if p.mode == "trajectory":
            self.create_timer(1.0 / p.publish_rate_hz, self._play)
        self.get_logger().info(f"goal source: {p.mode}")

    # -- start: the hand pose at the first joint state ------------------------------------------
    def _on_joints(self, msg: JointState) -> None:
        arrays = cv.read_joint_state(msg, self._order, finite=True)
        if isinstance(arrays, str):
            self._guard.refuse(JOINTS_TOPIC, arrays)
            return
        hand = self._fk.hand_state(arrays.position, np.zeros_like(arrays.position))
        quat = cv.quaternion_from_rotation(hand.rotation)
        self.destroy_subscription(self._joint_sub)  # only the start pose is needed
        p = self.params
        if p.mode == "interactive":
            self._start_marker(hand.position_m, quat)
        elif p.mode == "trajectory" and self._trajectory_config is not None:
            traj = GoalTrajectory(self._trajectory_config, hand.position_m, quat)
            why = traj.outside(self.workspace)
            if why is not None:
                self.get_logger().error(f"trajectory not played: {why}")
                self.diag.update(cv.ERROR, f"trajectory not played: {why}")
                return
            self._trajectory = traj
            self._start_s = now_stamp(self).seconds + p.start_delay_s
            self.diag.update(cv.OK, f"trajectory of {traj.duration_s:g} s starts in "
                                    f"{p.start_delay_s:g} s")
        else:
            self.diag.update(cv.OK, "mode none: no goals")

    # -- trajectory -------------------------------------------------------------------------------
    def _play(self) -> None:
        traj = self._trajectory
        if traj is None or self._start_s is None or self._finished:
            return
        t = now_stamp(self).seconds - self._start_s
        if t < 0.0:
            return
        goal = traj.goal_at(t)
        self._send(goal.position_m, cv.quaternion_from_rotation(goal.rotation)
                   if goal.rotation is not None else np.array([0.0, 0.0, 0.0, 1.0]))
        if traj.finished(t):
            self._finished = True
            self.diag.update(cv.OK, "trajectory done; holding its last waypoint")
            self.get_logger().info("trajectory done")

    # -- interactive marker -------------------------------------------------------------------
    def _start_marker(self, position_m: np.ndarray, quat_xyzw: np.ndarray) -> None:
        from interactive_markers import InteractiveMarkerServer

        self._server = InteractiveMarkerServer(self, MARKER_NAMESPACE)
        marker = InteractiveMarker()
        marker.header.frame_id = self.params.base_frame
        marker.name = MARKER_NAME
        marker.description = "hand goal: drag me"
        marker.scale = float(self.params.marker_scale_m)
        marker.pose = cv.pose_msg(MSGS, position_m, quat_xyzw)
        sphere = Marker(type=Marker.SPHERE)
        size = 0.4 * self.params.marker_scale_m
        sphere.scale.x = sphere.scale.y = sphere.scale.z = size
        sphere.color.r, sphere.color.g, sphere.color.b, sphere.color.a = 0.1, 0.8, 0.2, 0.8
        free = InteractiveMarkerControl(name="move_3d", always_visible=True,
                                        interaction_mode=InteractiveMarkerControl.MOVE_3D)
        free.markers.append(sphere)
        marker.controls.append(free)
        s = float(np.sqrt(0.5))
        for axis, (qx, qy, qz) in (("x", (s, 0.0, 0.0)), ("z", (0.0, s, 0.0)),
                                   ("y", (0.0, 0.0, s))):
            for kind, mode in (("move", InteractiveMarkerControl.MOVE_AXIS),
                               ("rotate", InteractiveMarkerControl.ROTATE_AXIS)):
                control = InteractiveMarkerControl(name=f"{kind}_{axis}", interaction_mode=mode)
                control.orientation.w, control.orientation.x = s, qx
                control.orientation.y, control.orientation.z = qy, qz
                marker.controls.append(control)
        self._server.insert(marker, feedback_callback=self._on_feedback)
        self._server.applyChanges()
        self.diag.update(cv.OK, "interactive marker ready (RViz: InteractiveMarkers, "
                                f"namespace {MARKER_NAMESPACE})")

    def _on_feedback(self, feedback: InteractiveMarkerFeedback) -> None:
        if feedback.event_type not in (InteractiveMarkerFeedback.POSE_UPDATE,
                                       InteractiveMarkerFeedback.MOUSE_UP):
            return
        pose = feedback.pose
        self._send(cv.read_point(pose.position),
                   np.array([pose.orientation.x, pose.orientation.y, pose.orientation.z,
                             pose.orientation.w]))

    def _send(self, position_m: np.ndarray, quat_xyzw: np.ndarray) -> None:
        try:
            why = check_goal(HandGoal.hold(position_m), self.workspace)
        except InputError as exc:
            why = str(exc)
        if why is not None:
            self._guard.refuse("goal source", why)
            return
        self._pub.publish(cv.pose_stamped_msg(MSGS, now_stamp(self), self.params.base_frame,
                                              position_m, quat_xyzw))
        self._sent += 1

    def shutdown(self) -> None:
        if self._server is not None:
            self._server.shutdown()


def main() -> None:
    raise SystemExit(run(GOAL_NODE, GoalNodeParams, GoalNode))


if __name__ == "__main__":
    main()
