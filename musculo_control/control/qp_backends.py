"""The solvers of the activation QP behind one interface (set up once, values updated and solved
warm-started every tick): OSQP on the lifted form, DAQP on the condensed form, Newton on the
dual of eq. 10/11."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import osqp

try:  # a required dependency; the import is guarded so that a broken install says what to do
    import daqp
except ImportError:  # pragma: no cover - exercised only on an incomplete install
    daqp = None

from musculo_control.arrays import all_finite
from musculo_control.control.dual_newton import DualNewtonQP
from musculo_control.control.qp_config import DAQPConfig, DualNewtonConfig, OSQPConfig
from musculo_control.control.qp_problem import (
    DAQP_ACTIVE,
    DAQP_ACTIVE_LOWER,
    OSQP_INFTY,
    CondensedQP,
    LinearRows,
    QPStructure,
    TorqueBalance,
)
from musculo_control.errors import ConfigError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_SOLVED = int(osqp.SolverStatus.OSQP_SOLVED)
_SOLVED_INACCURATE = int(osqp.SolverStatus.OSQP_SOLVED_INACCURATE)
#: DAQP treats bounds at or beyond this magnitude as infinite (its DAQP_INF).
_DAQP_INF = 1e30
#: DAQP's exit flags, worded like OSQP's statuses so that one vocabulary reaches the reports.
_DAQP_STATUS = {1: "solved", 2: "solved (soft constraints relaxed)", -1: "primal infeasible",
                -2: "cycling detected", -3: "unbounded", -4: "maximum iterations reached",
                -5: "non-convex problem (Hessian not positive definite)",
                -6: "overdetermined initial active set", -7: "run time limit reached",
                -8: "unsupported problem"}


class OSQPBackend:
    """OSQP on the lifted problem: set up at the first solve, then updated."""

    name = "osqp"

    def __init__(self, structure: QPStructure, config: OSQPConfig,
                 accept_inaccurate: bool) -> None:
        self.structure = structure
        self.settings = config.settings()
        # OSQP statuses that count as a solution
        self._accepted = {_SOLVED, _SOLVED_INACCURATE} if accept_inaccurate else {_SOLVED}
        self.Ax, self.l, self.u, self.c = structure.new_buffers()
        self.solver: osqp.OSQP | None = None
        self._max_iter_override: int | None = None
        self._zero_x = np.zeros(structure.n_variables)
        self._zero_y = np.zeros(structure.n_constraints)

    @property
    def is_set_up(self) -> bool:
        return self.solver is not None

    def reset(self) -> None:
        """Forget the warm start: the next solve starts cold."""
        if self.solver is not None:
            self.solver.warm_start(x=self._zero_x, y=self._zero_y)

    def limit_iterations(self, max_iter: int | None) -> None:
        """Cap the solver's iterations (``None``: the configured limit), for the fault injector."""
        self._max_iter_override = max_iter
        if self.solver is not None:
            limit = self.settings["max_iter"] if max_iter is None else int(max_iter)
            self.solver.update_settings(max_iter=limit)

    def load(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
             rows: LinearRows | None, null_bound: FloatArray | None = None) -> str:
        """Fill and hand the values to OSQP; a non-empty string says why they were refused."""
        s, Ax, l, u = self.structure, self.Ax, self.l, self.u
        s.fill(balance, lower, upper, rows, Ax, l, u, self.c)
        if null_bound is not None:  # this tick's |tau_null_i| <= bound_i
            np.minimum(null_bound, OSQP_INFTY, out=u[s.null_bound_rows])
            np.negative(u[s.null_bound_rows], out=l[s.null_bound_rows])
        if not all_finite(Ax, l, u):
            return "non-finite QP input"
        if (l > u).any():
            return "empty bound interval"
        if np.abs(self.c).max() >= OSQP_INFTY or np.abs(Ax).max() >= OSQP_INFTY:
            # OSQP would clip such an equality bound to its infinity, find l > u, refuse the
            # update without raising and solve the previous tick's problem again
            return "QP input beyond the solver's range (|value| >= OSQP_INFTY)"
        if self.solver is None:
            solver = osqp.OSQP()
            solver.setup(s.P_matrix(), np.zeros(s.n_variables), s.A_matrix(Ax), l, u,
                         **self.settings)
            self.solver = solver
            if self._max_iter_override is not None:
                solver.update_settings(max_iter=self._max_iter_override)
        else:
            self.solver.update(Ax=Ax, l=l, u=u)
        return ""

    def run(self) -> tuple[str, bool, FloatArray, FloatArray | None, int, float]:
        """(status, found, activations, tau_null or None, iterations, solve time [s])."""
        assert self.solver is not None
        res = self.solver.solve(raise_error=False)
        info, s = res.info, self.structure
        x = res.x
        return (str(info.status), int(info.status_val) in self._accepted, x[s.a],
                x[s.tau_null] if s.has_null else None, int(info.iter),
                float(info.solve_time + info.polish_time))


class DAQPBackend:
    """DAQP on the condensed problem: set up at the first solve, then updated (warm start)."""

    name = "daqp"

    def __init__(self, problem: CondensedQP, config: DAQPConfig) -> None:
        if daqp is None:
            raise ConfigError("controller.yaml", "qp.solver",
                              "an installed daqp package (pip install daqp), or solver: osqp",
                              "daqp")
        self.problem = problem
        self.config = config
        self.settings = config.settings()
        self.model: Any = None
        self._max_iter_override: int | None = None
        self._lam: FloatArray | None = None  # multipliers of the last solve: its active set
        self._bounds_key = b""  # the bytes of the bounds of the last update

    @property
    def is_set_up(self) -> bool:
        return self.model is not None

    def reset(self) -> None:
        """Forget the warm start: the next solve starts cold."""
        self.model = None  # the next solve sets up afresh: a cold start
        self._lam = None

    def limit_iterations(self, max_iter: int | None) -> None:
        """Cap the solver's iterations (``None``: the configured limit), for the fault injector."""
        self._max_iter_override = max_iter
        if self.model is not None:
            self.model.settings = self._settings()

    def _settings(self) -> dict[str, Any]:
        out = dict(self.settings)
        if self._max_iter_override is not None:
            out["iter_limit"] = int(self._max_iter_override)
        return out

    def load(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
             rows: LinearRows | None, null_bound: FloatArray | None = None) -> str:
        """Fill the condensed problem's values; a non-empty string says why they were refused."""
        pr = self.problem
        pr.fill(balance, lower, upper, rows)
        if null_bound is not None:  # this tick's |tau_null_i| <= bound_i (DAQP: inf = none)
            m = pr.n_muscles
            np.copyto(pr.upper[m:pr.n_variables], null_bound)
            np.negative(null_bound, out=pr.lower[m:pr.n_variables])
        # H and f carry every input but the bounds and the rows (B, c, N all enter them)
        if not all_finite(pr.H, pr.f) or (len(pr.A) and not all_finite(pr.A)):
            return "non-finite QP input"
        if pr.bounds_are_activation_bounds:
            blower, bupper = lower, upper  # DAQP reads +-inf as no bound
        else:
            blower, bupper = pr.lower, pr.upper
        # bounds the last update accepted need no second look (the usual tick: same bounds)
        bounds_key = blower.tobytes() + bupper.tobytes()
        # one comparison finds both an empty interval and a NaN (which compares false)
        if bounds_key != self._bounds_key and not (blower <= bupper).all():
            return "empty bound interval (or a NaN bound)"
        if pr.n_equalities and np.abs(pr.c).max() >= _DAQP_INF:
            # DAQP would take such an equality bound for "no bound" and drop the row
            return "QP input beyond the solver's range (|value| >= DAQP_INF)"
        if self.model is None or not self.config.warm_starting:
            model = daqp.Model()
            flag, _ = model.setup(pr.H, pr.f, pr.A, bupper, blower, pr.sense)
            model.settings = self._settings()
            self.model = model
        else:
            # DAQP keeps references to these arrays; update re-reads them and keeps the
            # previous active set as the warm start. DAQP would hold a constraint active at a
            # bound that has since become infinite (x = inf): when the bounds change, the warm
            # start is handed over explicitly, without such constraints.
            sense = None
            if bounds_key != self._bounds_key and self._lam is not None:
                sense = self._warm_sense(self._lam, blower, bupper)
            flag = self.model.update(H=pr.H, f=pr.f, A=pr.A if len(pr.A) else None,
                                     bupper=bupper, blower=blower, sense=sense)
        self._bounds_key = bounds_key
        if flag < 0:
            self.model = None
            return f"QP refused by DAQP: {_DAQP_STATUS.get(flag, flag)}"
        return ""

    def _warm_sense(self, lam: FloatArray, blower: FloatArray, bupper: FloatArray
                    ) -> npt.NDArray[np.intc]:
        """DAQP's constraint flags for a warm start from the active set of ``lam``."""
        sense = self.problem.sense.copy()  # the equality rows' flags
        free = sense == 0
        sense[free & (lam > 0.0) & (bupper < np.inf)] = DAQP_ACTIVE
        sense[free & (lam < 0.0) & (blower > -np.inf)] = DAQP_ACTIVE_LOWER
        return sense

    def run(self) -> tuple[str, bool, FloatArray, FloatArray | None, int, float]:
        """Solve the loaded problem warm-started: (status, solution, iterations)."""
        x, _, flag, info = self.model.solve()
        pr = self.problem
        m = pr.n_muscles
        found = flag == 1
        self._lam = info["lam"] if found else None
        return (_DAQP_STATUS.get(flag, f"DAQP exit flag {flag}"), found, x[:m],
                x[m:] if pr.keeps_null else None, int(info["iterations"]),
                float(info["solve_time"]))


class DualNewtonBackend:
    """Newton on the n-dimensional dual of eq. 10/11 (:mod:`~musculo_control.control.
    dual_newton`): simple bounds on z = [a; tau_null] only, no rows."""

    name = "dual_newton"

    def __init__(self, structure: QPStructure, config: DualNewtonConfig) -> None:
        if structure.formulation == "eq9" or structure.n_limit_rows:
            raise ValueError("solver dual_newton takes eq10/eq11 with simple bounds only; use "
                             "daqp, osqp or auto for eq9 or limit rows")
        self.structure = structure
        self.config = config
        m, n = structure.n_muscles, structure.n_joints
        self.qp = DualNewtonQP(m, n, structure.k, structure.r, structure.has_null,
                               residual_tol=config.residual_tol, iter_limit=config.iter_limit,
                               warm_starting=config.warm_starting)
        self._B = self.qp.R[:, :m]  # views into the solver's buffers
        self._N = self.qp.R[:, m:]
        box = structure.tau_null_max_nm
        self._null_box = np.inf if box is None else box
        self.qp.lower[m:] = -self._null_box
        self.qp.upper[m:] = self._null_box
        self._loaded = False

    @property
    def is_set_up(self) -> bool:
        return self._loaded

    def reset(self) -> None:
        """Forget the warm start: the next solve starts cold."""
        self.qp.reset()

    def limit_iterations(self, max_iter: int | None) -> None:
        """Cap the solver's iterations (``None``: the configured limit), for the fault injector."""
        self.qp.iter_limit = self.config.iter_limit if max_iter is None else int(max_iter)

    def load(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
             rows: LinearRows | None, null_bound: FloatArray | None = None) -> str:
        """Fill the solver's buffers; a non-empty string says why the values were refused."""
        qp, m = self.qp, self.structure.n_muscles
        jm = balance.muscle_jacobian
        np.multiply(jm.T, balance.active_n, out=self._B)  # B = Jm^T diag(f_a)
        if self.structure.has_null:
            if balance.nullspace is None:
                raise ValueError("eq11 needs the nullspace projector N")
            np.copyto(self._N, balance.nullspace)
        np.dot(balance.passive_n, jm, out=qp.c)
        qp.c += balance.offset_nm
        qp.lower[:m] = lower
        qp.upper[:m] = upper
        if null_bound is not None:  # this tick's |tau_null_i| <= bound_i
            np.copyto(qp.upper[m:], null_bound)
            np.negative(null_bound, out=qp.lower[m:])
        elif self.structure.has_null:
            qp.upper[m:] = self._null_box
            qp.lower[m:] = -self._null_box
        if not all_finite(qp.R, qp.c):
            return "non-finite QP input"
        # one comparison finds both an empty interval and a NaN (which compares false)
        if not (qp.lower <= qp.upper).all():
            return "empty bound interval (or a NaN bound)"
        self._loaded = True
        return ""

    def run(self) -> tuple[str, bool, FloatArray, FloatArray | None, int, float]:
        """Solve the loaded problem warm-started: (status, found, activations, tau_null,
        iterations, solve time)."""
        found, status, z, iterations, solve_time = self.qp.solve()
        m = self.structure.n_muscles
        return (status, found, z[:m], z[m:] if self.structure.has_null else None, iterations,
                solve_time)
