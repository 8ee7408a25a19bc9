"""The activation QP as numbers, no solver involved (paper eq. 9-11; forms and derivation in
:mod:`musculo_control.control.activation_qp` and doc/controller.md): the torque balance it is
built from, the lifted form with its fixed sparsity pattern (:class:`QPStructure`, OSQP's), the
condensed form over the activations (:class:`CondensedQP`, DAQP's), :func:`build_qp` for tests
and inspection, and the paper's objective to score any answer."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import osqp
import scipy.sparse as sp
from scipy.linalg import lapack

from musculo_control.arrays import all_finite
from musculo_control.control.qp_config import FORMULATIONS

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: OSQP treats bounds at or beyond this magnitude as infinite.
OSQP_INFTY = float(osqp.constant("OSQP_INFTY"))
#: DAQP's constraint flags: active (at the upper bound), active at the lower bound, and an
#: equality row (active and immutable).
DAQP_ACTIVE, DAQP_ACTIVE_LOWER, DAQP_EQUALITY = 1, 3, 5


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
    """One QP in OSQP's form ``min 1/2 x^T P x + q^T x`` subject to ``l <= A x <= u``."""

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
            l[self.null_bound_rows] = max(-self.tau_null_max_nm, -OSQP_INFTY)
            u[self.null_bound_rows] = min(self.tau_null_max_nm, OSQP_INFTY)
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
            np.minimum(rows.upper, OSQP_INFTY, out=u[self.limit_rows])
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
        np.maximum(lower, -OSQP_INFTY, out=l[self.bound_rows])
        np.minimum(upper, OSQP_INFTY, out=u[self.bound_rows])

    def P_matrix(self) -> sp.csc_matrix:
        """The lifted cost's constant diagonal P as a sparse matrix."""
        idx = np.arange(self.n_variables, dtype=np.int64)
        return sp.csc_matrix((self.P_diagonal.copy(), idx, np.arange(self.n_variables + 1)),
                             shape=(self.n_variables, self.n_variables))

    def A_matrix(self, Ax: FloatArray) -> sp.csc_matrix:
        # built from (data, indices, indptr): explicit zeros stay in the pattern
        """The lifted constraint matrix A with the current values (sparse)."""
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
        self.sense[nv: nv + n_eq] = DAQP_EQUALITY
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
