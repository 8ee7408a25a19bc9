"""Eq. 10 and 11 solved through their dual, whose size is the number of joints (paper eq. 10-11;
derivation in doc/controller.md, "Newton on the dual").

With ``z = [a; tau_null]``, ``D = diag(k 1_m, r 1_t)`` and ``R = [B, N]`` (``t = n`` for eq. 11,
``t = 0`` for eq. 10), both are

    min  z^T D z + ||R z + c||^2      s.t.  lower <= z <= upper

a bounded least squares whose Hessian ``D + R^T R`` is a diagonal plus a rank-n term. Its dual
variable is the torque residual ``w = R z + c`` (n,): given w the best z is a clip,

    z(w) = clip(-D^-1 R^T w, lower, upper),

and the optimum is the root of ``F(w) = w - c - R z(w)``, the gradient of a strongly convex,
piecewise quadratic function ``psi`` (the dual's negative). ``F`` is affine on each piece (a set
of clipped coordinates); Newton's step on the piece of ``w`` solves the n x n system

    (I + R_F D_F^-1 R_F^T) dw = -F(w),     F: the coordinates not clipped,

whose matrix is never worse than the identity. A step that stays in its piece lands on the
root exactly (up to rounding), so the method ends like an active-set method, on the exact
solution; a step that leaves its piece is damped by backtracking on ``psi`` (Armijo), which makes
it converge from any start. Warm-started from the previous tick's residual, a tick along a
trajectory takes 1-3 steps, each O(n^2 m) instead of the condensed problem's O(m^3).

Only simple bounds on z are handled: eq. 9's equality rows and the predictive joint-limit rows
go to DAQP or OSQP (``qp.solver: auto`` does so).
"""

from __future__ import annotations

import time

import numpy as np
import numpy.typing as npt
from scipy.linalg import lapack

FloatArray = npt.NDArray[np.float64]

#: Sufficient-decrease constant and smallest step of the backtracking line search.
_ARMIJO = 1e-4
_SMALLEST_STEP = 1e-12


class DualNewtonQP:
    """The solver of eq. 10/11 over ``z = [a; tau_null]`` (see the module docstring).

    ``R``, ``c`` and the bounds are buffers the caller fills before :meth:`solve` (see
    :class:`~musculo_control.control.qp_backends.DualNewtonBackend`). The last solution's
    residual ``w`` is kept as the next warm start.
    """

    def __init__(self, n_muscles: int, n_joints: int, k: float, r: float, has_null: bool, *,
                 residual_tol: float, iter_limit: int, warm_starting: bool) -> None:
        if k <= 0.0 or r <= 0.0:
            raise ValueError(f"the dual Newton solver needs k > 0 and r > 0 (got k={k}, r={r})")
        m, n = n_muscles, n_joints
        nz = m + (n if has_null else 0)
        self.n_muscles, self.n_joints, self.n_variables = m, n, nz
        self.residual_tol = float(residual_tol)
        self.iter_limit = int(iter_limit)
        self.warm_starting = warm_starting
        self.R = np.zeros((n, nz))  # [B, N] [Nm per unit of z]
        self.c = np.zeros(n)  # [Nm]
        self.lower = np.zeros(nz)
        self.upper = np.zeros(nz)
        self._d = np.r_[np.full(m, k), np.full(nz - m, r)]
        self._neg_inv_d = -1.0 / self._d
        self._sqrt_inv_d = np.sqrt(1.0 / self._d)
        self._scaled = np.zeros((n, nz))  # R D^-1/2: the Newton matrix is I + its Gram
        self._w = np.zeros(n)  # the warm start: the last solution's residual [Nm]
        self._eye = np.eye(n)

    def reset(self) -> None:
        """Forget the warm start: the next solve starts from w = 0."""
        self._w[:] = 0.0

    def _evaluate(self, w: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray,
                                                npt.NDArray[np.int8]]:
        """(u, z, F, piece) at w: the unclipped and clipped minimisers, the residual F(w) and
        each coordinate's piece (0 free, 1 at its upper bound, -2 at its lower bound, -1 at
        both: a fixed coordinate)."""
        u = w.dot(self.R)
        u *= self._neg_inv_d
        z = np.maximum(u, self.lower)
        np.minimum(z, self.upper, out=z)
        F = w - self.c
        F -= self.R.dot(z)
        piece = (u >= self.upper).view(np.int8) - 2 * (u <= self.lower).view(np.int8)
        return u, z, F, piece

    def _psi(self, w: FloatArray, u: FloatArray, z: FloatArray) -> float:
        """The dual's negative at w, up to a constant: ``w.w - 2 c.w - min_z (z D z + 2 w R z)``.

        With ``R^T w = -D u`` the inner minimum is ``sum D_i ((z_i - u_i)^2 - u_i^2)``.
        """
        dz = z - u
        inner = float(np.dot(self._d, dz * dz - u * u))
        return float(w.dot(w)) - 2.0 * float(self.c.dot(w)) - inner

    def solve(self) -> tuple[bool, str, FloatArray, int, float]:
        """Solve with the buffers' values: (found, status, z, iterations, solve time [s]).

        Iterations count the points evaluated, the start included: a warm start that is already
        the answer takes 2 (the start, and the Newton step that confirms it).
        """
        t0 = time.perf_counter()
        w = self._w if self.warm_starting else np.zeros(self.n_joints)
        u, z, F, piece = self._evaluate(w)
        tol = self.residual_tol * max(1.0, float(np.abs(self.c).max()))
        scaled = np.multiply(self.R, self._sqrt_inv_d, out=self._scaled)
        iterations = 1
        while iterations < self.iter_limit:
            free = scaled[:, piece == 0]
            M = free.dot(free.T)  # R_F D_F^-1 R_F^T
            M += self._eye
            _, step, info = lapack.dposv(M, -F)
            if info != 0:  # M >= I: only a NaN gets here
                return False, f"Newton system not positive definite (LAPACK info {info})", \
                    z, iterations, time.perf_counter() - t0
            iterations += 1
            w_new = w + step
            u_new, z_new, F_new, piece_new = self._evaluate(w_new)
            if piece_new.tobytes() == piece.tobytes() or float(np.abs(F_new).max()) <= tol:
                # the step stayed on its piece, where F is affine: w_new is the root
                np.copyto(self._w, w_new)
                return True, "solved", z_new, iterations, time.perf_counter() - t0
            # left its piece: damp the step until psi decreases enough (Armijo)
            psi0 = self._psi(w, u, z)
            slope = 2.0 * float(F.dot(step))  # psi's derivative along the step (< 0)
            s = 1.0
            while self._psi(w_new, u_new, z_new) > psi0 + _ARMIJO * s * slope:
                s *= 0.5
                if s < _SMALLEST_STEP:
                    return False, "line search failed", z, iterations, \
                        time.perf_counter() - t0
                w_new = w + s * step
                u_new, z_new, F_new, piece_new = self._evaluate(w_new)
            w, u, z, F, piece = w_new, u_new, z_new, F_new, piece_new
        self._w[:] = 0.0  # an unfinished iterate is no place to start from
        return False, "maximum iterations reached", z, iterations, time.perf_counter() - t0
