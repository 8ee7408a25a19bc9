"""The 20 Hz dynamics snapshot (SPEC section 4, paper eq. 5-8 and 12-13).

From a joint state (q, qd) it computes, in one pass:

- ``M(q)`` joint-space inertia, ``g(q)`` gravity torque, ``C(q, qd) qd`` Coriolis torque;
- the hand pose and the task Jacobian ``J`` (the configured rows of the hand frame's
  world-aligned Jacobian, the paper's [vx, vy, vz, wy, wz]) with the decoupling mask of eq. 13;
- ``Lambda = (J M^-1 J^T)^-1`` (eq. 6), ``Jbar = M^-1 J^T Lambda`` (eq. 7) and the nullspace
  projector ``N = I - J^T Jbar^T`` (eq. 8), with a damped inverse near singularities;
- muscle lengths ``l(q)`` and the muscle Jacobian ``Jm = dl/dq``.

The QP at 125 Hz uses the latest snapshot together with fresh joint state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.linalg import lapack

from musculo_control.errors import InputError
from musculo_control.model.robot import Robot
from musculo_control.model.task import TaskConfig

FloatArray = npt.NDArray[np.float64]

@dataclass(frozen=True)
class DynamicsSnapshot:
    """Everything the 125 Hz controller needs from the 20 Hz estimator. Immutable."""

    stamp_s: float  # time of the joint state it was computed from [s]
    q_rad: FloatArray  # (n,)
    qd_rad_s: FloatArray  # (n,)
    mass_matrix: FloatArray  # (n, n) M [kg m^2]
    gravity_torque_nm: FloatArray  # (n,) g(q) [Nm]
    coriolis_torque_nm: FloatArray  # (n,) C(q, qd) qd [Nm]
    hand_position_m: FloatArray  # (3,) world
    hand_rotation: FloatArray  # (3, 3) world_R_hand
    hand_jacobian: FloatArray  # (6, n) world-aligned [v; w], unmasked
    task_jacobian: FloatArray  # (k, n) masked task rows (eq. 13)
    task_inertia: FloatArray  # (k, k) Lambda (eq. 6)
    dyn_consistent_inverse: FloatArray  # (n, k) Jbar (eq. 7)
    nullspace_projector: FloatArray  # (n, n) N = I - J^T Jbar^T (eq. 8)
    muscle_length_m: FloatArray  # (m,) all muscles
    muscle_jacobian: FloatArray  # (m, n) dl/dq [m/rad]
    min_task_eigenvalue: float  # smallest eigenvalue of J M^-1 J^T
    damped: bool  # the damped inverse engaged (near-singular task)


class DynamicsEstimator:
    """Computes :class:`DynamicsSnapshot` objects; holds its own rigid-body workspace (not
    shared)."""

    def __init__(self, robot: Robot, task: TaskConfig, file: str = "controller.yaml") -> None:
        task.check_robot(robot, file)  # rows the arm can follow
        self.robot = robot
        self.task = task
        self._body = robot.arm.body
        self._ws = self._body.workspace()
        self._rows = task.row_indices()
        self._mask = np.array(task.mask, dtype=float)  # (k, n)
        self._frame = robot.arm.task_frame
        self._eye = np.eye(robot.arm.n_joints)

    def compute(self, q: FloatArray, qd: FloatArray, stamp_s: float = 0.0) -> DynamicsSnapshot:
        """One snapshot at (q, qd). Raises :class:`InputError` on a bad joint vector."""
        q = self.robot.arm.check_q(q, "q")
        qd = self.robot.arm.check_q(qd, "qd")
        M, Minv, g, c, position, rotation, J6 = self._body.dynamics(self._ws, q, qd,
                                                                     self._frame)
        J = J6[self._rows] * self._mask
        Minv_JT = Minv.dot(J.T)  # (n, k)
        A = J.dot(Minv_JT)  # J M^-1 J^T
        A += A.T
        A *= 0.5
        # LAPACK's symmetric eigensolver directly: numpy.linalg.eigh's checks cost twice the
        # decomposition of a 5 x 5 matrix
        w, V, info = lapack.dsyev(A)
        if info != 0:
            raise InputError("J M^-1 J^T", "a symmetric matrix LAPACK can decompose",
                             f"dsyev info {info}")
        damped = bool(w[0] < self.task.singular_eigenvalue)
        if damped:
            inv_w = w / (w * w + self.task.damping**2)
        else:
            inv_w = 1.0 / w
        Lam = (V * inv_w).dot(V.T)
        Jbar = Minv_JT.dot(Lam)
        N = self._eye - J.T.dot(Jbar.T)
        muscles = self.robot.geometry.kinematics_after_jacobians(q, self._ws)
        return DynamicsSnapshot(
            stamp_s=float(stamp_s),
            q_rad=q.copy(),
            qd_rad_s=qd.copy(),
            mass_matrix=M,
            gravity_torque_nm=g,
            coriolis_torque_nm=c,
            hand_position_m=position,
            hand_rotation=rotation,
            hand_jacobian=J6,
            task_jacobian=J,
            task_inertia=Lam,
            dyn_consistent_inverse=Jbar,
            nullspace_projector=N,
            muscle_length_m=muscles.length_m,
            muscle_jacobian=muscles.jacobian,
            min_task_eigenvalue=float(w[0]),
            damped=damped,
        )
