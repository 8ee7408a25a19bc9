"""The hand goal of the operational-space controller and the workspace check of a goal.

A :class:`HandGoal` is the desired hand position with its velocity and acceleration (all in the
robot's base frame), and optionally a desired hand orientation ``world_R_hand``. It validates
itself on construction (shape, finiteness, a proper rotation), so a goal that exists is a goal
the controller can use. Its arrays are read-only.

Whether a goal is *reachable* is a separate question (:func:`check_goal`): the soft QPs (paper
eq. 10-11) still give a finite answer for a far goal, so refusing it is the caller's policy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from musculo_control.arrays import finite, largest
from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError, InputError

FloatArray = npt.NDArray[np.float64]

#: Tolerance on R^T R = I and det R = 1 for a desired rotation (numerical noise of a message).
_ROTATION_TOL = 1e-6
#: Tolerance on the norm of a quaternion before it is normalised.
_QUATERNION_NORM_TOL = 1e-3
_EYE3 = np.eye(3)


def _vector3(value: npt.ArrayLike | None, what: str) -> FloatArray:
    arr = np.zeros(3) if value is None else np.array(value, dtype=float)
    if arr.shape != (3,):
        raise InputError(what, "3 values (x, y, z)", arr.shape)
    if not finite(arr):
        raise InputError(what, "finite values", arr.tolist())
    arr.setflags(write=False)
    return arr


def _det3(r: FloatArray) -> float:
    """Determinant of a 3x3 matrix (the triple product; ``np.linalg.det`` costs 10x more)."""
    (a, b, c), (d, e, f), (g, h, i) = r.tolist()
    return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)


def _rotation(value: npt.ArrayLike, what: str) -> FloatArray:
    arr = np.array(value, dtype=float)
    if arr.shape != (3, 3):
        raise InputError(what, "a 3x3 rotation matrix", arr.shape)
    if not finite(arr):
        raise InputError(what, "finite values", arr.tolist())
    gram = arr.T @ arr
    gram -= _EYE3
    err = largest(np.abs(gram).reshape(9))
    if err > _ROTATION_TOL or _det3(arr) <= 0.0:
        raise InputError(what, f"a proper rotation (R^T R = I within {_ROTATION_TOL}, det R = 1)",
                         f"max |R^T R - I| = {err:.2e}, det = {np.linalg.det(arr):.3f}")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)  # eq on arrays is ambiguous: compare fields
class HandGoal:
    """Desired hand state in the base frame (SPEC section 4).

    ``HandGoal(position_m, velocity_m_s=0, acceleration_m_s2=0, rotation=None)`` raises
    :class:`InputError` on a wrong shape, a non-finite value or a rotation that is not one.
    ``rotation`` is the desired ``world_R_hand``; ``None`` sets no orientation target.
    """

    position_m: FloatArray  # (3,) x_des [m]
    velocity_m_s: FloatArray = field(default_factory=lambda: np.zeros(3))  # (3,) [m/s]
    acceleration_m_s2: FloatArray = field(default_factory=lambda: np.zeros(3))  # (3,) [m/s^2]
    rotation: FloatArray | None = None  # (3, 3) world_R_hand, or no orientation target

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: normalise the fields once, here
        set_(self, "position_m", _vector3(self.position_m, "goal position_m"))
        set_(self, "velocity_m_s", _vector3(self.velocity_m_s, "goal velocity_m_s"))
        set_(self, "acceleration_m_s2", _vector3(self.acceleration_m_s2, "goal acceleration_m_s2"))
        if self.rotation is not None:
            set_(self, "rotation", _rotation(self.rotation, "goal rotation"))

    @classmethod
    def hold(cls, position_m: npt.ArrayLike, rotation: npt.ArrayLike | None = None) -> HandGoal:
        """A fixed goal: zero velocity and acceleration."""
        return cls(np.asarray(position_m, dtype=float),
                   rotation=None if rotation is None else np.asarray(rotation, dtype=float))

    @classmethod
    def from_pose(cls, position_m: npt.ArrayLike, quaternion_xyzw: npt.ArrayLike) -> HandGoal:
        """A fixed goal from a position and a unit quaternion (x, y, z, w), as in a ROS Pose."""
        quat = np.array(quaternion_xyzw, dtype=float)
        if quat.shape != (4,) or not np.all(np.isfinite(quat)):
            raise InputError("goal quaternion", "4 finite values (x, y, z, w)", quat.tolist())
        norm = float(np.linalg.norm(quat))
        if abs(norm - 1.0) > _QUATERNION_NORM_TOL:
            raise InputError("goal quaternion", f"unit norm within {_QUATERNION_NORM_TOL}", norm)
        return cls.hold(position_m, rotation_from_quaternion(quat / norm))


def rotation_from_quaternion(quaternion_xyzw: FloatArray) -> FloatArray:
    """(3, 3) rotation matrix of a unit quaternion (x, y, z, w)."""
    x, y, z, w = (float(v) for v in quaternion_xyzw)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


@dataclass(frozen=True, kw_only=True)
class WorkspaceConfig:
    """Where a hand goal may lie (controller.yaml ``workspace``), in the base frame."""

    center_m: tuple[float, ...] = spec(length=3, doc="shoulder centre, the origin of the reach "
                                                     "sphere [m]")
    reach_m: float = spec(gt=0.0, doc="largest allowed distance of a goal from center_m [m]")
    box_min_m: tuple[float, ...] = spec(length=3, doc="lower corner of the allowed box [m]")
    box_max_m: tuple[float, ...] = spec(length=3, doc="upper corner of the allowed box [m]")

    def check(self, file: str, key: str) -> None:
        for axis, lo, hi in zip("xyz", self.box_min_m, self.box_max_m):
            if not lo < hi:
                raise ConfigError(file, f"{key}.box_min_m", f"box_min_m < box_max_m along {axis}",
                                  [lo, hi])


def check_goal(goal: HandGoal, workspace: WorkspaceConfig) -> str | None:
    """Why ``goal`` lies outside the workspace, or ``None`` when it lies inside."""
    p = goal.position_m
    dist = math.dist(p, workspace.center_m)
    if dist > workspace.reach_m:
        return (f"goal {np.round(p, 3).tolist()} m is {dist:.3f} m from the shoulder "
                f"{list(workspace.center_m)}, beyond the reach {workspace.reach_m} m")
    for i, axis in enumerate("xyz"):
        lo, hi = workspace.box_min_m[i], workspace.box_max_m[i]
        if not lo <= p[i] <= hi:
            return f"goal {axis} = {p[i]:.3f} m outside the workspace box [{lo}, {hi}] m"
    return None
