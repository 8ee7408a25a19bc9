"""Checks that catch what a user gets wrong when describing a new arm, before anything runs.

Each names the file, the dotted key and the offending values, with joint and muscle names:

- :meth:`~musculo_control.model.task.TaskConfig.check_robot`: more task rows than joints; a
  task row that no joint (of those its decoupling-mask row allows) moves, anywhere in the joint
  range;
- :func:`check_reachable`: a hand path (a trajectory's start and end) the hand cannot follow
  from its start pose, with how close it gets;
- :func:`check_workspace`: a workspace gate that lets through goals beyond the arm's reach
  (a warning: the gate is a safety net and may be generous on purpose).

Moment-arm signs declared in the muscles file are checked where the ranges are sampled
(:meth:`musculo_control.model.robot.Robot._check_moment_arm_signs`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import numpy.typing as npt

from musculo_control.errors import ConfigError, ConfigWarning
from musculo_control.model.poses import PoseError
from musculo_control.model.robot import Robot

FloatArray = npt.NDArray[np.float64]

#: Points along a hand path that must each be reachable.
_PATH_POINTS = 21
#: A workspace reach this much beyond the arm's sampled reach draws a warning [-].
_REACH_SLACK = 1.05


def sample_poses(robot: Robot, count: int, seed: int = 0) -> FloatArray:
    lo, hi = robot.arm.lower_rad, robot.arm.upper_rad
    rand = lo + (hi - lo) * np.random.default_rng(seed).random((count, robot.arm.n_joints))
    return np.vstack([robot.home_pose_rad, 0.5 * (lo + hi), rand])


def check_reachable(robot: Robot, q_start: FloatArray, start_m: npt.ArrayLike,
                    end_m: npt.ArrayLike, file: str, key: str) -> None:
    """The hand can follow the straight path ``start_m -> end_m`` from ``q_start`` (hand only).

    Each of a few points along the path is solved from the previous solution by the pose
    solver, so the path stays on the start pose's branch, as the joint-space baselines follow it.
    """
    if robot.poses is None:
        return
    start, end = np.asarray(start_m, dtype=float), np.asarray(end_m, dtype=float)
    q = q_start
    for s in np.linspace(0.0, 1.0, _PATH_POINTS):
        point = start + s * (end - start)
        try:
            q = robot.poses.solve(q, point, None, what="path").q_rad
        except PoseError as exc:
            which = "start_m" if s == 0.0 else "end_m"
            hand = robot.poses.targets_at(q)[0]
            raise ConfigError(file, f"{key}.{which}",
                              f"a path the hand can follow: {100 * s:.0f} % of the way, at "
                              f"{np.round(point, 3).tolist()} m, it stays "
                              f"{1e3 * exc.hand_error_m:.1f} mm short (last reached "
                              f"{np.round(hand, 3).tolist()} m)",
                              np.round(end if which == "end_m" else start, 4).tolist()) from exc


def check_workspace(robot: Robot, center_m: npt.ArrayLike, reach_m: float, file: str,
                    key: str = "workspace") -> None:
    """Warn when the workspace gate's reach sphere (controller.yaml ``workspace``: ``center_m``,
    ``reach_m`` [m]) extends well beyond where the hand can be."""
    arm = robot.arm
    data = arm.body.workspace()
    center = np.asarray(center_m, dtype=float)
    reach = 0.0
    for q in sample_poses(robot, 1024, seed=1):
        reach = max(reach, float(np.linalg.norm(arm.hand_pose(q, data)[0] - center)))
    if reach_m > _REACH_SLACK * reach:
        warnings.warn(ConfigWarning(
            file, f"{key}.reach_m",
            f"a reach the arm has: the hand gets at most {reach:.3f} m from center_m "
            f"{np.round(center, 3).tolist()} (sampled over the joint range), so goals between "
            f"that and reach_m pass the gate but cannot be reached", reach_m),
            stacklevel=2)
    if math.isclose(reach, 0.0):
        raise ConfigError(file, f"{key}.center_m", "a centre the hand moves around", None)
