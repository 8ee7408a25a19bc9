"""Static hold: the activations an arm needs to hold still, solved exactly (SPEC section 5's
oracle, SciPy's BVLS).

Holding still means ``tau_ref = g(q)`` (zero reference acceleration), so the soft QPs of the
paper become static-hold problems over activations ``a >= 0`` (the controlled muscles):

- (paper eq. 10)  min k ||a||^2 + ||Jm^T (a o f_a + f_p) + tau_fixed + g||^2
- (paper eq. 11)  min k ||a||^2 + ||Jm^T (a o f_a + f_p) + tau_fixed + g + N tau_null||^2
                      + r ||tau_null||^2   over z = [a; tau_null], tau_null free,

where ``Jm``, ``f_a``, ``f_p`` are restricted to the controlled muscles, ``tau_fixed`` is the
torque term of the uncontrolled muscles at their fixed tension (``Jm_fixed^T f_fixed``, SPEC
section 2 sign convention) and ``N`` is the nullspace projector of the snapshot (paper eq. 8).
Both are bounded linear least-squares problems ``min ||A z - b||^2, z >= lb``;
:func:`static_hold_problem` builds ``(A, b, lb)`` and :func:`solve_static_hold` solves it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from scipy.optimize import lsq_linear

from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.model.robot import Robot

FloatArray = npt.NDArray[np.float64]


class HoldProblem(NamedTuple):
    """Bounded linear least squares: ``min ||matrix z - vector||^2`` subject to ``z >= lower``."""

    matrix: FloatArray  # (rows, vars)
    vector: FloatArray  # (rows,)
    lower: FloatArray  # (vars,), -inf for free variables
    n_activations: int  # the first n_activations variables are a


class StaticHold(NamedTuple):
    """Solution of one static-hold problem at one pose."""

    activation: FloatArray  # (m_c,) a >= 0 of the controlled muscles
    tau_null_nm: FloatArray  # (n,) eq. 11's nullspace torque; zeros for eq. 10 [Nm]
    tension_n: FloatArray  # (m,) tension of every muscle, fixed ones included [N]
    residual_nm: FloatArray  # (n,) the QP's torque term Jm^T f + tau_fixed + g (+ N tau_null)
    net_torque_nm: FloatArray  # (n,) muscle torque minus gravity, -(Jm^T f) - g [Nm]
    gravity_nm: FloatArray  # (n,) g(q) [Nm]

    @property
    def activation_norm(self) -> float:
        """||a||, the figure the paper reports for a static hold."""
        return float(np.linalg.norm(self.activation))


def static_hold_problem(robot: Robot, snap: DynamicsSnapshot, k: float, r: float | None,
                        ) -> HoldProblem:
    """The static hold at ``snap`` as bounded least squares (paper eq. 10, or eq. 11 if ``r``).

    Rows: ``[Jm_c^T diag(f_a)  (N)] z = -(Jm_c^T f_p + tau_fixed + g)`` (torque, n rows), then
    ``sqrt(k) a = 0`` and, for eq. 11, ``sqrt(r) tau_null = 0``.
    """
    c, fx = robot.controlled_idx, robot.fixed_idx
    forces = robot.forces(snap.muscle_length_m)
    jm = snap.muscle_jacobian
    tau_fixed = jm[fx].T @ robot.fixed_tension_n
    A_tau = jm[c].T * forces.active_n[c]  # (n, m_c): torque term per unit activation
    b = -(jm[c].T @ forces.passive_n[c] + tau_fixed + snap.gravity_torque_nm)
    n, mc = A_tau.shape
    if r is None:
        A = np.vstack([A_tau, np.sqrt(k) * np.eye(mc)])
        return HoldProblem(A, np.r_[b, np.zeros(mc)], np.zeros(mc), mc)
    A = np.block([
        [A_tau, snap.nullspace_projector],
        [np.sqrt(k) * np.eye(mc), np.zeros((mc, n))],
        [np.zeros((n, mc)), np.sqrt(r) * np.eye(n)],
    ])
    lower = np.r_[np.zeros(mc), np.full(n, -np.inf)]
    return HoldProblem(A, np.r_[b, np.zeros(mc + n)], lower, mc)


def solve_static_hold(problem: HoldProblem) -> FloatArray:
    """Exact solution by SciPy's bounded-variable least squares (BVLS)."""
    res = lsq_linear(problem.matrix, problem.vector, bounds=(problem.lower, np.inf),
                     method="bvls", tol=1e-12, max_iter=1000)
    return np.asarray(res.x, dtype=float)


def static_hold(robot: Robot, snap: DynamicsSnapshot, k: float, r: float | None = None,
                ) -> StaticHold:
    """Activations that hold ``snap.q_rad`` still (paper eq. 10; eq. 11 when ``r`` is given)."""
    problem = static_hold_problem(robot, snap, k, r)
    z = solve_static_hold(problem)
    mc = problem.n_activations
    a = np.maximum(z[:mc], 0.0)
    tau_null = z[mc:] if r is not None else np.zeros(robot.arm.n_joints)
    forces = robot.forces(snap.muscle_length_m)
    tension = forces.passive_n.copy()
    tension[robot.controlled_idx] += a * forces.active_n[robot.controlled_idx]
    tension[robot.fixed_idx] = robot.fixed_tension_n
    balance = snap.muscle_jacobian.T @ tension + snap.gravity_torque_nm
    residual = balance + snap.nullspace_projector @ tau_null
    return StaticHold(a, tau_null, tension, residual, -balance, snap.gravity_torque_nm.copy())
