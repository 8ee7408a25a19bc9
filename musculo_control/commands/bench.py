"""``musculo bench``: time one full 125 Hz control tick, against a re-setup baseline and at scale.

What is timed is :meth:`OSCController.tick` as the QP node calls it: fresh state (hand forward
kinematics, muscle lengths, force-length curves), reference acceleration and torque (paper
eq. 14-15), QP value update, warm-started OSQP solve (eq. 11) and the tension command.

The ticks follow a smooth joint trajectory around the home pose (seeded sinusoids), with the
dynamics snapshot refreshed at 20 Hz and the goal 50 ms ahead on the same path, so consecutive
QPs differ as they do on the robot.

Baselines, on the same ticks in the same run:

- ``baseline``: the way a typical Python user solves it: the bounded least squares handed to
  ``qpsolvers.solve_ls(..., solver="osqp")`` every tick (a dense condensed problem and a fresh
  OSQP set-up each time); without qpsolvers installed, the same through a fresh
  ``osqp.OSQP().setup`` per tick (what qpsolvers does underneath);
- ``resetup``: our lifted problem, but set up from scratch every tick (isolates what setting
  up once buys).

Writes CSV, Markdown and JSON (keys ``tick_p50_ms``, ``tick_p99_ms``, ``baseline_tick_p50_ms``,
``speedup_vs_baseline``, ``scaling``). Run it with nothing else busy on the machine.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import platform
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import osqp
import pinocchio as pin
import scipy.sparse as sp

from musculo_control.control.activation_qp import (
    LinearRows,
    OSQPConfig,
    QPResult,
    QPStructure,
    TorqueBalance,
    paper_objective,
)
from musculo_control.control.controller import (
    ControllerConfig,
    OSCController,
    load_controller_config,
)
from musculo_control.control.goal import HandGoal
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.model.robot import Robot, load_robot
from musculo_control.model.synthetic import (
    SyntheticRobot,
    full_task_mask,
    write_synthetic_arm,
)
from musculo_control.paths import default_config_dir

FloatArray = npt.NDArray[np.float64]

#: (muscles, joints) of the synthetic arms of the scaling study.
SCALING_ARMS = ((30, 7), (60, 14), (120, 28))
#: Targets of the issue, printed next to the measurements [ms] and [1].
TARGETS = {"tick_p99_ms": 0.3, "speedup_vs_baseline": 5.0, "scaling_120_p99_ms": 2.0,
           "budget_ms": 8.0}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="time the 125 Hz control tick",
                       description="Median and p99 of one full control tick, against a fresh "
                                   "set-up per tick, and for larger synthetic arms.")
    p.add_argument("--config", type=Path, default=None, help="config folder (default: shipped arm)")
    p.add_argument("--ticks", type=int, default=2000, help="timed ticks per case (default 2000)")
    p.add_argument("--baseline-ticks", type=int, default=500,
                   help="timed ticks of the slow baselines (default 500)")
    p.add_argument("--seed", type=int, default=0, help="seed of the joint trajectory")
    p.add_argument("--out", type=Path, default=Path("out/bench"),
                   help="folder for bench_tick.csv and bench_tick.md (default out/bench)")
    p.add_argument("--json", type=Path, default=None,
                   help="JSON summary (default <out>/bench_tick.json)")
    p.add_argument("--no-scaling", action="store_true", help="skip the synthetic arms")
    p.set_defaults(func=run)


# -- the ticks --------------------------------------------------------------------------------
Tick = tuple[Any, FloatArray, FloatArray, HandGoal, float]


def trajectory_ticks(robot: Robot, estimator: DynamicsEstimator, count: int, seed: int,
                     rate_hz: float = 125.0, snapshot_hz: float = 20.0,
                     amplitude_rad: float = 0.15, lead_s: float = 0.05) -> list[Tick]:
    """(snapshot, q, qd, goal, t) for ``count`` ticks along seeded joint sinusoids."""
    rng = np.random.default_rng(seed)
    n = robot.arm.n_joints
    freq = rng.uniform(0.3, 0.8, n)  # [Hz]
    phase = rng.uniform(0.0, 2 * np.pi, n)
    lo, hi = robot.arm.lower_rad, robot.arm.upper_rad
    centre = np.clip(robot.home_pose_rad, lo + amplitude_rad, hi - amplitude_rad)

    def q_at(t: float) -> FloatArray:
        return centre + amplitude_rad * np.sin(2 * np.pi * freq * t + phase)

    def qd_at(t: float) -> FloatArray:
        return amplitude_rad * 2 * np.pi * freq * np.cos(2 * np.pi * freq * t + phase)

    model, data, frame = robot.arm.model, robot.arm.model.createData(), robot.arm.task_frame_id
    ticks: list[Tick] = []
    snap = None
    for i in range(count):
        t = i / rate_hz
        if snap is None or t - snap.stamp_s >= 1.0 / snapshot_hz - 1e-9:
            snap = estimator.compute(q_at(t), qd_at(t), t)
        pin.framesForwardKinematics(model, data, q_at(t + lead_s))
        pose = data.oMf[frame]
        goal = HandGoal(pose.translation.copy(), rotation=pose.rotation.copy())
        ticks.append((snap, q_at(t), qd_at(t), goal, t))
    return ticks


# -- baselines: the same tick with a fresh solver set-up ----------------------------------------
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
        return None

    def solve(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
              rows: LinearRows | None = None) -> QPResult:
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
        lb = np.r_[lower, np.full(nv - m, -np.inf)]
        ub = np.r_[upper, np.full(nv - m, np.inf)]
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
        return None

    def solve(self, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
              rows: LinearRows | None = None) -> QPResult:
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


# -- timing -----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class Timing:
    """Wall times of a run of ticks [ms] and what the solver did."""

    case: str
    muscles: int
    joints: int
    ticks: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_iterations: float
    failures: int
    activations: FloatArray  # (ticks, m) for cross-checks between methods

    def row(self) -> dict[str, Any]:
        return {"case": self.case, "muscles": self.muscles, "joints": self.joints,
                "ticks": self.ticks, "p50_ms": round(self.p50_ms, 4),
                "p99_ms": round(self.p99_ms, 4), "max_ms": round(self.max_ms, 4),
                "mean_iterations": round(self.mean_iterations, 1), "failures": self.failures}


def time_ticks(case: str, controller: OSCController, ticks: list[Tick], warmup: int) -> Timing:
    """Run ``warmup`` ticks untimed, then time every remaining one."""
    controller.reset()
    for tick in ticks[:warmup]:
        controller.tick(*tick)
    times, iters, acts, fails = [], [], [], 0
    clock = time.perf_counter
    for tick in ticks[warmup:]:
        t0 = clock()
        out = controller.tick(*tick)
        times.append(clock() - t0)
        iters.append(out.iterations)
        acts.append(out.activations)
        fails += int(not out.ok)
    ms = 1e3 * np.array(times)
    return Timing(case, len(controller.robot.controlled_idx), controller.robot.arm.n_joints,
                  len(ms), float(np.median(ms)), float(np.percentile(ms, 99)), float(ms.max()),
                  float(np.mean(iters)), fails, np.array(acts))


def _with_qp(controller: OSCController, factory: Callable[[QPStructure, OSQPConfig], Any]
             ) -> tuple[OSCController, str]:
    """The controller with its QP replaced by a baseline solver, and that solver's method."""
    qp = factory(controller.qp.structure, controller.config.osqp)
    controller.qp = qp
    return controller, str(qp.method)


def synthetic_case(folder: Path, muscles: int, joints: int, config: ControllerConfig
                   ) -> tuple[Robot, ControllerConfig, DynamicsEstimator]:
    robot = SyntheticRobot(write_synthetic_arm(folder, joints, muscles))
    task = dataclasses.replace(config.task, mask=full_task_mask(len(config.task.rows), joints))
    cfg = dataclasses.replace(config, task=task)
    return robot, cfg, DynamicsEstimator(robot, task)


def run_bench(config_dir: Path, ticks: int, baseline_ticks: int, seed: int,
              scaling: bool = True, log: Callable[[str], None] = print) -> dict[str, Any]:
    """All measurements as one JSON-ready dict."""
    robot = load_robot(config_dir)
    config = load_controller_config(config_dir)
    estimator = DynamicsEstimator(robot, config.task)
    warmup = 50
    all_ticks = trajectory_ticks(robot, estimator, warmup + ticks, seed)
    log(f"arm: {len(robot.controlled_idx)} muscles, {robot.arm.n_joints} joints; "
        f"{ticks} ticks, formulation {config.qp.formulation}")
    ours = time_ticks("osc (set up once, warm start)", OSCController(robot, config), all_ticks,
                      warmup)
    log(f"  ours     p50 {ours.p50_ms:.3f} ms  p99 {ours.p99_ms:.3f} ms")
    base_ticks = all_ticks[: warmup + baseline_ticks]
    base_ctrl, base_method = _with_qp(OSCController(robot, config), CondensedFreshQP)
    base = time_ticks("baseline: " + base_method, base_ctrl, base_ticks, warmup)
    log(f"  baseline p50 {base.p50_ms:.3f} ms  p99 {base.p99_ms:.3f} ms  ({base_method})")
    resetup_ctrl, resetup_method = _with_qp(OSCController(robot, config), LiftedFreshQP)
    resetup = time_ticks("resetup: " + resetup_method, resetup_ctrl, base_ticks, warmup)
    log(f"  resetup  p50 {resetup.p50_ms:.3f} ms  p99 {resetup.p99_ms:.3f} ms")
    # the baselines solved the same problems: their activations must agree with ours
    k = len(base.activations)
    agree = float(np.abs(base.activations - ours.activations[:k]).max())
    rows = [ours, base, resetup]
    scale_out = []
    if scaling:
        with tempfile.TemporaryDirectory() as tmp:
            for muscles, joints in SCALING_ARMS:
                r, cfg, est = synthetic_case(Path(tmp) / f"arm_{muscles}_{joints}", muscles,
                                             joints, config)
                sticks = trajectory_ticks(r, est, warmup + ticks, seed)
                tm = time_ticks(f"synthetic {muscles} muscles / {joints} joints",
                                OSCController(r, cfg), sticks, warmup)
                log(f"  {muscles:>3} muscles {joints:>2} joints  p50 {tm.p50_ms:.3f} ms  "
                    f"p99 {tm.p99_ms:.3f} ms")
                rows.append(tm)
                scale_out.append({"muscles": muscles, "joints": joints,
                                  "p50_ms": round(tm.p50_ms, 4), "p99_ms": round(tm.p99_ms, 4)})
    return {
        "tick_p50_ms": round(ours.p50_ms, 4),
        "tick_p99_ms": round(ours.p99_ms, 4),
        "tick_max_ms": round(ours.max_ms, 4),
        "baseline_tick_p50_ms": round(base.p50_ms, 4),
        "baseline_tick_p99_ms": round(base.p99_ms, 4),
        "speedup_vs_baseline": round(base.p50_ms / ours.p50_ms, 2),
        "baseline_method": base_method,
        "resetup_lifted_p50_ms": round(resetup.p50_ms, 4),
        "speedup_vs_resetup": round(resetup.p50_ms / ours.p50_ms, 2),
        "baseline_max_activation_difference": agree,
        "scaling": scale_out,
        "ticks": ticks,
        "failures": sum(t.failures for t in rows),
        "targets": TARGETS,
        "machine": {"cpus": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2),
                    "python": platform.python_version(), "osqp": osqp.__version__},
        "rows": [t.row() for t in rows],
    }


# -- reports ----------------------------------------------------------------------------------
def write_csv(path: Path, result: dict[str, Any]) -> None:
    rows = result["rows"]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def markdown(result: dict[str, Any]) -> str:
    t = result["targets"]
    big = [s for s in result["scaling"] if s["muscles"] == 120]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    lines = [
        "# Control tick benchmark",
        "",
        (f"One full 125 Hz tick (fresh state, reference, QP update, warm-started OSQP solve, "
         f"tension) over {result['ticks']} ticks of a smooth trajectory. Machine: "
         f"{result['machine']['cpus']} CPUs, 1-min load average "
         f"{result['machine']['load_average_1min']} at the end of the run (figures from a busy "
         f"machine overstate the tail), OSQP {result['machine']['osqp']}."),
        "",
        ("| case | muscles | joints | ticks | p50 [ms] | p99 [ms] | max [ms] | mean iterations "
         "| failures |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(f"| {r['case']} | {r['muscles']} | {r['joints']} | {r['ticks']} | "
                     f"{r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['max_ms']:.3f} | "
                     f"{r['mean_iterations']} | {r['failures']} |")
    lines += [
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
        (f"| {result['rows'][0]['muscles']}-muscle tick p99 <= {t['tick_p99_ms']} ms (budget "
         f"{t['budget_ms']} ms at "
         f"125 Hz) | {result['tick_p99_ms']:.3f} ms | "
         f"{verdict(result['tick_p99_ms'] <= t['tick_p99_ms'])} |"),
        (f"| >= {t['speedup_vs_baseline']}x faster than the re-setup baseline (p50) | "
         f"{result['speedup_vs_baseline']}x | "
         f"{verdict(result['speedup_vs_baseline'] >= t['speedup_vs_baseline'])} |"),
    ]
    if big:
        lines.append(f"| 120 muscles p99 <= {t['scaling_120_p99_ms']} ms | "
                     f"{big[0]['p99_ms']:.3f} ms | "
                     f"{verdict(big[0]['p99_ms'] <= t['scaling_120_p99_ms'])} |")
    lines += [
        "",
        (f"Baseline: {result['baseline_method']}. It solves the same problems: the largest "
         f"activation difference from ours is {result['baseline_max_activation_difference']:.1e}. "
         f"Our lifted problem set up anew each tick takes {result['resetup_lifted_p50_ms']:.3f} ms "
         f"(p50): setting up once and warm-starting is {result['speedup_vs_resetup']}x faster."),
        "",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    result = run_bench(args.config or default_config_dir(), args.ticks, args.baseline_ticks,
                       args.seed, scaling=not args.no_scaling)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "bench_tick.csv", result)
    (out / "bench_tick.md").write_text(markdown(result))
    json_path = args.json or out / "bench_tick.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    print(f"wrote {out / 'bench_tick.csv'}, {out / 'bench_tick.md'}, {json_path}")
    return 0
