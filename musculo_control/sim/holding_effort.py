"""How much activation holding an arm still takes (its operating point): at its home and
named poses, and along a sweep that lowers the elbow with the hand in place (SPEC sections 1
and 8C: the paper's robot needs ||a|| of about 10 at the high-elbow pose, falling below half as
the elbow sinks; that fall is what gives eq. 11's nullspace term something to find).

Any arm gets the holds at its poses; the elbow sweep and its checks need a
``poses.operating_point`` section in robot.yaml and an arm whose elbow can move with the hand
held (more joints than hand coordinates). ``musculo operating-point`` prints and plots it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.control.static_hold import StaticHold, static_hold
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.model.poses import OperatingPointConfig, PoseSolver
from musculo_control.model.robot import Robot
from musculo_control.model.task import TaskConfig

FloatArray = npt.NDArray[np.float64]


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
                config: OperatingPointConfig, k: float, r: float) -> list[SweepPoint]:
    """Both holds (weights ``k``, ``r`` of eq. 10-11) at poses that lower the elbow from
    ``q_start`` in steps, the hand fixed.

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
        h10, h11 = hold_at(robot, estimator, sol.q_rad, k, r)
        out.append(SweepPoint(sol.q_rad, sol.elbow_z_m, h10, h11))
    return out


def self_motion_push(solver: PoseSolver, q: FloatArray, eq11: StaticHold,
                     step_m: float) -> float | None:
    """Eq. 11's push on the elbow along its self-motion at ``q`` [N]: positive raises it.

    With the hand held, the elbow's height parametrizes the self-motion q(h); the push is the
    generalized force ``dq/dh . (tau_muscle - g)`` of ``eq11``, the eq. 11 hold at ``q``: the
    net torque the nullspace term leaves on the arm (paper eq. 11: the gravity torque it does
    not cancel in the nullspace). ``dq/dh`` is a central difference over a tenth of ``step_m``
    (the sweep's step) on the hand-held path. None when the elbow cannot move both ways.
    """
    dz_m = 0.1 * step_m  # well inside one sweep step
    z = solver.targets_at(q)[1]
    down = solver.elbow_path(q, [z - dz_m])
    up = solver.elbow_path(q, [z + dz_m])
    if not down or not up:
        return None
    tangent = (up[0].q_rad - down[0].q_rad) / (up[0].elbow_z_m - down[0].elbow_z_m)
    return float(tangent @ eq11.net_torque_nm)


def home_rest(robot: Robot, solver: PoseSolver, estimator: DynamicsEstimator,
              config: OperatingPointConfig, home11: StaticHold, k: float,
              r: float) -> dict[str, Any] | None:
    """Is the home pose (SPEC q_des, where experiment A starts) at rest under eq. 11?

    Eq. 11 lets the arm move along its self-motion wherever leaving some gravity torque
    uncancelled there saves activation, so the home pose is at rest when eq. 11's push
    (:func:`self_motion_push`) changes sign across it: up one ``sweep_step_m`` of elbow height
    below home, down one step above (the hand held), so a rest point lies within a step and
    pulls the arm back to it. ``home11``: the eq. 11 hold at home. None when the elbow cannot
    move a step either way. ``k``, ``r``: the weights of eq. 11.
    """
    q0 = robot.home_pose_rad
    z0 = solver.targets_at(q0)[1]
    step = config.sweep_step_m
    push: dict[str, float | None] = {"home": self_motion_push(solver, q0, home11, step)}
    for side, sign in (("lower", -1.0), ("higher", 1.0)):
        path = solver.elbow_path(q0, [z0 + sign * step])
        push[side] = (self_motion_push(solver, path[0].q_rad,
                                       hold_at(robot, estimator, path[0].q_rad, k, r)[1], step)
                      if path else None)
    if push["lower"] is None or push["higher"] is None:
        return None
    return {
        "elbow_z_m": z0,
        "step_m": step,
        "push_n": push["home"],
        "push_lower_n": push["lower"],
        "push_higher_n": push["higher"],
        "at_rest": bool(push["lower"] > 0.0 > push["higher"]),
    }


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
                           weights: tuple[float, float]) -> dict[str, Any]:
    """Holds at home and every named pose, the elbow sweep and the calibration verdicts.

    ``weights``: (k, r) of paper eq. 10-11, the controller's (controller.yaml ``qp``). Without a
    ``poses.operating_point`` section in robot.yaml there are holds only: no sweep, no checks.
    """
    solver = robot.poses
    if solver is None:
        raise InputError(robot.robot_file, "a 'poses' section (elbow_frame, ik_joints)", None)
    cfg = solver.config.operating_point
    k, r = weights
    est = DynamicsEstimator(robot, task)
    home_holds = hold_at(robot, est, robot.home_pose_rad, k, r)
    poses = [_pose_entry("home", "home_pose_rad (SPEC q_des)", robot.home_pose_rad, solver,
                         *home_holds)]
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
    sweep = elbow_sweep(robot, est, start, cfg, k, r)
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
            "eq11_push_n": self_motion_push(solver, p.q_rad, p.eq11, cfg.sweep_step_m),
        })
    rest = home_rest(robot, solver, est, cfg, home_holds[1], k, r)
    home_z = poses[0]["elbow_z_m"]
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
        # experiment C: eq. 11 lowers the elbow from the pose down to home's height
        "eq11_lowers_elbow_to_home": bool(all(
            p["eq11_push_n"] is not None and p["eq11_push_n"] < 0.0 for p in points
            if p["elbow_z_m"] > home_z + cfg.sweep_step_m)),
        # experiment A: eq. 11 leaves the home pose where it is
        "home_at_rest": bool(rest is not None and rest["at_rest"]),
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
        "home_rest": rest,
    }
