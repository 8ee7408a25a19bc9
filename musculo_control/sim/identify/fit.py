"""The fit: bounded robust least squares over many short windows, and what it determined.

Residuals: for every window and every sample after its first, the predicted minus the recorded
joint angles over ``residuals.joint_angle_rad`` and tensions over ``residuals.tension_n``
(:mod:`.windows`). The parameters are fitted on their bound ranges mapped to [0, 1]
(``scipy.optimize.least_squares``, trust-region reflective, finite differences of
``solver.relative_step`` of the range, robust ``residuals.loss``).

Uncertainty: the covariance at the solution with the windows as independent clusters (the
"sandwich" ``B^-1 (sum_w J_w^T r_w r_w^T J_w) B^-1``, ``B = J^T J``): the residuals of one
window are correlated (a model error persists over it), so the textbook ``s^2 B^-1``, which
takes every sample as independent, would claim a precision the data do not have. ``B`` is
inverted through an SVD so that a direction the data do not see gets a huge variance instead of
a made-up one. What the model cannot represent (via-points, masses of links not fitted) biases the
values beyond these deviations; the secret-robot test (doc/identify.md) states by how much.

A parameter with a ``prior_std`` adds one residual ``(x - configured) / prior_std``: a soft pull
towards its configured value (a maximum a posteriori fit), for parameters the data may not tell
apart (a muscle that never pulls hard, or every moment arm and every mass scaled together, which
moves the arm alike). The covariance and the verdicts below are the data's alone, so a value the
prior holds is still reported as not determined.

A parameter is *determined* when its standard deviation is at most
``determined.max_relative_std`` of its value (of a tenth of its range, for a value near zero)
and its correlation with every other parameter is at most ``determined.max_correlation``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.optimize import least_squares

from musculo_control.sim.identify.config import IdentifyConfig
from musculo_control.sim.identify.recording import Recording
from musculo_control.sim.identify.windows import MockFamily, Window, predict

FloatArray = npt.NDArray[np.float64]

#: What a recording must show for a parameter the fit could not pin down (doc/identify.md).
WHAT_TO_RECORD = {
    "actuator.time_constant_s": "fast changes of the commanded tensions (steps or a move "
                                "started briskly), where the lag shows in the measured tension",
    "tendon.friction_coefficient": "slow motion under high co-contraction, in both directions: "
                                   "the capstan band grows with the tension",
    "tendon.constant_friction_n": "slow motion at low tensions, in both directions",
    "physics.tendon_frictionloss_n": "slow motion at low tensions, in both directions",
    "physics.joint_damping_nm_s_rad": "fast joint motion (the damping torque grows with the "
                                      "speed), e.g. quick moves between poses",
    "physics.joint_frictionloss_nm": "slow motion with reversals of direction (dry friction "
                                     "does not grow with the speed)",
    "link_mass_scale": "holds and moves over poses whose gravity torques differ (elbow high and "
                       "low, arm raised and hanging)",
    "moment_arm_scale": "moves and holds over many poses in which the muscles share the load "
                        "differently (a muscle's moment arm shows in the torque its own "
                        "tension adds)",
}


@dataclass(frozen=True)
class FitResult:
    """What the fit found (``x``: one number per parameter, values or factors)."""

    keys: tuple[str, ...]
    x0: FloatArray
    x: FloatArray
    std: FloatArray  # (p,) standard deviations, in x's units
    correlation: FloatArray  # (p, p)
    determined: tuple[bool, ...]
    reasons: tuple[str, ...]  # why a parameter is not determined ('' when it is)
    cost0: float  # the robust cost (data and priors) at x0 and at x
    cost: float
    rms0: float  # root mean square of the data's scaled residuals at x0 and at x [-]
    rms: float
    evaluations: int
    windows: int
    residuals: int
    wall_s: float

    def as_dict(self) -> dict[str, object]:
        return {
            "parameters": {k: {"start": float(a), "fitted": float(b), "std": float(s),
                               "determined": d, "why_not": r}
                           for k, a, b, s, d, r in zip(self.keys, self.x0, self.x, self.std,
                                                       self.determined, self.reasons)},
            "correlation": self.correlation.round(3).tolist(),
            "cost_start": self.cost0, "cost": self.cost, "rms_start": self.rms0,
            "rms": self.rms, "evaluations": self.evaluations, "windows": self.windows,
            "residuals": self.residuals, "wall_s": self.wall_s}


class Residuals:
    """The scaled residual vector of a parameter vector (see the module docstring)."""

    def __init__(self, family: MockFamily, recordings: Sequence[Recording],
                 windows: Sequence[Window], config: IdentifyConfig) -> None:
        self.family, self.recordings, self.windows = family, recordings, windows
        self.config = config
        self.calls = 0
        self.blocks: list[int] = []  # residuals per window, of the last call

    def __call__(self, x: npt.ArrayLike) -> FloatArray:
        """The data's residuals, then the priors' (module docstring)."""
        self.calls += 1
        w = self.config.windows
        res = self.config.residuals
        got = predict(self.family.build(x), self.recordings, self.windows,
                      delay_s=w.command_delay_s, rate_half_width_s=w.velocity_fit_half_width_s)
        parts = []
        for win, (q, f) in zip(self.windows, got):
            rec = self.recordings[win.rec]
            sl = slice(win.start + 1, win.stop)
            parts.append(((q - rec.q_rad[sl]) / res.joint_angle_rad).ravel())
            parts.append(((f - rec.tension_n[sl]) / res.tension_n).ravel())
        self.blocks = [len(a) + len(b) for a, b in zip(parts[::2], parts[1::2])]
        out = np.concatenate(parts)
        # a diverged simulation is a large residual, not a crash of the fit
        out = np.where(np.isfinite(out), out, 1e6)
        return np.concatenate([out, self.prior(x)])

    def prior(self, x: npt.ArrayLike) -> FloatArray:
        """``(x - configured) / prior_std`` of each parameter that has a prior."""
        has = self.family.prior_std > 0.0
        centre = self.family.configured()
        return np.asarray((np.asarray(x, dtype=float)[has] - centre[has])
                          / self.family.prior_std[has], dtype=float)


def fit(family: MockFamily, recordings: Sequence[Recording], windows: Sequence[Window],
        config: IdentifyConfig, x0: npt.ArrayLike | None = None,
        progress: Callable[[str], None] | None = None) -> FitResult:
    """Fit ``family``'s parameters to ``recordings`` over ``windows`` (module docstring)."""
    lo, hi = family.lower, family.upper
    span = hi - lo
    start = np.clip(family.configured() if x0 is None else np.asarray(x0, dtype=float), lo, hi)
    residuals = Residuals(family, recordings, windows, config)
    t0 = time.perf_counter()

    def scaled(z: FloatArray) -> FloatArray:
        r = residuals(lo + z * span)
        if progress is not None:
            elapsed = time.perf_counter() - t0
            # the values where they fit on a line; a long vector would bury the progress
            at = f"at {np.array2string(lo + z * span, precision=4)} " if len(z) <= 8 else ""
            progress(f"  evaluation {residuals.calls}: rms "
                     f"{np.sqrt(np.mean(r[:sum(residuals.blocks)] ** 2)):.3f} {at}"
                     f"({elapsed:.0f} s)")
        return r

    z0 = (start - lo) / span
    r0 = scaled(z0)
    sol = least_squares(scaled, z0, bounds=(0.0, 1.0), method="trf",
                        loss=config.residuals.loss, f_scale=config.residuals.loss_scale,
                        diff_step=config.solver.relative_step,
                        max_nfev=config.solver.max_evaluations,
                        ftol=config.solver.tolerance, xtol=config.solver.tolerance)
    x = lo + sol.x * span
    n = sum(residuals.blocks)  # the data's rows; the priors' follow
    std_z, corr = covariance(sol.jac[:n], sol.fun[:n], residuals.blocks)
    std = std_z * span
    determined, reasons = judge(family.keys, x, std, corr, span, config)
    r = sol.fun
    return FitResult(family.keys, start, x, std, corr, determined, reasons,
                     float(0.5 * np.sum(_rho(r0, config))), float(sol.cost),
                     float(np.sqrt(np.mean(r0[:n] ** 2))), float(np.sqrt(np.mean(r[:n] ** 2))),
                     residuals.calls, len(windows), n, time.perf_counter() - t0)


def _rho(r: FloatArray, config: IdentifyConfig) -> FloatArray:
    """The robust loss of ``r`` as least_squares computes its cost."""
    c = config.residuals.loss_scale
    z = (r / c) ** 2
    loss = config.residuals.loss
    if loss == "linear":
        rho = z
    elif loss == "soft_l1":
        rho = 2.0 * (np.sqrt(1.0 + z) - 1.0)
    elif loss == "huber":
        rho = np.where(z <= 1.0, z, 2.0 * np.sqrt(z) - 1.0)
    else:
        rho = np.log1p(z)
    return np.asarray(c ** 2 * rho, dtype=float)


def covariance(jac: FloatArray, residuals: FloatArray,
               blocks: Sequence[int] | None = None) -> tuple[FloatArray, FloatArray]:
    """(standard deviations (p,), correlations (p, p)) of the parameters: with ``blocks``
    (the residual count of each independent cluster, in order) the cluster sandwich of the
    module docstring, without it ``s^2 (J^T J)^-1``; a direction with a singular value below
    1e-9 of the largest gets a variance of 1e18 (undetermined)."""
    jac = np.asarray(jac, dtype=float)
    r = np.asarray(residuals, dtype=float)
    n, p = jac.shape
    _, sv, vt = np.linalg.svd(jac, full_matrices=False)
    floor = max(float(sv.max()) if sv.size else 0.0, 1e-300) * 1e-9
    inv = np.full(sv.shape, 1e18)
    np.divide(1.0, sv ** 2, out=inv, where=sv > floor)
    b_inv = (vt.T * inv) @ vt
    if blocks is None:
        cov = float(r @ r) / max(n - p, 1) * b_inv
    else:
        if sum(blocks) != n:
            raise ValueError(f"covariance: blocks sum to {sum(blocks)}, residuals {n}")
        edges = np.cumsum([0, *blocks])
        scores = np.array([jac[a:b].T @ r[a:b] for a, b in zip(edges[:-1], edges[1:])])
        g = len(blocks)
        meat = scores.T @ scores * (g / max(g - 1, 1))  # small-sample correction
        cov = b_inv @ meat @ b_inv
        null = vt[sv <= floor]
        if len(null):  # an unseen direction stays unseen
            cov += 1e18 * null.T @ null
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    corr = cov / np.maximum(np.outer(std, std), 1e-300)
    np.fill_diagonal(corr, 1.0)
    return std, np.clip(corr, -1.0, 1.0)


def judge(keys: Sequence[str], x: FloatArray, std: FloatArray, corr: FloatArray,
          span: FloatArray, config: IdentifyConfig) -> tuple[tuple[bool, ...], tuple[str, ...]]:
    """Which parameters the data determined, and why not the others (module docstring)."""
    d = config.determined
    out, why = [], []
    for i in range(len(keys)):
        ref = max(abs(float(x[i])), 0.1 * float(span[i]))
        rel = float(std[i]) / ref
        reasons = []
        if not rel <= d.max_relative_std:
            reasons.append(f"too little excitation: std {std[i]:.3g} is {100 * rel:.0f} % of "
                           f"{ref:.3g} (at most {100 * d.max_relative_std:.0f} %)")
        others = [(abs(float(corr[i, j])), keys[j]) for j in range(len(keys)) if j != i]
        traded = [f"{k} ({c:.2f})" for c, k in sorted(others, reverse=True)
                  if c > d.max_correlation]
        if traded:
            reasons.append("trades off with " + ", ".join(traded))
        out.append(not reasons)
        why.append("; ".join(reasons))
    return tuple(out), tuple(why)
