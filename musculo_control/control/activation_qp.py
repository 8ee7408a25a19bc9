"""The activation QP (paper eq. 9-11, SPEC section 5), set up once and solved by DAQP or OSQP.

The torque balance of the controlled muscles is, with ``B = Jm^T diag(f_a)`` (n x m) and
``c = Jm^T f_p + offset`` (n,), where ``offset`` holds ``tau_ref`` and the known torque of the
uncontrolled muscles (``Jm_fixed^T f_fixed``):

- eq9  (hard):  ``min ||a||^2``  s.t. ``B a + c = 0``, ``a >= 0``
- eq10 (soft):  ``min k ||a||^2 + ||B a + c||^2``, ``a >= 0``
- eq11 (soft, nullspace): ``min k ||a||^2 + ||B a + c + N tau_null||^2 + r ||tau_null||^2``

Two solvers, chosen by ``qp.solver`` (derivations in doc/controller.md):

- ``daqp`` (default), a dual active-set solver for dense problems: the problem *condensed* to
  the activations. In eq. 11 ``tau_null`` has a closed form given ``a`` (a ridge regression), so
  it is eliminated: ``min k ||a||^2 + (B a + c)^T W (B a + c)`` with
  ``W = I - N (N^T N + r I)^-1 N^T``, computed once per snapshot. With a box on ``tau_null`` it
  stays a variable instead (``z = [a; tau_null]``). The Hessian ``k I + B^T W B`` is m x m and
  positive definite for k > 0; the solver warm-starts from the previous tick's active set and
  lands on the exact active-set solution (no tolerance on optimality beyond rounding).
- ``osqp``, an ADMM solver for sparse problems: the problem in *lifted* form with a residual
  variable ``s = B a + N tau_null + c`` constrained by equality rows:

    x = [a (m); tau_null (n, eq11 only); s (n, eq10/11)]
    P = diag(2k 1_m, 2r 1_n, 2 1_n) (eq9: 2 1_m), q = 0, so 1/2 x^T P x is the paper's cost
    A = [[B, N, -I], [I, 0, 0], [G, 0, 0]],  l = [-c; a_lo; g_lo],  u = [-c; a_hi; g_hi]

  ``P`` is a constant diagonal, only ``A``'s values change, and its sparsity pattern (every
  entry of the ``B``, ``N`` and ``G`` blocks, zeros included) never does, so the problem is set
  up once and each tick updates values and solves warm-started; polishing recovers the exact
  active-set solution. Its cost grows with the number of nonzeros, not with m^3, so it is the
  one for arms with hundreds of muscles.

The optional rows ``G a`` in ``[g_lo, g_hi]`` carry the predictive joint limits (SPEC section 9).
Per-tick bounds ``lower <= a <= upper`` are arguments of every solve.

:func:`build_qp` returns the lifted matrices (for tests and inspection, no solver involved);
:class:`ActivationQP` owns the solver. Both fill values through one :class:`QPStructure`
(lifted) or :class:`CondensedQP` (condensed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import osqp
import scipy.sparse as sp
from scipy.linalg import lapack

try:  # a required dependency; the import is guarded so that a broken install says what to do
    import daqp
except ImportError:  # pragma: no cover - exercised only on an incomplete install
    daqp = None

from musculo_control.arrays import all_finite
from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The selectable formulations (paper eq. 9, 10, 11).
FORMULATIONS = ("eq9", "eq10", "eq11")
#: The selectable solvers (``qp.solver``); the first is the default.
SOLVERS = ("daqp", "osqp")
#: OSQP treats bounds at or beyond this magnitude as infinite.
_OSQP_INFTY = float(osqp.constant("OSQP_INFTY"))
_SOLVED = int(osqp.SolverStatus.OSQP_SOLVED)
_SOLVED_INACCURATE = int(osqp.SolverStatus.OSQP_SOLVED_INACCURATE)
#: DAQP treats bounds at or beyond this magnitude as infinite (its DAQP_INF).
_DAQP_INF = 1e30
#: DAQP's constraint flags: active (at the upper bound), active at the lower bound, and an
#: equality row (active and immutable).
_DAQP_ACTIVE, _DAQP_ACTIVE_LOWER, _DAQP_EQUALITY = 1, 3, 5
#: DAQP's exit flags, worded like OSQP's statuses so that one vocabulary reaches the reports.
_DAQP_STATUS = {1: "solved", 2: "solved (soft constraints relaxed)", -1: "primal infeasible",
                -2: "cycling detected", -3: "unbounded", -4: "maximum iterations reached",
                -5: "non-convex problem (Hessian not positive definite)",
                -6: "overdetermined initial active set", -7: "run time limit reached",
                -8: "unsupported problem"}


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
class DAQPConfig:
    """DAQP settings (controller.yaml ``daqp``); names as in DAQP's settings."""

    primal_tol: float = spec(1e-6, gt=0.0, doc="primal feasibility tolerance (constraint "
                                               "violation in the problem's units)")
    dual_tol: float = spec(1e-12, gt=0.0, doc="dual feasibility tolerance (sign of the "
                                              "multipliers)")
    iter_limit: int = spec(1000, ge=2, doc="active-set iteration limit")
    warm_starting: bool = spec(True, doc="start from the previous tick's active set")

    def settings(self) -> dict[str, Any]:
        """The ``daqp.Model.settings`` entries this config sets."""
        return {"primal_tol": self.primal_tol, "dual_tol": self.dual_tol,
                "iter_limit": self.iter_limit}


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
    solver: str = spec(SOLVERS[0], choices=SOLVERS,
                       doc="daqp (dense active set, default: fastest up to ~150 muscles) or "
                           "osqp (sparse ADMM: larger arms)")
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
    nullspace_step_within_m: float | None = spec(
        None, gt=0.0, doc="apply nullspace_step_rad only while the hand is this close to its "
                          "goal [m]; farther (a recovery, a long move) eq. 11's tau_null is "
                          "free; null: always")
    predictive_joint_limits: PredictiveLimitsConfig = spec(PredictiveLimitsConfig(),
                                                           doc="SPEC section 9")
    accept_inaccurate: bool = spec(False, doc="use an answer OSQP marks 'solved inaccurate'")

    def check(self, file: str, key: str) -> None:
        if self.formulation != "eq9" and self.k == 0.0 and self.activation_max is None:
            # without k the soft problem may have a ray of optimal activations
            raise ConfigError(file, f"{key}.k", "k > 0 for eq10/eq11 (or an activation_max)",
                              self.k)
        if self.formulation != "eq9" and self.k == 0.0 and self.solver == "daqp":
            # DAQP factors the condensed Hessian k I + B^T W B: singular without k
            raise ConfigError(file, f"{key}.k", "k > 0 for eq10/eq11 with solver daqp (or "
                                                "solver: osqp)", self.k)


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


class QPResult(NamedTuple):
    """What one solve returns. When ``found`` is false the arrays are zeros and meaningless.

    A NamedTuple rather than a frozen dataclass: built at every tick, and a frozen dataclass
    costs several microseconds to construct. Compare results field by field (arrays).
    """

    found: bool
    status: str  # the solver's status text, or why no solve took place
    activations: FloatArray  # (m,) a >= 0 (within [lower, upper] bounds)
    tau_null: FloatArray  # (n,) [Nm]; zeros for eq9/eq10
    tension_n: FloatArray  # (m,) f = a f_a + f_p [N]
    torque_residual_nm: FloatArray  # (n,) Jm^T f + offset (+ N tau_null) [Nm]
    objective: float  # the paper's cost at the returned point
    iterations: int
    solve_time_s: float  # the solver's own time (OSQP: solve + polish)
    build_time_s: float  # filling values + solver update (or the first set-up)


class _Problem:
    """What both forms of the problem share: formulation, sizes and weights."""

    def __init__(self, formulation: str, n_muscles: int, n_joints: int, k: float, r: float,
                 n_limit_rows: int) -> None:
        if formulation not in FORMULATIONS:
            raise ValueError(f"unknown formulation {formulation!r}; valid: {list(FORMULATIONS)}")
        self.formulation = formulation
        self.n_muscles, self.n_joints, self.n_limit_rows = n_muscles, n_joints, n_limit_rows
        self.k, self.r = float(k), float(r)
        self.has_null = formulation == "eq11"


class QPStructure(_Problem):
    """The fixed sparsity pattern of one formulation and the code that fills its values."""

    def __init__(self, formulation: str, n_muscles: int, n_joints: int, k: float, r: float,
                 n_limit_rows: int = 0, tau_null_max_nm: float | None = None) -> None:
        super().__init__(formulation, n_muscles, n_joints, k, r, n_limit_rows)
        m, n, p = n_muscles, n_joints, n_limit_rows
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
        if self.tau_null_max_nm is not None:
            Ax[self._a_end: self._null_end].reshape(n, self._per_null)[:, n] = 1.0
            # (inf: rows whose bounds come with each tick, see ActivationQP.solve)
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
    aa = float(activations.dot(activations))
    if structure.formulation == "eq9":
        return aa
    cost = structure.k * aa + float(residual.dot(residual))
    if structure.has_null:
        cost += structure.r * float(tau_null.dot(tau_null))
    return cost


class CondensedQP(_Problem):
    """The problem condensed to the activations, for a dense solver (paper eq. 9-11).

    ``min 1/2 z^T H z + f^T z`` s.t. ``lower <= z <= upper`` (simple bounds, the first
    ``n_variables`` entries of the bound vectors) and ``lower <= A z <= upper`` (the rest: eq. 9's
    equality rows ``B a = -c``, then the limit rows ``G a``). ``z = a``, or ``[a; tau_null]`` when
    tau_null has a box. The cost is half the paper's, up to a constant (``1/2 c^T W c``), so it
    has the same minimiser; the paper's cost is evaluated at the answer by the caller.

    With ``B = Jm^T diag(f_a)``: ``H = diag(f_a) (Jm W Jm^T) diag(f_a) + k I`` and
    ``f = diag(f_a) (Jm W) c``. ``Jm W Jm^T`` and ``Jm W`` depend on the snapshot only (Jm, N),
    so they are computed once per snapshot and a tick costs O(m^2) (eq. 10: W = I).

    Buffers are allocated once; :meth:`fill` writes one tick's values without allocating.
    """

    def __init__(self, formulation: str, n_muscles: int, n_joints: int, k: float, r: float,
                 n_limit_rows: int = 0, tau_null_max_nm: float | None = None) -> None:
        super().__init__(formulation, n_muscles, n_joints, k, r, n_limit_rows)
        m, n, p = n_muscles, n_joints, n_limit_rows
        # with a box on tau_null it stays a variable; without, it is eliminated (closed form)
        box = tau_null_max_nm if self.has_null else None
        self.keeps_null = box is not None
        self.eliminates_null = self.has_null and box is None
        nv = m + (n if self.keeps_null else 0)
        n_eq = n if formulation == "eq9" else 0
        self.n_variables, self.n_equalities = nv, n_eq
        #: the bounds are the activations' own (no rows, no tau_null): the caller's arrays
        #: serve as the solver's bound vectors as they are
        self.bounds_are_activation_bounds = nv == m and n_eq + p == 0
        self.H = np.zeros((nv, nv))
        self.f = np.zeros(nv)
        self.A = np.zeros((n_eq + p, nv))
        self.lower = np.zeros(nv + n_eq + p)
        self.upper = np.zeros(nv + n_eq + p)
        self.sense = np.zeros(nv + n_eq + p, dtype=np.intc)
        self.sense[nv: nv + n_eq] = _DAQP_EQUALITY
        self.c = np.zeros(n)  # Jm^T f_p + offset
        self._H_diagonal = self.H.reshape(-1)[:: nv + 1]  # a view: adds k (and r) in place
        self._diagonal = np.r_[np.full(m, self.k), np.full(nv - m, self.r)]
        self._identity_n = np.eye(n)
        self._r_identity = self.r * self._identity_n
        if formulation == "eq9":
            self.H[...] = np.eye(nv)  # ||a||^2, constant; the torque balance is in A
            self.B = self.A[:n]  # B is written straight into the equality rows
        elif box is not None:
            self.R = np.zeros((n, nv))  # [B, N]
            self.B = self.R[:, :m]
            self.lower[m:nv] = -box
            self.upper[m:nv] = box
        else:
            self.gram = np.zeros((m, m))  # Jm W Jm^T
            self.jm_w = np.zeros((m, n))  # Jm W
            self.W = np.eye(n)  # eq11: I - N (N^T N + r I)^-1 N^T; eq10: I
            self.neg_T = np.zeros((n, n))  # -(N^T N + r I)^-1 N^T: tau_null = neg_T (B a + c)
            self._snapshot_key = b""  # the bytes of the Jm (and N) they belong to

    def _set_snapshot(self, muscle_jacobian: FloatArray, nullspace: FloatArray | None) -> None:
        """Jm W Jm^T, Jm W (and W, T for eq. 11) for a new snapshot, not at every tick."""
        # comparing bytes is the cheapest exact test that Jm and N are the ones of the cache
        key = muscle_jacobian.tobytes() + (b"" if nullspace is None else nullspace.tobytes())
        if key == self._snapshot_key:
            return
        n = self.n_joints
        if nullspace is not None:
            if nullspace.shape != (n, n):
                raise ValueError(f"nullspace projector of shape {nullspace.shape}, expected "
                                 f"{(n, n)}")
            if not all_finite(nullspace):
                raise ValueError("non-finite nullspace projector N")
            gram = nullspace.T.dot(nullspace)
            gram += self._r_identity
            # gram is symmetric positive definite (r > 0): LAPACK's Cholesky solve directly,
            # without numpy.linalg's checks (several times the work of a 7 x 7 solve)
            _, solution, info = lapack.dposv(gram, nullspace.T)
            if info != 0:
                raise ValueError(f"N^T N + r I not positive definite (LAPACK info {info})")
            np.negative(solution, out=self.neg_T)
            w = self._identity_n + nullspace @ self.neg_T
            np.add(w, w.T, out=self.W)
            self.W *= 0.5  # symmetric to the last bit
        np.dot(muscle_jacobian, self.W, out=self.jm_w)
        np.dot(self.jm_w, muscle_jacobian.T, out=self.gram)
        self._snapshot_key = key

    def fill(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
             rows: LinearRows | None) -> None:
        """Write one tick's values into the buffers (paper eq. 9-11, condensed)."""
        m, p = self.n_muscles, self.n_limit_rows
        nv, n_eq = self.n_variables, self.n_equalities
        jm, active = balance.muscle_jacobian, balance.active_n
        H, f, c = self.H, self.f, self.c
        np.dot(balance.passive_n, jm, out=c)
        c += balance.offset_nm
        if self.formulation == "eq9":
            np.multiply(jm.T, active, out=self.B)
            np.negative(c, out=self.lower[nv: nv + n_eq])
            self.upper[nv: nv + n_eq] = self.lower[nv: nv + n_eq]
        elif self.keeps_null:
            if balance.nullspace is None:
                raise ValueError("eq11 needs the nullspace projector N")
            np.multiply(jm.T, active, out=self.B)
            self.R[:, m:] = balance.nullspace
            np.dot(self.R.T, self.R, out=H)
            self._H_diagonal += self._diagonal
            np.dot(c, self.R, out=f)
        else:
            if self.has_null and balance.nullspace is None:
                raise ValueError("eq11 needs the nullspace projector N")
            self._set_snapshot(jm, balance.nullspace if self.has_null else None)
            np.multiply(active[:, None], active, out=H)  # f_a f_a^T
            H *= self.gram
            self._H_diagonal += self._diagonal
            np.dot(self.jm_w, c, out=f)
            f *= active
        if not self.bounds_are_activation_bounds:
            self.lower[:m] = lower
            self.upper[:m] = upper
        if p:
            if rows is None:
                raise ValueError(f"this QP was built with {p} limit rows; none given")
            self.A[n_eq:, :m] = rows.matrix
            self.lower[nv + n_eq:] = rows.lower
            self.upper[nv + n_eq:] = rows.upper

    def residual_terms(self, balance_residual: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(tau_null, residual) of eq. 11 from v = B a + c, tau_null minimising over it given a.

        tau_null = -(N^T N + r I)^-1 N^T v, and then v + N tau_null = W v.
        """
        return self.neg_T.dot(balance_residual), self.W.dot(balance_residual)


class _OSQPBackend:
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

    def reset(self) -> None:
        if self.solver is not None:
            self.solver.warm_start(x=self._zero_x, y=self._zero_y)

    def limit_iterations(self, max_iter: int | None) -> None:
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
            np.minimum(null_bound, _OSQP_INFTY, out=u[s.null_bound_rows])
            np.negative(u[s.null_bound_rows], out=l[s.null_bound_rows])
        if not all_finite(Ax, l, u):
            return "non-finite QP input"
        if (l > u).any():
            return "empty bound interval"
        if np.abs(self.c).max() >= _OSQP_INFTY or np.abs(Ax).max() >= _OSQP_INFTY:
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


class _DAQPBackend:
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

    def reset(self) -> None:
        self.model = None  # the next solve sets up afresh: a cold start
        self._lam = None

    def limit_iterations(self, max_iter: int | None) -> None:
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
        sense[free & (lam > 0.0) & (bupper < np.inf)] = _DAQP_ACTIVE
        sense[free & (lam < 0.0) & (blower > -np.inf)] = _DAQP_ACTIVE_LOWER
        return sense

    def run(self) -> tuple[str, bool, FloatArray, FloatArray | None, int, float]:
        x, _, flag, info = self.model.solve()
        pr = self.problem
        m = pr.n_muscles
        found = flag == 1
        self._lam = info["lam"] if found else None
        return (_DAQP_STATUS.get(flag, f"DAQP exit flag {flag}"), found, x[:m],
                x[m:] if pr.keeps_null else None, int(info["iterations"]),
                float(info["solve_time"]))


class ActivationQP:
    """One solver instance for one formulation, set up at the first solve and then only updated.

    ``solve(balance, lower, upper, rows)`` returns a :class:`QPResult`; it never raises on bad
    numbers: non-finite inputs, an infeasible eq. 9, a solver failure or a non-finite answer all
    give ``found=False`` with the reason in ``status``, and the next solve starts cold. The
    bounds ``lower <= a <= upper`` may change from tick to tick.
    """

    def __init__(self, formulation: str, n_muscles: int, n_joints: int, *, k: float, r: float,
                 osqp_config: OSQPConfig | None = None, solver: str = SOLVERS[0],
                 daqp_config: DAQPConfig | None = None, n_limit_rows: int = 0,
                 accept_inaccurate: bool = False, tau_null_max_nm: float | None = None) -> None:
        if solver not in SOLVERS:
            raise ValueError(f"unknown solver {solver!r}; valid: {list(SOLVERS)}")
        if solver == "daqp" and formulation != "eq9" and k <= 0.0:
            raise ValueError("solver daqp needs k > 0 for eq10/eq11 (a positive definite "
                             "Hessian); use solver osqp")
        self.solver = solver
        self.structure = QPStructure(formulation, n_muscles, n_joints, k, r, n_limit_rows,
                                     tau_null_max_nm)
        self._backend: _OSQPBackend | _DAQPBackend
        #: (tau_null, residual) from B a + c where the solver eliminated tau_null (eq. 11)
        self._residual_terms: Callable[[FloatArray], tuple[FloatArray, FloatArray]] = \
            self._tau_null_missing
        if solver == "osqp":
            self._backend = _OSQPBackend(self.structure, osqp_config or OSQPConfig(),
                                         accept_inaccurate)
        else:
            condensed = CondensedQP(formulation, n_muscles, n_joints, k, r, n_limit_rows,
                                    tau_null_max_nm)
            self._backend = _DAQPBackend(condensed, daqp_config or DAQPConfig())
            if condensed.eliminates_null:
                self._residual_terms = condensed.residual_terms
        self._zero_null = np.zeros(n_joints)
        self._failed_m = np.zeros(n_muscles)
        self._failed_n = np.zeros(n_joints)
        for shared in (self._zero_null, self._failed_m, self._failed_n):
            shared.setflags(write=False)  # handed out in results: nobody may change them

    @staticmethod
    def _tau_null_missing(balance_residual: FloatArray) -> tuple[FloatArray, FloatArray]:
        raise RuntimeError("the solver returned no tau_null and has no closed form for it")

    @property
    def is_set_up(self) -> bool:
        backend = self._backend
        return (backend.solver if isinstance(backend, _OSQPBackend) else backend.model) \
            is not None

    def reset(self) -> None:
        """Forget the warm start (the next solve starts cold)."""
        self._backend.reset()

    def limit_iterations(self, max_iter: int | None) -> None:
        """Cap the solver's iterations at ``max_iter`` (``None``: back to the configured limit).

        For fault injection: a cap of 1 makes every solve end unsolved ("maximum iterations
        reached"), the run-time failure the controller must survive.
        """
        self._backend.limit_iterations(max_iter)

    def _failure(self, status: str, iterations: int = 0, solve_time_s: float = 0.0,
                 build_time_s: float = 0.0) -> QPResult:
        return QPResult(False, status, self._failed_m, self._failed_n, self._failed_m,
                        self._failed_n, 0.0, iterations, solve_time_s, build_time_s)

    def solve(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
              rows: LinearRows | None = None,
              tau_null_bound: FloatArray | None = None) -> QPResult:
        """Fill this tick's values, update the solver (or set it up once) and solve.

        ``tau_null_bound`` (n,): this tick's bounds |tau_null_i| <= bound_i [Nm], for a QP
        built with ``tau_null_max_nm`` (which they replace; ``inf`` builds the box for them).
        """
        t0 = time.perf_counter()
        backend = self._backend
        try:
            with np.errstate(all="ignore"):  # NaN/inf inputs are caught by load, quietly
                if tau_null_bound is not None and self.structure.tau_null_max_nm is None:
                    raise ValueError("this QP was built without tau_null bound rows")
                refused = backend.load(balance, lower, upper, rows, tau_null_bound)
        except ValueError as exc:  # wrong shapes: a programming error upstream, reported
            return self._failure(f"bad QP input: {exc}")
        build = time.perf_counter() - t0
        if refused:
            return self._failure(refused, build_time_s=build)
        status, found, a_raw, tau_null, iters, solve_time = backend.run()
        if not found:
            backend.reset()  # an infeasible or unfinished iterate is no place to start from
            return self._failure(status, iters, solve_time, build)
        if not all_finite(a_raw) or (tau_null is not None and not all_finite(tau_null)):
            backend.reset()
            return self._failure("non-finite QP solution", iters, solve_time, build)
        # the bounds hold to the solver's tolerance; clip so that a >= 0 holds exactly
        a = np.maximum(a_raw, lower, out=a_raw)  # a_raw is the solver's copy: ours to change
        np.minimum(a, upper, out=a)
        tension = a * balance.active_n
        tension += balance.passive_n
        residual = balance.muscle_jacobian.T.dot(tension)  # B a + c
        residual += balance.offset_nm
        s = self.structure
        if not s.has_null or balance.nullspace is None:
            tau_null = self._zero_null
        elif tau_null is not None:
            residual += balance.nullspace.dot(tau_null)
        else:
            tau_null, residual = self._residual_terms(residual)
        objective = paper_objective(s, a, tau_null, residual)
        return QPResult(True, status, a, tau_null, tension, residual, objective, iters,
                        solve_time, build)
