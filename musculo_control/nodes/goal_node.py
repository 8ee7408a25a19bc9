"""goal_node: hand goals from RViz or from a trajectory file.

- ``mode: trajectory``: plays ``trajectory_file`` (:mod:`musculo_control.loop.trajectory_file`)
  ``start_delay_s`` after the controller holds the arm (its first goal on ``controller/goal``),
  from the hand pose at the newest joint state then, publishing at ``publish_rate_hz`` on
  ``hand_goal/trajectory`` (trajectory_msgs/MultiDOFJointTrajectory, one point: the pose with
  its velocity and acceleration, the feed-forward of paper eq. 14). Between two points the QP
  node moves the goal along that feed-forward, so tracking does not depend on this rate.
- ``mode: interactive`` (the paper's simple GUI): an interactive marker at the hand, which the
  user drags (and turns) in RViz (InteractiveMarkers display, namespace ``hand_goal``); every
  pose it reports while dragging goes out on ``hand_goal`` (PoseStamped). Needs the
  ``interactive_markers`` package of a ROS 2 distribution; without it the node refuses to
  start and says so.
- ``mode: none``: publishes nothing (goals come from elsewhere, e.g. a test).

A trajectory with a waypoint outside the workspace is not played (the error says which); every
goal is judged again by the QP node's goal gate.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import MultiDOFJointTrajectory
from visualization_msgs.msg import (
    InteractiveMarker,
    InteractiveMarkerControl,
    InteractiveMarkerFeedback,
    Marker,
)

from musculo_control import messages
from musculo_control.control.controller_config import load_controller_config
from musculo_control.errors import ConfigError
from musculo_control.loop.health import ERROR, OK, Health
from musculo_control.loop.trajectory_file import GoalTrajectory, load_trajectory
from musculo_control.model.robot import load_robot
from musculo_control.nodes.node_config import (
    GOAL_NODE,
    GoalNodeParams,
    config_dir_of,
)
from musculo_control.nodes.process import run
from musculo_control.nodes.ros_common import MSGS, QOS_GOAL, QOS_STATE_SUB, StageNode, now_stamp

JOINTS_TOPIC = "joint_states"
CONTROLLER_GOAL_TOPIC = "controller/goal"  # the goal the QP node holds: it controls the arm
GOAL_TOPIC = "hand_goal"
GOAL_TRAJECTORY_TOPIC = "hand_goal/trajectory"
MARKER_NAMESPACE = "hand_goal"
MARKER_NAME = "hand_goal"


def _interactive_markers() -> Any:
    """The interactive_markers module, or a ConfigError saying how to do without it."""
    try:
        import interactive_markers
    except ImportError as exc:
        raise ConfigError(f"parameters of node '{GOAL_NODE}'", f"{GOAL_NODE}.ros__parameters.mode",
                          "a mode whose packages are installed: 'interactive' needs the "
                          "interactive_markers package of a ROS 2 distribution (not on PyPI); "
                          "use mode 'trajectory' or 'none' without it", "interactive") from exc
    return interactive_markers


class GoalNode(StageNode[GoalNodeParams]):
    def __init__(self) -> None:
        super().__init__(GOAL_NODE, GoalNodeParams)
        p = self.params
        self._markers = _interactive_markers() if p.mode == "interactive" else None
        config_dir = config_dir_of(p.config_dir)
        robot = load_robot(config_dir)
        self.workspace = load_controller_config(config_dir).workspace
        self.frame_id = robot.arm.base_frame
        self.point_name = robot.config.arm.task_frame
        self.arm = robot.arm
        self._order = messages.NameOrder(JOINTS_TOPIC, robot.arm.joint_names, "joint name")
        self.health = Health("goal", p.warn_throttle_s)
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
            if self._trajectory_config.frame_id != self.frame_id:
                raise ConfigError(str(path), "frame_id",
                                  f"the base frame '{self.frame_id}' (robot.yaml "
                                  f"arm.base_frame)", self._trajectory_config.frame_id)
        self._pose_pub = self.create_publisher(PoseStamped, GOAL_TOPIC, QOS_GOAL)
        self._trajectory_pub = self.create_publisher(MultiDOFJointTrajectory,
                                                     GOAL_TRAJECTORY_TOPIC, QOS_GOAL)
        self._joint_sub = self.create_subscription(JointState, JOINTS_TOPIC, self._on_joints,
                                                   QOS_STATE_SUB)
        self._server: Any = None  # interactive_markers.InteractiveMarkerServer
        self._trajectory: GoalTrajectory | None = None
        self._start_s: float | None = None
        # a trajectory waits for the controller: counted from the first joint state, its delay
        # could run out while the arm is not yet held (a slow start of the QP node on a loaded
        # machine) and the goal would move away from a hand that cannot follow
        self._hand_pose: tuple[np.ndarray, np.ndarray] | None = None
        self._controller_sub = (
            self.create_subscription(PoseStamped, CONTROLLER_GOAL_TOPIC,
                                     self._on_controller_goal, QOS_GOAL)
            if p.mode == "trajectory" else None)
        self._controller_holds = False
        self._held_s = -math.inf  # the stamp of the controller's first goal [s]
        self._started = False
        self._finished = False
        self._sent = 0
        self.watch(self.health, "goal", lambda: {"goals sent": str(self._sent),
                                                 **self.health.values()})
        self.health.set(OK, f"mode {p.mode}: waiting for the first {JOINTS_TOPIC}",
                        self.clock_s())
        if p.mode == "trajectory":
            self.every(1.0 / p.publish_rate_hz, self._play)
        self.get_logger().info(f"goal source: {p.mode}")

    # -- start: the hand pose at the first joint state (trajectory: once the controller holds) ---
    def _on_joints(self, msg: JointState) -> None:
        arrays = messages.read_joint_state(msg, self._order, finite=True)
        if isinstance(arrays, str):
            self.health.refuse(JOINTS_TOPIC, arrays, self.clock_s())
            return
        position_m, rotation = self.arm.hand_pose(arrays.position)
        self._hand_pose = (position_m, messages.quaternion_from_rotation(rotation))
        self._start()

    def _on_controller_goal(self, msg: PoseStamped) -> None:
        self._controller_holds = True
        # when the controller took the arm, by its stamp: this node's own clock may not have
        # caught up yet (on simulated time a loaded node reads /clock late)
        self._held_s = messages.stamp_of(msg).seconds
        self._start()

    def _start(self) -> None:
        if self._hand_pose is None or self._started:
            return
        p = self.params
        now = self.clock_s()
        if p.mode == "trajectory" and not self._controller_holds:
            self.health.set(OK, f"waiting for the controller to hold the arm (its first goal "
                                f"on {CONTROLLER_GOAL_TOPIC})", now)
            return
        position_m, quat = self._hand_pose
        self._started = True
        self.destroy_subscription(self._joint_sub)  # only the start pose is needed
        if self._controller_sub is not None:
            self.destroy_subscription(self._controller_sub)
            self._controller_sub = None
        if p.mode == "interactive":
            self._start_marker(position_m, quat)
        elif p.mode == "trajectory" and self._trajectory_config is not None:
            traj = GoalTrajectory(self._trajectory_config, position_m, quat)
            why = traj.outside(self.workspace)
            if why is not None:
                self.get_logger().error(f"trajectory not played: {why}")
                self.health.set(ERROR, f"trajectory not played: {why}", now)
                return
            self._trajectory = traj
            self._start_s = max(now, self._held_s) + p.start_delay_s
            self.health.set(OK, f"trajectory of {traj.duration_s:g} s starts in "
                                f"{p.start_delay_s:g} s", now)
        else:
            self.health.set(OK, "mode none: no goals", now)

    # -- trajectory -------------------------------------------------------------------------------
    def _play(self) -> None:
        traj = self._trajectory
        if traj is None or self._start_s is None or self._finished:
            return
        stamp = now_stamp(self)
        t = stamp.seconds - self._start_s
        if t < 0.0:
            return
        goal = traj.goal_at(t)
        quat = (messages.quaternion_from_rotation(goal.rotation) if goal.rotation is not None
                else np.array([0.0, 0.0, 0.0, 1.0]))
        self._trajectory_pub.publish(messages.goal_trajectory_msg(
            MSGS, stamp, self.frame_id, self.point_name, goal.position_m, quat,
            goal.velocity_m_s, goal.acceleration_m_s2))
        self._sent += 1
        if traj.finished(t):
            self._finished = True
            self.health.set(OK, "trajectory done; holding its last waypoint", stamp.seconds)
            self.get_logger().info("trajectory done")

    # -- interactive marker -------------------------------------------------------------------
    def _start_marker(self, position_m: np.ndarray, quat_xyzw: np.ndarray) -> None:
        markers = self._markers
        assert markers is not None  # the interactive mode loaded the module in __init__
        self._server = markers.InteractiveMarkerServer(self, MARKER_NAMESPACE)
        marker = InteractiveMarker()
        marker.header.frame_id = self.frame_id
        marker.name = MARKER_NAME
        marker.description = "hand goal: drag me"
        marker.scale = float(self.params.marker_scale_m)
        marker.pose = messages.pose_msg(MSGS, position_m, quat_xyzw)
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
        self.health.set(OK, "interactive marker ready (RViz: InteractiveMarkers, namespace "
                            f"{MARKER_NAMESPACE})", self.clock_s())

    def _on_feedback(self, feedback: InteractiveMarkerFeedback) -> None:
        if feedback.event_type not in (InteractiveMarkerFeedback.POSE_UPDATE,
                                       InteractiveMarkerFeedback.MOUSE_UP):
            return
        pose = feedback.pose
        self._pose_pub.publish(messages.pose_stamped_msg(
            MSGS, now_stamp(self), self.frame_id, messages.read_point(pose.position),
            np.array([pose.orientation.x, pose.orientation.y, pose.orientation.z,
                      pose.orientation.w])))
        self._sent += 1

    def shutdown(self) -> None:
        if self._server is not None:
            self._server.shutdown()


def main() -> None:
    raise SystemExit(run(GOAL_NODE, GoalNodeParams, GoalNode))


if __name__ == "__main__":
    main()
