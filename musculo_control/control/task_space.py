"""Task-space reference: orientation error, reference acceleration and torque (SPEC section 4).

- Position: ``xdd_r = kp (x_des - x) + kd (xd_des - xd) + xdd_des`` (paper eq. 14).
- Orientation: ``xdd_r = kr theta`` (paper eq. 15), with ``theta`` the rotation vector of
  ``R_des R^T`` in world axes (the log map), of which the task keeps the world y and z parts.
  The log map has no Euler-angle wrap: it is continuous everywhere but at a half-turn error.
  An optional damping ``-kdr w`` (not in the paper; 0 by default) acts on the hand's angular
  velocity; without a desired rotation only that damping remains.
- Reference torque ``tau_ref = J^T Lambda xdd_r + g`` (+ ``C(q, qd) qd`` as an option).
- Integral action (not in the paper; off unless ``gains.ki_s3 > 0``): ``ki * integral of
  (x_des - x) dt`` joins the position rows of ``xdd_r``. The paper's law is a spring about the
  goal, so whatever torque its model gets wrong (moment arms off by millimetres, masses, tendon
  friction) leaves a steady hand error of (torque error) / (kp Lambda); the integral removes it.
  Its cost, and why it stays off for the paper's experiments: a push that is held is resisted
  harder and harder (the arm no longer yields, experiment A), a long move overshoots its end,
  and against dry friction the integral can hunt. Anti-windup: it integrates only while the
  error is below ``integral_zone_m`` (and, with ``integral_goal_speed_max_m_s``, while the goal
  is at rest), its acceleration is clamped to ``integral_max_m_s2``, and a gap in the ticks
  longer than ``integral_reset_after_s`` (the controller was off) clears it.

The 6-D vectors here follow Pinocchio's frame-Jacobian row order [vx, vy, vz, wx, wy, wz]; the
task keeps the rows named in ``TaskConfig.rows``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.config.parser import spec
from musculo_control.control.goal import HandGoal
from musculo_control.errors import ConfigError

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class GainsConfig:
    """Task-space feedback gains (paper Table I; controller.yaml ``gains``)."""

    kp_s2: float = spec(300.0, ge=0.0, doc="position stiffness per unit mass kp [1/s^2]")
    kd_s: float | None = spec(None, ge=0.0,
                              doc="position damping kd [1/s]; null: 2 sqrt(kp), critical")
    kr_s2: float = spec(300.0, ge=0.0, doc="orientation stiffness kr [1/s^2]")
    kdr_s: float = spec(0.0, ge=0.0,
                        doc="orientation damping [1/s]; not in the paper, 0 keeps eq. 15 as is")
    nullspace_damping_s: float = spec(
        0.0, ge=0.0, doc="damping of joint velocity inside the task nullspace, kv in "
                         "-N M kv qd [1/s]; not in the paper, 0 keeps eq. 11 as is")
    nullspace_posture_nm_rad: tuple[float, ...] | None = spec(
        None, ge=0.0, doc="per joint (robot.yaml order), stiffness K of a posture spring "
                          "toward robot.yaml home_pose_rad inside the task nullspace, "
                          "N K (q_home - q) added to tau_ref [Nm/rad]; not in the paper, null "
                          "keeps eq. 11 as is")
    ki_s3: float = spec(
        0.0, ge=0.0, doc="integral gain on the hand position error [1/s^3]; not in the paper, "
                         "0 (off) keeps eq. 14 as is; stable for ki < kp kd")
    integral_zone_m: float = spec(
        0.01, gt=0.0, doc="integrate only while the position error is below this [m]")
    integral_max_m_s2: float = spec(
        2.0, gt=0.0, doc="largest acceleration the integral term may add, per axis [m/s^2]")
    integral_goal_speed_max_m_s: float | None = spec(
        None, gt=0.0, doc="integrate only while the goal moves slower than this [m/s]; "
                          "null: also while it moves")
    integral_reset_after_s: float = spec(
        0.1, gt=0.0, doc="a gap between ticks longer than this clears the integral [s]")

    def check(self, file: str, key: str) -> None:
        if self.ki_s3 > 0.0 and not self.ki_s3 < self.kp_s2 * self.kd:
            raise ConfigError(file, f"{key}.ki_s3" if key else "ki_s3",
                              f"ki < kp kd = {self.kp_s2 * self.kd:.1f} 1/s^3 (beyond it the "
                              f"integral loop is unstable)", self.ki_s3)

    @property
    def kd(self) -> float:
        """kd [1/s]: the configured value or the critical damping 2 sqrt(kp)."""
        return 2.0 * math.sqrt(self.kp_s2) if self.kd_s is None else self.kd_s


class HandState(NamedTuple):
    """The hand's pose and twist in world axes."""

    position_m: FloatArray  # (3,)
    velocity_m_s: FloatArray  # (3,)
    rotation: FloatArray  # (3, 3) world_R_hand
    angular_velocity_rad_s: FloatArray  # (3,) world axes


def orientation_error(rotation_des: FloatArray, rotation: FloatArray) -> FloatArray:
    """(3,) rotation vector theta [rad] in world axes with ``exp(theta) R = R_des``.

    ``theta = log(R_des R^T)``: no Euler angles, so no wrap-around jumps (paper eq. 15).
    """
    return np.asarray(pin.log3(rotation_des @ rotation.T), dtype=float)


def reference_acceleration_6d(goal: HandGoal, hand: HandState, gains: GainsConfig) -> FloatArray:
    """(6,) [m/s^2; rad/s^2] reference acceleration of the hand (paper eq. 14-15)."""
    out = np.empty(6)
    out[:3] = (gains.kp_s2 * (goal.position_m - hand.position_m)
               + gains.kd * (goal.velocity_m_s - hand.velocity_m_s)
               + goal.acceleration_m_s2)
    out[3:] = -gains.kdr_s * hand.angular_velocity_rad_s
    if goal.rotation is not None:
        out[3:] += gains.kr_s2 * orientation_error(goal.rotation, hand.rotation)
    return out


def reference_acceleration(goal: HandGoal, hand: HandState, gains: GainsConfig,
                           rows: npt.NDArray[np.intp],
                           integral_m_s2: FloatArray | None = None) -> FloatArray:
    """(k,) reference acceleration xdd_r of the task rows (paper eq. 14-15), plus the integral
    term (3,) [m/s^2] on the position rows when given (:class:`PositionIntegral`)."""
    acc = reference_acceleration_6d(goal, hand, gains)
    if integral_m_s2 is not None:
        acc[:3] += integral_m_s2
    return acc[rows]


class PositionIntegral:
    """The integral term ``ki * integral of (x_des - x) dt`` with its anti-windup (module doc).

    One per controller; :meth:`update` once per successful tick with the tick's time.
    """

    def __init__(self, gains: GainsConfig) -> None:
        self.gains = gains
        self._sum_m_s = np.zeros(3)  # integral of the error [m s]
        self._last_t_s: float | None = None
        self._out = np.zeros(3)

    @property
    def enabled(self) -> bool:
        return self.gains.ki_s3 > 0.0

    def reset(self) -> None:
        self._sum_m_s[:] = 0.0
        self._last_t_s = None

    def update(self, error_m: FloatArray, t_s: float,
               goal_velocity_m_s: FloatArray | None = None) -> FloatArray:
        """(3,) the term's acceleration [m/s^2] after integrating ``error_m`` (3,) up to ``t_s``.

        ``goal_velocity_m_s`` (3,): while the goal moves at ``integral_goal_speed_max_m_s`` or
        faster the sum is held, not grown: a move's tracking lag is not a steady torque error,
        and integrated it unwinds after the move as an overshoot that dry friction makes hunt.
        """
        g = self.gains
        last, self._last_t_s = self._last_t_s, t_s
        dt = 0.0 if last is None else t_s - last
        if dt > g.integral_reset_after_s or dt < 0.0:
            self._sum_m_s[:] = 0.0
            dt = 0.0
        moving = (g.integral_goal_speed_max_m_s is not None and goal_velocity_m_s is not None
                  and float(np.linalg.norm(goal_velocity_m_s)) >= g.integral_goal_speed_max_m_s)
        if dt > 0.0 and not moving and float(np.linalg.norm(error_m)) < g.integral_zone_m:
            self._sum_m_s += error_m * dt
        # clamp the stored sum, not only the output: the integral cannot wind up past the limit
        bound = g.integral_max_m_s2 / g.ki_s3
        np.clip(self._sum_m_s, -bound, bound, out=self._sum_m_s)
        np.multiply(self._sum_m_s, g.ki_s3, out=self._out)
        return self._out


def reference_torque(task_jacobian: FloatArray, task_inertia: FloatArray,
                     acceleration: FloatArray, gravity_nm: FloatArray,
                     coriolis_nm: FloatArray | None = None) -> FloatArray:
    """(n,) tau_ref = J^T Lambda xdd_r + g (+ C qd) [Nm] (SPEC section 4)."""
    tau = task_jacobian.T @ (task_inertia @ acceleration)
    tau += gravity_nm
    if coriolis_nm is not None:
        tau += coriolis_nm
    return tau


def nullspace_posture_torque(projector: FloatArray, stiffness_nm_rad: FloatArray,
                             q_target: FloatArray, q: FloatArray) -> FloatArray:
    """(n,) N K (q_target - q) [Nm]: a joint spring toward ``q_target`` that the task does not
    feel (N of paper eq. 8, as in :func:`nullspace_damping_torque`)."""
    return projector @ (stiffness_nm_rad * (q_target - q))


def nullspace_damping_torque(projector: FloatArray, mass_matrix: FloatArray, qd: FloatArray,
                             damping_s: float) -> FloatArray:
    """(n,) -N M kv qd [Nm]: damps joint motion the task does not see, leaves the task alone.

    N = I - J^T Jbar^T (paper eq. 8) keeps the torque out of the task space (J M^-1 N = 0), and
    weighting by M gives every joint the same damping rate kv whatever its inertia.
    """
    return -damping_s * (projector @ (mass_matrix @ qd))

