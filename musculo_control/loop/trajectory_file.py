"""Hand-goal trajectories from a YAML file: waypoints joined by minimum-jerk segments.

File format (every key checked, unknown keys rejected)::

    frame_id: base_link        # the robot's base frame; goals in other frames are refused
    relative: true             # positions are offsets from the hand position at the start
    loop: false                # start again after the last waypoint (else hold it)
    waypoints:                 # times strictly increasing, the first at 0
      - {time_s: 0.0, position_m: [0.0, 0.0, 0.0]}
      - {time_s: 2.0, position_m: [0.0, 0.10, 0.0], quaternion_xyzw: [0, 0, 0, 1]}

Between two waypoints the position follows a minimum-jerk profile (zero velocity and
acceleration at both ends), and the goal carries that profile's velocity and acceleration
(the feed-forward terms of paper eq. 14). A waypoint without ``quaternion_xyzw`` keeps the
hand's orientation at the start; orientations are interpolated along the same profile (slerp).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import load, spec
from musculo_control.control.goal import (
    HandGoal,
    WorkspaceConfig,
    check_goal,
    rotation_from_quaternion,
)
from musculo_control.control.minimum_jerk import minimum_jerk_profile
from musculo_control.errors import ConfigError, InputError

FloatArray = npt.NDArray[np.float64]

#: Tolerance on a waypoint quaternion's norm.
_QUATERNION_NORM_TOL = 1e-3


@dataclass(frozen=True, kw_only=True)
class Waypoint:
    """One point the hand passes through, at rest."""

    time_s: float = spec(ge=0.0, doc="time from the start of the trajectory [s]")
    position_m: tuple[float, ...] = spec(length=3, doc="hand position (or offset) [m]")
    quaternion_xyzw: tuple[float, ...] | None = spec(
        None, length=4, doc="hand orientation, unit quaternion; absent: the start orientation")

    def check(self, file: str, key: str) -> None:
        if self.quaternion_xyzw is not None:
            norm = math.sqrt(sum(v * v for v in self.quaternion_xyzw))
            if abs(norm - 1.0) > _QUATERNION_NORM_TOL:
                raise ConfigError(file, f"{key}.quaternion_xyzw",
                                  f"a unit quaternion (norm within {_QUATERNION_NORM_TOL})",
                                  round(norm, 6))


@dataclass(frozen=True, kw_only=True)
class TrajectoryFileConfig:
    """A trajectory file (see the module docstring)."""

    frame_id: str = spec(doc="frame of the positions: the robot's base frame (robot.yaml "
                             "arm.base_frame)")
    relative: bool = spec(False, doc="positions are offsets from the start hand position")
    loop: bool = spec(False, doc="repeat after the last waypoint")
    waypoints: tuple[Waypoint, ...] = spec(min_length=1, doc="times strictly increasing from 0")

    def check(self, file: str, key: str) -> None:
        first = self.waypoints[0].time_s
        if first != 0.0:
            raise ConfigError(file, "waypoints[0].time_s", "0 (the trajectory starts there)",
                              first)
        for i in range(1, len(self.waypoints)):
            if not self.waypoints[i].time_s > self.waypoints[i - 1].time_s:
                raise ConfigError(file, f"waypoints[{i}].time_s",
                                  f"a time after waypoint {i - 1}'s "
                                  f"{self.waypoints[i - 1].time_s} s",
                                  self.waypoints[i].time_s)

    @property
    def duration_s(self) -> float:
        return self.waypoints[-1].time_s


def load_trajectory(path: str | Path) -> TrajectoryFileConfig:
    """Read and validate a trajectory file (:class:`ConfigError` names the file and key)."""
    return load(TrajectoryFileConfig, Path(path))


def _slerp(q0: FloatArray, q1: FloatArray, s: float) -> FloatArray:
    dot = float(q0 @ q1)
    if dot < 0.0:  # the shorter way round
        q1, dot = -q1, -dot
    if dot > 1.0 - 1e-9:
        q = q0 + s * (q1 - q0)
    else:
        theta = math.acos(dot)
        q = (math.sin((1 - s) * theta) * q0 + math.sin(s * theta) * q1) / math.sin(theta)
    return q / np.linalg.norm(q)


class GoalTrajectory:
    """A loaded trajectory anchored at the hand pose where it starts."""

    def __init__(self, config: TrajectoryFileConfig, start_position_m: npt.ArrayLike,
                 start_quaternion_xyzw: npt.ArrayLike) -> None:
        self.config = config
        origin = np.asarray(start_position_m, dtype=float).reshape(3)
        q_start = np.asarray(start_quaternion_xyzw, dtype=float).reshape(4)
        if not (np.all(np.isfinite(origin)) and np.all(np.isfinite(q_start))):
            raise InputError("trajectory start pose", "finite values",
                             (origin.tolist(), q_start.tolist()))
        q_start = q_start / np.linalg.norm(q_start)
        offset = origin if config.relative else np.zeros(3)
        self.times = np.array([w.time_s for w in config.waypoints])
        self.positions = np.array([w.position_m for w in config.waypoints]) + offset  # (k, 3)
        self.quaternions = np.array([
            q_start if w.quaternion_xyzw is None
            else np.asarray(w.quaternion_xyzw) / np.linalg.norm(w.quaternion_xyzw)
            for w in config.waypoints])

    @property
    def duration_s(self) -> float:
        return float(self.times[-1])

    def outside(self, workspace: WorkspaceConfig) -> str | None:
        """Why a waypoint lies outside the workspace, or ``None`` when all lie inside.

        Minimum-jerk segments run straight between waypoints; the workspace (a sphere
        intersected with a box) is convex, so checking the waypoints checks the whole path.
        """
        for i, p in enumerate(self.positions):
            why = check_goal(HandGoal.hold(p), workspace)
            if why is not None:
                return f"waypoint {i}: {why}"
        return None

    def finished(self, t_s: float) -> bool:
        return not self.config.loop and t_s >= self.duration_s

    def goal_at(self, t_s: float) -> HandGoal:
        """The hand goal ``t_s`` seconds after the start (position, velocity, acceleration)."""
        t = self._wrap(t_s)
        if len(self.times) == 1 or t >= self.times[-1]:
            return HandGoal(self.positions[-1],
                            rotation=rotation_from_quaternion(self.quaternions[-1]))
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        i = min(max(i, 0), len(self.times) - 2)
        s, ds, dds = minimum_jerk_profile(t - self.times[i], self.times[i + 1] - self.times[i])
        d = self.positions[i + 1] - self.positions[i]
        q = _slerp(self.quaternions[i], self.quaternions[i + 1], s)
        return HandGoal(self.positions[i] + s * d, ds * d, dds * d, rotation_from_quaternion(q))

    def _wrap(self, t_s: float) -> float:
        if self.config.loop and self.duration_s > 0.0:
            return math.fmod(max(t_s, 0.0), self.duration_s)
        return max(t_s, 0.0)
