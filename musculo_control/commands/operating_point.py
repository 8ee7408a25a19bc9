"""``musculo operating-point``: the activation an arm needs to hold still.

SPEC section 1 asks the stand-in to sit in the paper's regime: holding the high-elbow pose of
experiment C takes ||a|| of about 10, and (SPEC section 8C) lowering the elbow with the hand in
place lowers it below half that, which is what gives the nullspace term of eq. 11 something to
find. This command measures both on the model and prints a table, and writes JSON and a plot.
Any arm gets the holds at its home and named poses; the elbow sweep and its checks need a
``poses.operating_point`` section in robot.yaml and an arm whose elbow can move with the hand
held (more joints than hand coordinates).

Holding still means ``tau_ref = g(q)`` (zero reference acceleration), so the soft QPs of the
paper become static-hold problems over activations ``a >= 0`` (15 controlled muscles):

- (paper eq. 10)  min k ||a||^2 + ||Jm^T (a o f_a + f_p) + tau_fixed + g||^2
- (paper eq. 11)  min k ||a||^2 + ||Jm^T (a o f_a + f_p) + tau_fixed + g + N tau_null||^2
                      + r ||tau_null||^2   over z = [a; tau_null], tau_null free,

where ``Jm``, ``f_a``, ``f_p`` are restricted to the controlled muscles, ``tau_fixed`` is the
torque term of the uncontrolled finger muscles at their fixed tension (``Jm_fixed^T f_fixed``,
SPEC section 2 sign convention) and ``N`` is the nullspace projector of the snapshot
(paper eq. 8). Both are bounded linear least-squares problems ``min ||A z - b||^2, z >= lb``;
:func:`static_hold_problem` builds ``(A, b, lb)`` and :func:`solve_static_hold` solves it exactly
with SciPy's BVLS, the correctness oracle of SPEC section 5 (swap in the run-time QP there).

The paper reports ||a|| of about 10 when its robot holds the high-elbow pose, falling below 5
as the elbow sinks (SPEC section 8C). :func:`elbow_sweep` measures the same curve on the model.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from scipy.optimize import lsq_linear

from musculo_control.commands.checks import writable_file
from musculo_control.control.controller import load_controller_config
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot import (
    DynamicsEstimator,
    DynamicsSnapshot,
    TaskConfig,
)
from musculo_control.model.poses import OperatingPointConfig, PoseSolver
from musculo_control.model.robot import Robot, load_robot
from musculo_control.paths import default_config_dir

FloatArray = npt.NDArray[np.float64]


class HoldProblem(NamedTuple):
    """``min ||matrix z - vector||^2  s.t.  z >= lower`` (bounded linear least squares)."""

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


class SweepPoint(NamedTuple):
    """One pose of the elbow sweep with both holds."""

    q_rad: FloatArray
    elbow_z_m: float
    eq10: StaticHold
    eq11: StaticHold


def hold_at(robot: Robot, estimator: DynamicsEstimator, q: FloatArray, k: float, r: float,
            ) -> tuple[StaticHold, StaticHold]:
    """(eq. 10 hold, eq. 11 hold) at ``q``."""
    snap = estimator.compute(q, np.zeros(robot.arm.n_joints))
    return static_hold(robot, snap, k), static_hold(robot, snap, k, r)


def elbow_sweep(robot: Robot, estimator: DynamicsEstimator, q_start: FloatArray,
                config: OperatingPointConfig) -> list[SweepPoint]:
    """Both holds at poses that lower the elbow from ``q_start`` in steps, the hand fixed.

    The sweep runs from the start's elbow height down by ``sweep_drop_m`` in ``sweep_step_m``
    steps and ends early at the first height the arm cannot reach with the hand in place.
    """
    if robot.poses is None:
        raise InputError("robot description", "a 'poses' section in robot.yaml", None)
    z0 = robot.poses.targets_at(q_start)[1]
    steps = int(np.floor(config.sweep_drop_m / config.sweep_step_m + 1e-9))
    heights = z0 - config.sweep_step_m * np.arange(steps + 1)
    out = []
    for sol in robot.poses.elbow_path(q_start, heights):
        h10, h11 = hold_at(robot, estimator, sol.q_rad, config.activation_weight,
                           config.nullspace_weight)
        out.append(SweepPoint(sol.q_rad, sol.elbow_z_m, h10, h11))
    return out


# -- report ------------------------------------------------------------------------------------
def _hold_summary(h: StaticHold) -> dict[str, Any]:
    g = float(np.linalg.norm(h.gravity_nm))
    res = float(np.linalg.norm(h.residual_nm))
    return {
        "activation_norm": h.activation_norm,
        "activation": [float(v) for v in h.activation],
        "max_tension_n": float(h.tension_n.max()),
        "residual_nm": res,
        "residual_fraction": res / g if g > 0.0 else 0.0,
        "net_torque_nm": float(np.linalg.norm(h.net_torque_nm)),
        "tau_null_nm": float(np.linalg.norm(h.tau_null_nm)),
    }


def _pose_entry(name: str, doc: str, q: FloatArray, solver: PoseSolver, h10: StaticHold,
                h11: StaticHold) -> dict[str, Any]:
    hand, ez = solver.targets_at(q)
    return {
        "name": name,
        "doc": doc,
        "q_rad": [float(v) for v in q],
        "hand_m": [float(v) for v in hand],
        "elbow_z_m": ez,
        "gravity_norm_nm": float(np.linalg.norm(h10.gravity_nm)),
        "eq10": _hold_summary(h10),
        "eq11": _hold_summary(h11),
    }


def operating_point_report(robot: Robot, task: TaskConfig,
                           weights: tuple[float, float] | None = None) -> dict[str, Any]:
    """Holds at home and every named pose, the elbow sweep and the calibration verdicts.

    ``weights`` (k, r) serve when robot.yaml has no ``poses.operating_point`` section (then
    there are holds only: no sweep, no checks).
    """
    solver = robot.poses
    if solver is None:
        raise InputError(robot.robot_file, "a 'poses' section (elbow_frame, ik_joints)", None)
    cfg = solver.config.operating_point
    if cfg is not None:
        k, r = cfg.activation_weight, cfg.nullspace_weight
    elif weights is not None:
        k, r = weights
    else:
        raise InputError(robot.robot_file, "a 'poses.operating_point' section, or weights", None)
    est = DynamicsEstimator(robot, task)
    poses = [_pose_entry("home", "home_pose_rad (SPEC q_des)", robot.home_pose_rad, solver,
                         *hold_at(robot, est, robot.home_pose_rad, k, r))]
    start = robot.home_pose_rad
    for named in solver.config.named:
        q = solver.solve_named(named.name, robot.home_pose_rad).q_rad
        if cfg is not None and named.name == cfg.pose:
            start = q
        poses.append(_pose_entry(named.name, named.doc, q, solver, *hold_at(robot, est, q, k, r)))
    base = {
        "config": str(robot.config_dir),
        "activation_weight_k": k,
        "nullspace_weight_r": r,
        "controlled_muscles": [robot.muscle_names[i] for i in robot.controlled_idx],
        "joint_names": list(robot.arm.joint_names),
        "sweep_joints": [robot.arm.joint_names[j] for j in solver.ik_idx],
        "poses": poses,
    }
    if cfg is None:
        return {**base, "sweep": None, "checks": None,
                "note": "no poses.operating_point section in robot.yaml: holds only"}
    sweep = elbow_sweep(robot, est, start, cfg)
    points = []
    for p in sweep:
        s10, s11 = _hold_summary(p.eq10), _hold_summary(p.eq11)
        points.append({
            "elbow_z_m": p.elbow_z_m,
            "drop_m": sweep[0].elbow_z_m - p.elbow_z_m,
            "q_rad": [float(v) for v in p.q_rad],
            "gravity_norm_nm": float(np.linalg.norm(p.eq10.gravity_nm)),
            "eq10_activation_norm": s10["activation_norm"],
            "eq10_residual_fraction": s10["residual_fraction"],
            "eq11_activation_norm": s11["activation_norm"],
            "eq11_residual_fraction": s11["residual_fraction"],
            "eq11_tau_null_nm": s11["tau_null_nm"],
        })
    a10 = np.array([p["eq10_activation_norm"] for p in points])
    a11 = np.array([p["eq11_activation_norm"] for p in points])
    at_pose = next(p for p in poses if p["name"] == cfg.pose)["eq10"]["activation_norm"]
    lo, hi = cfg.target_activation_norm
    tie = 1e-9 * max(1.0, float(a10.max(initial=0.0)))  # BVLS is exact far below this
    end_over_start = float(a10[-1] / a10[0]) if a10.size > 1 and a10[0] > 0 else float("nan")
    checks = {
        "pose": cfg.pose,
        "pose_activation_norm": at_pose,
        "target_band": [lo, hi],
        "pose_in_band": bool(lo <= at_pose <= hi),
        "curve_falls_monotonically": bool(a10.size > 1 and np.all(np.diff(a10) <= tie)),
        "end_over_start": end_over_start,
        "target_fall_ratio": cfg.target_fall_ratio,
        "falls_far_enough": bool(end_over_start <= cfg.target_fall_ratio),
        "eq11_at_most_eq10": bool(np.all(a11 <= a10 + tie)),
        "max_eq10_residual_fraction": float(max(
            [p["eq10_residual_fraction"] for p in points]
            + [p["eq10"]["residual_fraction"] for p in poses])),
    }
    return {
        **base,
        "sweep": {
            "from_pose": cfg.pose,
            "hand_m": poses[0]["hand_m"] if not sweep else
            [float(v) for v in solver.targets_at(sweep[0].q_rad)[0]],
            "step_m": cfg.sweep_step_m,
            "lowest_reached_elbow_z_m": sweep[-1].elbow_z_m if sweep else None,
            "points": points,
        },
        "checks": checks,
    }


def print_report(rep: dict[str, Any]) -> None:
    print(f"config: {rep['config']}")
    print(f"static hold (tau_ref = g), exact BVLS; k = {rep['activation_weight_k']}, "
          f"r = {rep['nullspace_weight_r']}")
    print(f"{'pose':<14}{'elbow h':>8}{'|g|':>7}{'|a| eq10':>10}{'res/|g|':>9}"
          f"{'|a| eq11':>10}{'|tau_n|':>9}{'max f':>8}")
    print(f"{'':<14}{'[m]':>8}{'[Nm]':>7}{'':>10}{'[%]':>9}{'':>10}{'[Nm]':>9}{'[N]':>8}")
    for p in rep["poses"]:
        e10, e11 = p["eq10"], p["eq11"]
        print(f"{p['name']:<14}{p['elbow_z_m']:>8.3f}{p['gravity_norm_nm']:>7.2f}"
              f"{e10['activation_norm']:>10.2f}{100 * e10['residual_fraction']:>9.1f}"
              f"{e11['activation_norm']:>10.2f}{e11['tau_null_nm']:>9.2f}"
              f"{e10['max_tension_n']:>8.0f}")
    print("(elbow h: height of robot.yaml poses.elbow_frame against gravity)")
    sw = rep["sweep"]
    if sw is None:
        print(f"\n{rep['note']}")
        return
    hand = " ".join(f"{v:+.3f}" for v in sw["hand_m"])
    print(f"\nelbow sweep from '{sw['from_pose']}', hand fixed at [{hand}] m")
    # the joints the sweep moves, by name (robot.yaml poses.ik_joints)
    names = rep["sweep_joints"]
    index = [rep["joint_names"].index(n) for n in names]
    widths = [max(8, len(n) + 1) for n in names]
    print(f"{'elbow h':>8}{'drop':>7}" + "".join(f"{n:>{w}}" for n, w in zip(names, widths))
          + f"{'|g|':>7}{'|a| eq10':>10}{'res/|g|':>9}{'|a| eq11':>10}{'res/|g|':>9}{'|tau_n|':>9}")
    print(f"{'[m]':>8}{'[m]':>7}" + "".join(f"{'[rad]':>{w}}" for w in widths)
          + f"{'[Nm]':>7}{'':>10}{'[%]':>9}{'':>10}{'[%]':>9}{'[Nm]':>9}")
    for p in sw["points"]:
        q = p["q_rad"]
        print(f"{p['elbow_z_m']:>8.3f}{p['drop_m']:>7.3f}"
              + "".join(f"{q[j]:>{w}.2f}" for j, w in zip(index, widths))
              + f"{p['gravity_norm_nm']:>7.2f}{p['eq10_activation_norm']:>10.2f}"
              f"{100 * p['eq10_residual_fraction']:>9.1f}{p['eq11_activation_norm']:>10.2f}"
              f"{100 * p['eq11_residual_fraction']:>9.1f}{p['eq11_tau_null_nm']:>9.2f}")
    c = rep["checks"]
    if len(sw["points"]) < 2:
        print("  (the elbow cannot move with the hand held: no sweep)")
    lo, hi = c["target_band"]
    print("\nchecks:")
    print(f"  ||a|| eq10 at '{c['pose']}' = {c['pose_activation_norm']:.2f}, "
          f"in [{lo:g}, {hi:g}]: {_yes(c['pose_in_band'])}")
    print(f"  ||a|| eq10 falls monotonically as the elbow is lowered: "
          f"{_yes(c['curve_falls_monotonically'])}")
    print(f"  ... to at most {c['target_fall_ratio']:g} of its start: "
          f"{_yes(c['falls_far_enough'])} (end / start = {c['end_over_start']:.2f})")
    print(f"  ||a|| eq11 <= eq10 along the sweep: {_yes(c['eq11_at_most_eq10'])}")
    print(f"  largest eq10 torque residual: {100 * c['max_eq10_residual_fraction']:.1f} % of |g|")


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def write_plot(rep: dict[str, Any], path: Path) -> None:
    """||a|| (eq. 10, 11) and the torque residual against elbow height, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = rep["sweep"]["points"]
    z = [p["elbow_z_m"] for p in pts]
    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    ax1.plot(z, [p["eq10_activation_norm"] for p in pts], "o-", label="eq. 10")
    ax1.plot(z, [p["eq11_activation_norm"] for p in pts], "s--", label="eq. 11")
    lo, hi = rep["checks"]["target_band"]
    if z:  # the target band applies at the sweep's start pose only
        half = 0.5 * rep["sweep"]["step_m"]
        ax1.fill_between([z[0] - half, z[0] + half], lo, hi, color="0.85",
                         label=f"target at '{rep['checks']['pose']}'")
    ax1.set_ylabel("||a|| to hold still")
    ax1.set_title(f"static hold, hand fixed, elbow lowered from '{rep['sweep']['from_pose']}' "
                  f"(k = {rep['activation_weight_k']}, r = {rep['nullspace_weight_r']})",
                  fontsize=9)
    ax1.legend(fontsize=8)
    ax1.grid(True, alpha=0.3)
    ax2.plot(z, [100 * p["eq10_residual_fraction"] for p in pts], "o-", label="eq. 10 residual")
    ax2.plot(z, [100 * p["eq11_residual_fraction"] for p in pts], "s--",
             label="eq. 11 residual")
    ax2.set_ylabel("torque residual [% of |g|]")
    ax2.set_xlabel("elbow height [m] (against gravity)")
    ax2.grid(True, alpha=0.3)
    ax3 = ax2.twinx()
    ax3.plot(z, [p["gravity_norm_nm"] for p in pts], ":", color="k", label="|g|")
    ax3.set_ylabel("|g| [Nm]")
    lines = ax2.get_legend_handles_labels()
    lines3 = ax3.get_legend_handles_labels()
    ax2.legend(lines[0] + lines3[0], lines[1] + lines3[1], fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- command -----------------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "operating-point", help="activation needed to hold the experiment poses",
        description="Static hold (tau_ref = g) with paper eq. 10 and eq. 11 solved exactly "
                    "(BVLS) at the home pose and the named poses, and along a sweep that lowers "
                    "the elbow with the hand fixed. Checks the calibration targets of "
                    "poses.operating_point in robot.yaml.")
    p.add_argument("--config", type=Path, default=None, help="config folder (default: shipped arm)")
    p.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    p.add_argument("--plot", type=Path, default=None, help="also write the curve as a PNG here")
    p.add_argument("--check", action="store_true",
                   help="exit with status 1 when a calibration check fails")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    writable_file(args.json, "--json")
    writable_file(args.plot, "--plot")
    config_dir = args.config or default_config_dir()
    robot = load_robot(config_dir)
    controller = load_controller_config(config_dir)
    rep = operating_point_report(robot, controller.task, (controller.qp.k, controller.qp.r))
    print_report(rep)
    if args.json:
        args.json.write_text(json.dumps(rep, indent=2) + "\n")
        print(f"wrote {args.json}")
    if args.plot and rep["sweep"] is not None:
        write_plot(rep, args.plot)
        print(f"wrote {args.plot}")
    c = rep["checks"]
    if c is None:
        return 1 if args.check else 0
    ok = all(c[key] for key in ("pose_in_band", "curve_falls_monotonically", "falls_far_enough",
                                "eq11_at_most_eq10"))
    return 1 if args.check and not ok else 0
