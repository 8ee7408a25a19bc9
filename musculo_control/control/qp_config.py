"""Settings of the activation QP (controller.yaml ``qp``, ``osqp``, ``daqp``, ``dual_newton``,
``solver_choice``): formulation (paper eq. 9-11), weights, bounds, the solvers' options and how
``qp.solver: auto`` picks one; see :mod:`musculo_control.control.activation_qp`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The selectable formulations (paper eq. 9, 10, 11).
FORMULATIONS = ("eq9", "eq10", "eq11")
#: The solvers behind ``qp.solver``.
SOLVERS = ("daqp", "osqp", "dual_newton")
#: What ``qp.solver`` accepts: a solver, or ``auto`` (:func:`choose_solver`).
SOLVER_CHOICES = (*SOLVERS, "auto")


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
class DualNewtonConfig:
    """Newton on the dual of eq. 10/11 (controller.yaml ``dual_newton``; see
    :mod:`musculo_control.control.dual_newton`)."""

    residual_tol: float = spec(1e-10, gt=0.0, lt=1e-3,
                               doc="a step whose torque equation F(w) is below this (relative to "
                                   "max(1, |c|_inf)) ends the solve even where the step left its "
                                   "piece (a degenerate bound) [1]")
    iter_limit: int = spec(50, ge=2, doc="points evaluated per solve, the start included")
    warm_starting: bool = spec(True, doc="start from the previous tick's torque residual")


@dataclass(frozen=True, kw_only=True)
class SolverChoiceConfig:
    """How ``qp.solver: auto`` picks a solver (controller.yaml ``solver_choice``), from the
    crossovers measured by ``benchmarks/bench_solvers.py`` (doc/solvers.md)."""

    dual_newton_min_muscles: int = spec(
        40, ge=1, doc="eq. 10/11 with simple bounds only and k > 0: daqp below this many "
                      "controlled muscles, dual_newton from it on (if not fewer muscles than "
                      "joints)")
    osqp_min_muscles: int = spec(
        200, ge=1, doc="eq. 9, or predictive joint-limit rows: daqp below this many "
                       "controlled muscles, osqp from it on")


def choose_solver(formulation: str, n_muscles: int, n_joints: int, n_limit_rows: int, k: float,
                  choice: SolverChoiceConfig) -> str:
    """The solver ``qp.solver: auto`` runs for a problem of this size and structure.

    The dual Newton solver takes eq. 10/11 with simple bounds (its n-dimensional dual needs
    k > 0 and no rows) and pays off where there are at least as many muscles as joints (a step
    costs n^2 m against DAQP's m^3); DAQP factors an m x m Hessian, cheapest for few muscles;
    OSQP's cost grows with the nonzeros only, and it alone takes k = 0.
    """
    soft = formulation != "eq9"
    if soft and k <= 0.0:
        return "osqp"
    if soft and n_limit_rows == 0:
        many = n_muscles >= choice.dual_newton_min_muscles and n_muscles >= n_joints
        return "dual_newton" if many else "daqp"
    return "osqp" if n_muscles >= choice.osqp_min_muscles else "daqp"


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
    solver: str = spec("auto", choices=SOLVER_CHOICES,
                       doc="auto (default: by size and structure, see solver_choice), daqp "
                           "(dense active set), osqp (sparse ADMM) or dual_newton (Newton on "
                           "the n-dimensional dual of eq. 10/11)")
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
        if self.formulation != "eq9" and self.k == 0.0 and self.solver in ("daqp",
                                                                            "dual_newton"):
            # DAQP factors the condensed Hessian k I + B^T W B: singular without k; the dual
            # Newton solver divides by k
            raise ConfigError(file, f"{key}.k", f"k > 0 for eq10/eq11 with solver {self.solver} "
                                                "(or solver: osqp or auto)", self.k)
        if self.solver == "dual_newton" and (self.formulation == "eq9"
                                             or self.predictive_joint_limits.enabled):
            raise ConfigError(file, f"{key}.solver", "daqp, osqp or auto for eq9 or predictive "
                                                     "joint limits (dual_newton takes eq10/eq11 "
                                                     "with simple bounds only)", self.solver)
