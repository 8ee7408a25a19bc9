"""Baselines of the tick benchmark: the activation QP of eq. 10/11 set up from scratch every
tick, as a typical Python user solves it (:class:`CondensedFreshQP`: the dense condensed bounded
least squares through qpsolvers, or a fresh OSQP set-up without it) and as ours without its
set-up-once (:class:`LiftedFreshQP`). Both answer like :class:`~musculo_control.control.
activation_qp.ActivationQP` (``reset``, ``solve``), so a controller can run on either.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import numpy.typing as npt
import osqp
import scipy.sparse as sp

from musculo_control.control.qp_config import OSQPConfig
from musculo_control.control.qp_problem import (
    LinearRows,
    QPResult,
    QPStructure,
    TorqueBalance,
    paper_objective,
)

FloatArray = npt.NDArray[np.float64]


class CondensedFreshQP:
    """The bounded least squares of eq. 10/11 solved as a typical user would, every tick anew."""

    def __init__(self, structure: QPStructure, osqp_config: OSQPConfig) -> None:
        self.structure = structure
        self.settings = osqp_config.settings()
        try:
            import qpsolvers

            self.method = f"qpsolvers {qpsolvers.__version__} solve_ls(solver='osqp'), " \
                          "dense, set up every tick"
            self._qpsolvers = True
        except ImportError:
            self.method = "osqp.OSQP().setup() of the condensed problem every tick " \
                          "(qpsolvers not installed)"
            self._qpsolvers = False

    def reset(self) -> None:
        """Nothing to forget: every solve starts from scratch."""
        return None

    def solve(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
              rows: LinearRows | None = None,
              tau_null_bound: FloatArray | None = None) -> QPResult:
        """One tick's QP, set up and solved anew (arguments and answer as ActivationQP's)."""
        s = self.structure
        t0 = time.perf_counter()
        jm = balance.muscle_jacobian
        B = jm.T * balance.active_n
        c = jm.T @ balance.passive_n + balance.offset_nm
        m, n = s.n_muscles, s.n_joints
        top = np.hstack([B, balance.nullspace]) if balance.nullspace is not None else B
        nv = top.shape[1]
        weights = np.r_[np.full(m, np.sqrt(s.k)), np.full(nv - m, np.sqrt(s.r))]
        R = np.vstack([top, np.diag(weights)])
        rhs = np.r_[-c, np.zeros(nv)]
        free = np.full(nv - m, np.inf) if tau_null_bound is None else tau_null_bound
        lb = np.r_[lower, -free]
        ub = np.r_[upper, free]
        if self._qpsolvers:
            import qpsolvers

            with warnings.catch_warnings():  # its advice to pass CSC matrices, every tick
                warnings.simplefilter("ignore")
                x = qpsolvers.solve_ls(R, rhs, lb=lb, ub=ub, solver="osqp", **self.settings)
            iters = 0
        else:
            P = sp.csc_matrix(2.0 * R.T @ R)
            solver = osqp.OSQP()
            solver.setup(P, -2.0 * R.T @ rhs, sp.csc_matrix(np.eye(nv)), lb, ub, **self.settings)
            res = solver.solve(raise_error=False)
            x = res.x if res.info.status_val == osqp.SolverStatus.OSQP_SOLVED else None
            iters = int(res.info.iter)
        elapsed = time.perf_counter() - t0
        if x is None or not np.all(np.isfinite(x)):
            zm, zn = np.zeros(m), np.zeros(n)
            return QPResult(False, "baseline failed", zm, zn, zm, zn, 0.0, iters, elapsed, 0.0)
        a = np.clip(x[:m], lower, upper)
        tn = x[m:] if s.has_null else np.zeros(n)
        tension = a * balance.active_n + balance.passive_n
        residual = jm.T @ tension + balance.offset_nm
        if s.has_null and balance.nullspace is not None:
            residual += balance.nullspace @ tn
        return QPResult(True, "solved", a, tn, tension, residual,
                        paper_objective(s, a, tn, residual), iters, elapsed, 0.0)


class LiftedFreshQP:
    """Our lifted problem, but with a fresh OSQP set-up (cold start) every tick."""

    method = "lifted problem, osqp.OSQP().setup() every tick"

    def __init__(self, structure: QPStructure, osqp_config: OSQPConfig) -> None:
        self.structure = structure
        self.settings = osqp_config.settings()

    def reset(self) -> None:
        """Nothing to forget: every solve starts from scratch."""
        return None

    def solve(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
              rows: LinearRows | None = None,
              tau_null_bound: FloatArray | None = None) -> QPResult:
        """One tick's QP, set up and solved anew (arguments and answer as ActivationQP's)."""
        if tau_null_bound is not None:
            raise ValueError("the lifted baseline solves eq. 11 without per-tick tau_null bounds")
        s = self.structure
        t0 = time.perf_counter()
        Ax, l, u, c = s.new_buffers()
        s.fill(balance, lower, upper, rows, Ax, l, u, c)
        solver = osqp.OSQP()
        solver.setup(s.P_matrix(), np.zeros(s.n_variables), s.A_matrix(Ax), l, u, **self.settings)
        res = solver.solve(raise_error=False)
        x = res.x
        a = np.clip(x[s.a], lower, upper)
        tn = x[s.tau_null] if s.has_null else np.zeros(s.n_joints)
        tension = a * balance.active_n + balance.passive_n
        residual = balance.muscle_jacobian.T @ tension + balance.offset_nm
        if s.has_null and balance.nullspace is not None:
            residual += balance.nullspace @ tn
        ok = res.info.status_val == osqp.SolverStatus.OSQP_SOLVED
        return QPResult(bool(ok), str(res.info.status), a, tn, tension, residual,
                        paper_objective(s, a, tn, residual), int(res.info.iter),
                        time.perf_counter() - t0, 0.0)
