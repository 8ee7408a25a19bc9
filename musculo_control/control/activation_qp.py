"""The activation QP (paper eq. 9-11, SPEC section 5), set up once and solved with OSQP.

The torque balance of the controlled muscles is, with ``B = Jm^T diag(f_a)`` (n x m) and
``c = Jm^T f_p + offset`` (n,), where ``offset`` holds ``tau_ref`` and the known torque of the
uncontrolled muscles (``Jm_fixed^T f_fixed``):

- eq9  (hard):  ``min ||a||^2``  s.t. ``B a + c = 0``, ``a >= 0``
- eq10 (soft):  ``min k ||a||^2 + ||B a + c||^2``, ``a >= 0``
- eq11 (soft, nullspace): ``min k ||a||^2 + ||B a + c + N tau_null||^2 + r ||tau_null||^2``

The soft problems are bounded least squares. They are handed to OSQP in *lifted* form with a
residual variable ``s = B a + N tau_null + c`` constrained by equality rows:

    x = [a (m); tau_null (n, eq11 only); s (n, eq10/11)]
    P = diag(2k 1_m, 2r 1_n, 2 1_n) (eq9: 2 1_m), q = 0, so 1/2 x^T P x is the paper's cost
    A = [[B, N, -I], [I, 0, 0], [G, 0, 0]],  l = [-c; a_lo; g_lo],  u = [-c; a_hi; g_hi]

Why lifted, not condensed (``P = B^T B + k I``): the condensed Hessian squares the condition
number and is dense, and OSQP needs several times more iterations on it; in the lifted form ``P``
is a constant diagonal, only ``A``'s values change, and its sparsity pattern (every entry of the
``B``, ``N`` and ``G`` blocks, zeros included) never does, so the problem is set up once and each
tick updates values and solves warm-started. The optional rows ``G a`` in ``[g_lo, g_hi]`` carry
the predictive joint limits (SPEC section 9).

:func:`build_qp` returns the matrices (for tests and inspection, no solver involved);
:class:`ActivationQP` owns the OSQP instance. Both fill values through one :class:`QPStructure`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import osqp
import scipy.sparse as sp

from musculo_control.errors import ConfigError
from musculo_control.model.config import spec

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The selectable formulations (paper eq. 9, 10, 11).
FORMULATIONS = ("eq9", "eq10", "eq11")
#: OSQP treats bounds at or beyond this magnitude as infinite.
_OSQP_INFTY = float(osqp.constant("OSQP_INFTY"))
_SOLVED = int(osqp.SolverStatus.OSQP_SOLVED)
_SOLVED_INACCURATE = int(osqp.SolverStatus.OSQP_SOLVED_INACCURATE)


@dataclass(frozen=True, kw_only=True)
class OSQPConfig:
    """OSQP settings (controller.yaml ``osqp``); names as in OSQP 1.x's settings."""

    eps_abs: float = spec(1e-5, gt=0.0, doc="absolute tolerance (scaled units of the QP)")
    eps_rel: float = spec(1e-5, gt=0.0, doc="relative tolerance")
    eps_prim_inf: float = spec(1e-6, gt=0.0, doc="primal infeasibility tolerance (eq. 9)")
    eps_dual_inf: float = spec(1e-6, gt=0.0, doc="dual infeasibility tolerance")
    max_iter: int = spec(4000, ge=1, doc="ADMM iteration limit")
    polishing: bool = spec(True, doc="refine the ADMM answer on the detected active set")
    polish_refine_iter: int = spec(3, ge=0, doc="iterative refinement steps of polishing")
    adaptive_rho: bool = spec(True, doc="adapt the ADMM step rho")
    rho: float = spec(0.1, gt=0.0, doc="initial ADMM step")
    sigma: float = spec(1e-6, gt=0.0, doc="ADMM regularisation")
    alpha: float = spec(1.6, gt=0.0, lt=2.0, doc="ADMM relaxation")
    scaling: int = spec(10, ge=0, doc="Ruiz equilibration iterations (0: off)")
    check_termination: int = spec(10, ge=1, doc="iterations between termination checks")
    warm_starting: bool = spec(True, doc="start from the previous tick's solution")
    time_limit_s: float | None = spec(None, gt=0.0, doc="wall-time limit of one solve [s]; null: "
                                                        "none (max_iter bounds it)")

    def settings(self) -> dict[str, Any]:
        """Keyword arguments of ``osqp.OSQP.setup``."""
        out: dict[str, Any] = {
            "eps_abs": self.eps_abs, "eps_rel": self.eps_rel,
            "eps_prim_inf": self.eps_prim_inf, "eps_dual_inf": self.eps_dual_inf,
            "max_iter": self.max_iter, "polishing": self.polishing,
            "polish_refine_iter": self.polish_refine_iter, "adaptive_rho": self.adaptive_rho,
            "rho": self.rho, "sigma": self.sigma, "alpha": self.alpha, "scaling": self.scaling,
            "check_termination": self.check_termination, "warm_starting": self.warm_starting,
            "verbose": False,
        }
        if self.time_limit_s is not None:
            out["time_limit"] = self.time_limit_s
        return out


@dataclass(frozen=True, kw_only=True)
class PredictiveLimitsConfig:
    """Predictive joint limits as QP rows (SPEC section 9); ``qp.predictive_joint_limits``."""

    enabled: bool = spec(False, doc="add q_min <= q + h qd + h^2/2 qdd <= q_max rows")
    horizon_s: float = spec(0.1, gt=0.0, doc="prediction horizon h [s]")
    margin_rad: float = spec(0.0, ge=0.0, doc="shrink each joint range by this on both sides "
                                              "[rad]")


@dataclass(frozen=True, kw_only=True)
class QPConfig:
    """The activation QP (controller.yaml ``qp``; paper eq. 9-11, Table I)."""

    formulation: str = spec("eq11", choices=FORMULATIONS,
                            doc="eq11 (nullspace, default), eq10 (soft), eq9 (hard)")
    k: float = spec(0.01, ge=0.0, doc="activation weight k of eq. 10-11 [Nm^2]")
    r: float = spec(0.1, gt=0.0, doc="nullspace torque weight r of eq. 11 [1]")
    activation_max: float | None = spec(None, gt=0.0, doc="upper bound on every activation; "
                                                          "null: none (the paper's choice)")
    coriolis: bool = spec(False, doc="add the snapshot's C(q, qd) qd to tau_ref")
    tau_null_max_nm: float | None = spec(
        None, gt=0.0, doc="bound on every |tau_null_i| of eq. 11 [Nm]; null: none (the paper's)")
    nullspace_step_rad: float | None = spec(
        None, gt=0.0, doc="velocity-aware bound of eq. 11's nullspace torque: each |tau_null_i| "
                          "<= 2 M_ii step / T^2, what would move joint i by at most this within "
                          "one snapshot period T [rad]; null: none (the paper's)")
    predictive_joint_limits: PredictiveLimitsConfig = spec(PredictiveLimitsConfig(),
                                                           doc="SPEC section 9")
    accept_inaccurate: bool = spec(False, doc="use an answer OSQP marks 'solved inaccurate'")

    def check(self, file: str, key: str) -> None:
        if self.formulation != "eq9" and self.k == 0.0 and self.activation_max is None:
            # without k the soft problem may have a ray of optimal activations
            raise ConfigError(file, f"{key}.k", "k > 0 for eq10/eq11 (or an activation_max)",
                              self.k)


class TorqueBalance(NamedTuple):
    """One tick's torque balance ``Jm^T (a f_a + f_p) + offset (+ N tau_null) = 0``.

    For the controlled muscles only; the uncontrolled muscles' torque is in ``offset``.
    """

    muscle_jacobian: FloatArray  # (m, n) dl/dq of the controlled muscles [m/rad]
    active_n: FloatArray  # (m,) f_a(l): tension per unit activation [N]
    passive_n: FloatArray  # (m,) f_p(l) [N]
    offset_nm: FloatArray  # (n,) tau_ref + Jm_fixed^T f_fixed [Nm]
    nullspace: FloatArray | None  # (n, n) N of eq. 11, else None


class LinearRows(NamedTuple):
    """Extra constraints ``lower <= G a <= upper`` on the activations."""

    matrix: FloatArray  # (p, m)
    lower: FloatArray  # (p,)
    upper: FloatArray  # (p,)


class QPMatrices(NamedTuple):
    """One QP in OSQP's form ``min 1/2 x^T P x + q^T x  s.t.  l <= A x <= u``."""

    P: sp.csc_matrix  # upper triangle
    q: FloatArray
    A: sp.csc_matrix
    l: FloatArray
    u: FloatArray
    structure: QPStructure


@dataclass(frozen=True, eq=False)  # eq on arrays is ambiguous: compare fields
class QPResult:
    """What one solve returns. When ``found`` is false the arrays are zeros and meaningless."""

    found: bool
    status: str  # OSQP's status text, or why no solve took place
    activations: FloatArray  # (m,) a >= 0 (within [lower, upper] bounds)
    tau_null: FloatArray  # (n,) [Nm]; zeros for eq9/eq10
    tension_n: FloatArray  # (m,) f = a f_a + f_p [N]
    torque_residual_nm: FloatArray  # (n,) Jm^T f + offset (+ N tau_null) [Nm]
    objective: float  # the paper's cost at the returned point
    iterations: int
    solve_time_s: float  # OSQP solve + polish
    build_time_s: float  # filling values + OSQP update (or the first set-up)


class QPStructure:
    """The fixed sparsity pattern of one formulation and the code that fills its values."""

    def __init__(self, formulation: str, n_muscles: int, n_joints: int, k: float, r: float,
                 n_limit_rows: int = 0, tau_null_max_nm: float | None = None) -> None:
        if formulation not in FORMULATIONS:
            raise ValueError(f"unknown formulation {formulation!r}; valid: {list(FORMULATIONS)}")
        m, n, p = n_muscles, n_joints, n_limit_rows
        self.formulation = formulation
        self.n_muscles, self.n_joints, self.n_limit_rows = m, n, p
        self.has_null = formulation == "eq11"
        self.has_residual = formulation != "eq9"
        n_null = n if self.has_null else 0
        n_res = n if self.has_residual else 0
        # optional box |tau_null_i| <= tau_null_max (one identity row per tau_null column)
        self.tau_null_max_nm = tau_null_max_nm if self.has_null else None
        nb = n_null if self.tau_null_max_nm is not None else 0
        self.n_variables = m + n_null + n_res
        self.n_constraints = n + m + p + nb
        self.a = slice(0, m)
        self.tau_null = slice(m, m + n_null)
        self.residual = slice(m + n_null, m + n_null + n_res)
        self.torque_rows = slice(0, n)
        self.bound_rows = slice(n, n + m)
        self.limit_rows = slice(n + m, n + m + p)
        self.null_bound_rows = slice(n + m + p, n + m + p + nb)
        self.k, self.r = float(k), float(r)
        # P: constant diagonal
        diag = np.empty(self.n_variables)
        diag[self.a] = 2.0 if formulation == "eq9" else 2.0 * self.k
        diag[self.tau_null] = 2.0 * self.r
        diag[self.residual] = 2.0
        self.P_diagonal = diag
        # A in CSC: per activation column [torque rows 0..n-1, its bound row, limit rows],
        # per tau_null column the torque rows, per residual column its torque row.
        per_a = n + 1 + p
        indptr = [0]
        indices: list[int] = []
        for j in range(m):
            indices += [*range(n), n + j, *range(n + m, n + m + p)]
            indptr.append(indptr[-1] + per_a)
        for j in range(n_null):
            indices += list(range(n)) + ([n + m + p + j] if nb else [])
            indptr.append(indptr[-1] + n + (1 if nb else 0))
        for j in range(n_res):
            indices.append(j)
            indptr.append(indptr[-1] + 1)
        self.A_indptr = np.array(indptr, dtype=np.int64)
        self.A_indices = np.array(indices, dtype=np.int64)
        self.nnz = len(indices)
        self._a_end = m * per_a
        self._per_null = n + (1 if nb else 0)
        self._null_end = self._a_end + n_null * self._per_null

    def new_buffers(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Fresh (Ax, l, u, c) arrays with the constant entries already in place."""
        Ax = np.zeros(self.nnz)
        m, n, p = self.n_muscles, self.n_joints, self.n_limit_rows
        Ax[: self._a_end].reshape(m, n + 1 + p)[:, n] = 1.0  # bound rows: identity
        Ax[self._null_end:] = -1.0  # residual columns: -I
        l, u = np.zeros(self.n_constraints), np.zeros(self.n_constraints)
        if self.tau_null_max_nm is not None:  # (inf: rows whose bounds come per tick)
            Ax[self._a_end: self._null_end].reshape(n, self._per_null)[:, n] = 1.0
            l[self.null_bound_rows] = max(-self.tau_null_max_nm, -_OSQP_INFTY)
            u[self.null_bound_rows] = min(self.tau_null_max_nm, _OSQP_INFTY)
        return Ax, l, u, np.zeros(n)

    def fill(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
             rows: LinearRows | None, Ax: FloatArray, l: FloatArray, u: FloatArray,
             c: FloatArray) -> None:
        """Write one tick's values into the buffers of :meth:`new_buffers` (no allocation of
        problem-sized arrays). ``c`` receives ``Jm^T f_p + offset``."""
        m, n, p = self.n_muscles, self.n_joints, self.n_limit_rows
        a_cols = Ax[: self._a_end].reshape(m, n + 1 + p)
        # B^T = diag(f_a) Jm: column j of B is row j of that
        np.multiply(balance.muscle_jacobian, balance.active_n[:, None], out=a_cols[:, :n])
        if p:
            if rows is None:
                raise ValueError(f"this QP was built with {p} limit rows; none given")
            a_cols[:, n + 1:] = rows.matrix.T
            l[self.limit_rows] = rows.lower
            np.minimum(rows.upper, _OSQP_INFTY, out=u[self.limit_rows])
        if self.has_null:
            if balance.nullspace is None:
                raise ValueError("eq11 needs the nullspace projector N")
            # column j of N is row j of N^T
            Ax[self._a_end: self._null_end].reshape(n, self._per_null)[:, :n] = \
                balance.nullspace.T
        np.dot(balance.passive_n, balance.muscle_jacobian, out=c)
        c += balance.offset_nm
        np.negative(c, out=l[self.torque_rows])
        u[self.torque_rows] = l[self.torque_rows]
        np.maximum(lower, -_OSQP_INFTY, out=l[self.bound_rows])
        np.minimum(upper, _OSQP_INFTY, out=u[self.bound_rows])

    def P_matrix(self) -> sp.csc_matrix:
        idx = np.arange(self.n_variables, dtype=np.int64)
        return sp.csc_matrix((self.P_diagonal.copy(), idx, np.arange(self.n_variables + 1)),
                             shape=(self.n_variables, self.n_variables))

    def A_matrix(self, Ax: FloatArray) -> sp.csc_matrix:
        # built from (data, indices, indptr): explicit zeros stay in the pattern
        return sp.csc_matrix((Ax.copy(), self.A_indices.copy(), self.A_indptr.copy()),
                             shape=(self.n_constraints, self.n_variables))


def all_finite(*arrays: FloatArray) -> bool:
    """True when no array holds a NaN or an infinity.

    One sum per array instead of an elementwise test: a NaN or an infinity makes the sum
    non-finite. A sum can also overflow from finite values beyond ~1e308, which then counts
    as non-finite too; no torque, tension or activation gets there.
    """
    total = 0.0
    for arr in arrays:
        total += float(arr.sum())
    return math.isfinite(total)


def build_qp(formulation: str, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
             k: float, r: float, rows: LinearRows | None = None) -> QPMatrices:
    """The QP of one tick as matrices, without a solver (paper eq. 9-11)."""
    m, n = balance.muscle_jacobian.shape
    structure = QPStructure(formulation, m, n, k, r, 0 if rows is None else len(rows.lower))
    Ax, l, u, c = structure.new_buffers()
    structure.fill(balance, np.asarray(lower, float), np.asarray(upper, float), rows, Ax, l, u, c)
    return QPMatrices(structure.P_matrix(), np.zeros(structure.n_variables),
                      structure.A_matrix(Ax), l, u, structure)


def paper_objective(structure: QPStructure, activations: FloatArray, tau_null: FloatArray,
                    residual: FloatArray) -> float:
    """The cost of eq. 9, 10 or 11 at a point, from its activations, tau_null and residual."""
    aa = float(activations @ activations)
    if structure.formulation == "eq9":
        return aa
    cost = structure.k * aa + float(residual @ residual)
    if structure.has_null:
        cost += structure.r * float(tau_null @ tau_null)
    return cost


class ActivationQP:
    """One OSQP instance for one formulation, set up at the first solve and then only updated.

    ``solve(balance, lower, upper, rows)`` returns a :class:`QPResult`; it never raises on bad
    numbers: non-finite inputs, an infeasible eq. 9, a solver failure or a non-finite answer all
    give ``found=False`` with the reason in ``status``, and the next solve starts cold.
    """

    def __init__(self, formulation: str, n_muscles: int, n_joints: int, *, k: float, r: float,
                 osqp_config: OSQPConfig, n_limit_rows: int = 0,
                 accept_inaccurate: bool = False, tau_null_max_nm: float | None = None) -> None:
        self.structure = QPStructure(formulation, n_muscles, n_joints, k, r, n_limit_rows,
                                     tau_null_max_nm)
        self.settings = osqp_config.settings()
        # OSQP statuses that count as a solution
        self._accepted = {_SOLVED, _SOLVED_INACCURATE} if accept_inaccurate else {_SOLVED}
        self._Ax, self._l, self._u, self._c = self.structure.new_buffers()
        self._solver: osqp.OSQP | None = None
        self._max_iter_override: int | None = None  # see limit_iterations
        s = self.structure
        self._zero_x = np.zeros(s.n_variables)
        self._zero_y = np.zeros(s.n_constraints)
        self._zero_null = np.zeros(n_joints)
        self._failed_m = np.zeros(n_muscles)
        self._failed_n = np.zeros(n_joints)
        for shared in (self._zero_null, self._failed_m, self._failed_n):
            shared.setflags(write=False)  # handed out in results: nobody may change them

    @property
    def is_set_up(self) -> bool:
        return self._solver is not None

    def reset(self) -> None:
        """Forget the warm start (the next solve starts from zero)."""
        if self._solver is not None:
            self._solver.warm_start(x=self._zero_x, y=self._zero_y)

    def limit_iterations(self, max_iter: int | None) -> None:
        """Cap OSQP's iterations at ``max_iter`` (``None``: back to the configured limit).

        For fault injection: a cap of 1 makes every solve end unsolved ("maximum iterations
        reached"), the run-time failure the controller must survive.
        """
        limit = self.settings["max_iter"] if max_iter is None else int(max_iter)
        self._max_iter_override = max_iter
        if self._solver is not None:
            self._solver.update_settings(max_iter=limit)

    def _failure(self, status: str, iterations: int = 0, solve_time_s: float = 0.0,
                 build_time_s: float = 0.0) -> QPResult:
        return QPResult(False, status, self._failed_m, self._failed_n, self._failed_m,
                        self._failed_n, 0.0, iterations, solve_time_s, build_time_s)

    def solve(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
              rows: LinearRows | None = None,
              tau_null_bound: FloatArray | None = None) -> QPResult:
        """Fill this tick's values, update OSQP (or set it up once) and solve warm-started.

        ``tau_null_bound`` (n,): this tick's bounds |tau_null_i| <= bound_i [Nm], for a QP
        built with ``tau_null_max_nm`` (which they replace; ``inf`` builds the rows for them).
        """
        t0 = time.perf_counter()
        s = self.structure
        Ax, l, u, c = self._Ax, self._l, self._u, self._c
        try:
            with np.errstate(all="ignore"):  # NaN/inf inputs are caught just below, quietly
                s.fill(balance, lower, upper, rows, Ax, l, u, c)
                if tau_null_bound is not None:
                    if s.tau_null_max_nm is None:
                        raise ValueError("this QP was built without tau_null bound rows")
                    np.minimum(tau_null_bound, _OSQP_INFTY, out=u[s.null_bound_rows])
                    np.negative(u[s.null_bound_rows], out=l[s.null_bound_rows])
        except ValueError as exc:  # wrong shapes: a programming error upstream, reported
            return self._failure(f"bad QP input: {exc}")
        finite = all_finite(Ax, l, u)
        if not finite or (l > u).any():
            return self._failure("non-finite QP input" if not finite else "empty bound interval",
                                 build_time_s=time.perf_counter() - t0)
        if np.abs(c).max() >= _OSQP_INFTY or np.abs(Ax).max() >= _OSQP_INFTY:
            # OSQP would clip such an equality bound to its infinity, find l > u, refuse the
            # update without raising and solve the previous tick's problem again
            return self._failure("QP input beyond the solver's range (|value| >= OSQP_INFTY)",
                                 build_time_s=time.perf_counter() - t0)
        if self._solver is None:
            solver = osqp.OSQP()
            solver.setup(s.P_matrix(), np.zeros(s.n_variables), s.A_matrix(Ax), l, u,
                         **self.settings)
            self._solver = solver
            if self._max_iter_override is not None:
                solver.update_settings(max_iter=self._max_iter_override)
        else:
            self._solver.update(Ax=Ax, l=l, u=u)
        build = time.perf_counter() - t0
        res = self._solver.solve(raise_error=False)
        info = res.info
        solve_time = float(info.solve_time + info.polish_time)
        iters = int(info.iter)
        if int(info.status_val) not in self._accepted:
            self.reset()  # an infeasible or unfinished iterate is no place to start from
            return self._failure(str(info.status), iters, solve_time, build)
        x = res.x
        if not all_finite(x):
            self.reset()
            return self._failure("non-finite QP solution", iters, solve_time, build)
        # the bounds hold to OSQP's tolerance; clip so a >= 0 holds exactly
        a = np.clip(x[s.a], lower, upper)
        tau_null = x[s.tau_null] if s.has_null else self._zero_null
        tension = a * balance.active_n + balance.passive_n
        residual = balance.muscle_jacobian.T @ tension + balance.offset_nm
        if s.has_null and balance.nullspace is not None:
            residual += balance.nullspace @ tau_null
        objective = paper_objective(s, a, tau_null, residual)
        return QPResult(True, str(info.status), a, tau_null, tension, residual, objective, iters,
                        solve_time, build)
