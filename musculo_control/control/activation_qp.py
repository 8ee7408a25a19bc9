"""The activation QP (paper eq. 9-11, SPEC section 5), set up once and solved by DAQP, OSQP or
Newton on its dual.

The torque balance of the controlled muscles is, with ``B = Jm^T diag(f_a)`` (n x m) and
``c = Jm^T f_p + offset`` (n,), where ``offset`` holds ``tau_ref`` and the known torque of the
uncontrolled muscles (``Jm_fixed^T f_fixed``):

- eq9  (hard):  ``min ||a||^2``  s.t. ``B a + c = 0``, ``a >= 0``
- eq10 (soft):  ``min k ||a||^2 + ||B a + c||^2``, ``a >= 0``
- eq11 (soft, nullspace): ``min k ||a||^2 + ||B a + c + N tau_null||^2 + r ||tau_null||^2``

Three solvers, chosen by ``qp.solver`` (derivations in doc/controller.md; ``auto`` picks one by
size and structure, :func:`~musculo_control.control.qp_config.choose_solver`):

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
  one for arms with hundreds of muscles and eq. 9 or limit rows.
- ``dual_newton``, eq. 10/11 with simple bounds only: Newton's method on the dual, whose
  variable is the n-dimensional torque residual (:mod:`~musculo_control.control.dual_newton`);
  a tick costs O(n^2 m) and ends on the exact solution, so it is the one for arms with many more
  muscles than joints.

The optional rows ``G a`` in ``[g_lo, g_hi]`` carry the predictive joint limits (SPEC section 9).
Per-tick bounds ``lower <= a <= upper`` are arguments of every solve.

The problem is built apart from its solving: :mod:`~musculo_control.control.qp_problem` fills
the values of one :class:`QPStructure` (lifted) or :class:`CondensedQP` (condensed), and
``build_qp`` there returns the lifted matrices for tests and inspection, no solver involved;
:mod:`~musculo_control.control.qp_backends` holds the two solvers, :mod:`~musculo_control.control.
qp_config` their settings; :class:`ActivationQP` here owns one solver and answers each tick.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from musculo_control.arrays import all_finite
from musculo_control.control.qp_backends import DAQPBackend, DualNewtonBackend, OSQPBackend
from musculo_control.control.qp_config import (
    SOLVER_CHOICES,
    DAQPConfig,
    DualNewtonConfig,
    OSQPConfig,
    SolverChoiceConfig,
    choose_solver,
)
from musculo_control.control.qp_problem import (
    CondensedQP,
    LinearRows,
    QPResult,
    QPStructure,
    TorqueBalance,
    paper_objective,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class ActivationQP:
    """One solver instance for one formulation, set up at the first solve and then only updated.

    ``solve(balance, lower, upper, rows)`` returns a :class:`QPResult`; it never raises on bad
    numbers: non-finite inputs, an infeasible eq. 9, a solver failure or a non-finite answer all
    give ``found=False`` with the reason in ``status``, and the next solve starts cold. The
    bounds ``lower <= a <= upper`` may change from tick to tick. ``solver="auto"`` picks the
    solver once, here, by ``solver_choice``; :attr:`solver` names the one picked.
    """

    def __init__(self, formulation: str, n_muscles: int, n_joints: int, *, k: float, r: float,
                 osqp_config: OSQPConfig | None = None, solver: str = "auto",
                 daqp_config: DAQPConfig | None = None, n_limit_rows: int = 0,
                 accept_inaccurate: bool = False, tau_null_max_nm: float | None = None,
                 dual_newton_config: DualNewtonConfig | None = None,
                 solver_choice: SolverChoiceConfig | None = None) -> None:
        if solver not in SOLVER_CHOICES:
            raise ValueError(f"unknown solver {solver!r}; valid: {list(SOLVER_CHOICES)}")
        if solver == "auto":
            solver = choose_solver(formulation, n_muscles, n_joints, n_limit_rows, k,
                                   solver_choice or SolverChoiceConfig())
        if solver in ("daqp", "dual_newton") and formulation != "eq9" and k <= 0.0:
            raise ValueError(f"solver {solver} needs k > 0 for eq10/eq11 (a positive definite "
                             "Hessian); use solver osqp")
        self.solver = solver
        self.structure = QPStructure(formulation, n_muscles, n_joints, k, r, n_limit_rows,
                                     tau_null_max_nm)
        self._backend: OSQPBackend | DAQPBackend | DualNewtonBackend
        #: (tau_null, residual) from B a + c where the solver eliminated tau_null (eq. 11)
        self._residual_terms: Callable[[FloatArray], tuple[FloatArray, FloatArray]] = \
            self._tau_null_missing
        if solver == "osqp":
            self._backend = OSQPBackend(self.structure, osqp_config or OSQPConfig(),
                                         accept_inaccurate)
        elif solver == "dual_newton":
            self._backend = DualNewtonBackend(self.structure,
                                              dual_newton_config or DualNewtonConfig())
        else:
            condensed = CondensedQP(formulation, n_muscles, n_joints, k, r, n_limit_rows,
                                    tau_null_max_nm)
            self._backend = DAQPBackend(condensed, daqp_config or DAQPConfig())
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
        return self._backend.is_set_up

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
