"""The tick benchmark (``musculo bench``): the 125 Hz control tick and the dynamics snapshot,
against baselines measured in the same run, judged against the targets of ``bench.yaml`` when
the machine was quiet.

What is timed is :meth:`OSCController.tick` as the QP node calls it: fresh state (hand forward
kinematics, muscle lengths, force-length curves), reference acceleration and torque (paper
eq. 14-15), QP value update, warm-started solve (eq. 11) and the tension command; once per
solver of ``qp.solver``, the configured one first (for ``auto``, the one it picks for the arm).

The ticks follow a smooth joint trajectory around the home pose (seeded sinusoids), with the
dynamics snapshot refreshed at the runner's dynamics rate and the goal a little ahead on the
same path, so consecutive QPs differ as they do on the robot.

Cases, all on the same ticks in the same run:

- ``tick (daqp)``, ``tick (osqp)``, ``tick (dual_newton)``: the controller with each solver;
- ``baseline``: the way a typical Python user solves it: the bounded least squares handed to
  ``qpsolvers.solve_ls(..., solver="osqp")`` every tick (a dense condensed problem and a fresh
  OSQP set-up each time); without qpsolvers installed, the same through a fresh
  ``osqp.OSQP().setup`` per tick (what qpsolvers does underneath). The speed-up target is
  against this one;
- ``resetup``: our lifted problem, but set up from scratch every tick (what setting up once
  buys);
- ``snapshot``: the dynamics snapshot at each tick's joint state;
- ``fused``: snapshot and tick together at every tick, the controller always on a fresh
  snapshot (a single 125 Hz loop without the 20 Hz staleness);
- synthetic arms of ``bench.yaml``'s ``scaling_arms`` (``model/synthetic.py``): the tick with
  each solver and the dynamics snapshot.

Prints and writes (CSV, Markdown, JSON: keys ``tick_p50_ms``, ``tick_p99_ms``,
``baseline_tick_p50_ms``, ``speedup_vs_baseline``, ``snapshot_p99_ms``, ``fused_p99_ms``,
``scaling``, ``scaling_snapshot``, ``verdicts``, ``machine``) p50, p99 and max per case, the
ratios, the load average before and after, and a verdict per target: met, NOT met, or not
judged (busy machine).
"""

from __future__ import annotations

import dataclasses
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import osqp

from musculo_control.control.controller import OSCController
from musculo_control.control.controller_config import ControllerConfig, load_controller_config
from musculo_control.control.goal import HandGoal
from musculo_control.control.qp_config import SOLVERS, OSQPConfig
from musculo_control.control.qp_problem import QPStructure
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.model.robot import Robot, load_robot
from musculo_control.model.synthetic import (
    SyntheticRobot,
    full_task_mask,
    write_synthetic_arm,
)
from musculo_control.tick_benchmark.config import BenchConfig
from musculo_control.tick_benchmark.fresh_qp import CondensedFreshQP, LiftedFreshQP
from musculo_control.tick_benchmark.measure import MachineLoad, markdown_table, summary_ms

FloatArray = npt.NDArray[np.float64]


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

    ticks: list[Tick] = []
    snap = None
    for i in range(count):
        t = i / rate_hz
        if snap is None or t - snap.stamp_s >= 1.0 / snapshot_hz - 1e-9:
            snap = estimator.compute(q_at(t), qd_at(t), t)
        position, rotation = robot.arm.hand_pose(q_at(t + lead_s))
        goal = HandGoal(position, rotation=rotation)
        ticks.append((snap, q_at(t), qd_at(t), goal, t))
    return ticks


# -- timing -----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class Timing:
    """Wall times of a run of ticks [ms] and what the solver did."""

    case: str
    solver: str
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
        return {"case": self.case, "solver": self.solver, "muscles": self.muscles,
                "joints": self.joints, "ticks": self.ticks, "p50_ms": round(self.p50_ms, 4),
                "p99_ms": round(self.p99_ms, 4), "max_ms": round(self.max_ms, 4),
                "mean_iterations": round(self.mean_iterations, 1), "failures": self.failures}


def time_ticks(case: str, controller: OSCController, ticks: list[Tick], warmup: int,
               estimator: DynamicsEstimator | None = None, solver: str = "") -> Timing:
    """Run ``warmup`` ticks untimed, then time every remaining one.

    With ``estimator`` (the fused case) each timed tick first computes its own snapshot at the
    tick's joint state and hands it to the controller.
    """
    controller.reset()
    for tick in ticks[:warmup]:
        controller.tick(*tick)
    times, iters, acts, fails = [], [], [], 0
    clock = time.perf_counter
    for snap, q, qd, goal, t in ticks[warmup:]:
        t0 = clock()
        if estimator is not None:
            snap = estimator.compute(q, qd, t)
        out = controller.tick(snap, q, qd, goal, t)
        times.append(clock() - t0)
        iters.append(out.iterations)
        acts.append(out.activations)
        fails += int(not out.ok)
    stats = summary_ms(times)
    return Timing(case, solver or getattr(controller.qp, "solver", "-"),
                  len(controller.robot.controlled_idx), controller.robot.arm.n_joints,
                  int(stats["count"]), stats["p50_ms"], stats["p99_ms"], stats["max_ms"],
                  float(np.mean(iters)), fails, np.array(acts))


def time_snapshots(estimator: DynamicsEstimator, ticks: list[Tick], warmup: int,
                   muscles: int) -> Timing:
    """The dynamics snapshot at every tick's joint state."""
    for _, q, qd, _, t in ticks[:warmup]:
        estimator.compute(q, qd, t)
    times = []
    clock = time.perf_counter
    for _, q, qd, _, t in ticks[warmup:]:
        t0 = clock()
        estimator.compute(q, qd, t)
        times.append(clock() - t0)
    stats = summary_ms(times)
    return Timing("snapshot (M, g, J, Lambda, Jbar, N, l, Jm)", "-", muscles,
                  estimator.robot.arm.n_joints, int(stats["count"]), stats["p50_ms"],
                  stats["p99_ms"], stats["max_ms"], 0.0, 0, np.zeros((0, muscles)))


def _with_qp(controller: OSCController, factory: Callable[[QPStructure, OSQPConfig], Any]
             ) -> tuple[OSCController, str]:
    """The controller with its QP replaced by a baseline solver, and that solver's method."""
    qp = factory(controller.qp.structure, controller.config.osqp)
    controller.qp = qp
    return controller, str(qp.method)


def _with_solver(config: ControllerConfig, solver: str) -> ControllerConfig:
    return dataclasses.replace(config, qp=dataclasses.replace(config.qp, solver=solver))


def synthetic_case(folder: Path, muscles: int, joints: int, config: ControllerConfig
                   ) -> tuple[Robot, ControllerConfig, DynamicsEstimator]:
    """A synthetic arm of ``muscles`` x ``joints`` written under ``folder``, with its controller
    config (full task mask)."""
    robot = SyntheticRobot(write_synthetic_arm(folder, joints, muscles))
    task = dataclasses.replace(config.task, mask=full_task_mask(len(config.task.rows), joints))
    # per-joint gains belong to the shipped arm, not to this one
    gains = dataclasses.replace(config.gains, nullspace_posture_nm_rad=None)
    cfg = dataclasses.replace(config, task=task, gains=gains)
    return robot, cfg, DynamicsEstimator(robot, task)


def _solvers_first(chosen: str) -> list[str]:
    return [chosen, *[s for s in SOLVERS if s != chosen]]


def _label(solver: str, chosen: str, configured: str) -> str:
    """``daqp``, or ``auto: daqp`` for the solver ``qp.solver: auto`` picked."""
    return f"auto: {solver}" if configured == "auto" and solver == chosen else solver


def run_bench(config_dir: Path, bench: BenchConfig, scaling: bool = True,
              log: Callable[[str], None] = print) -> dict[str, Any]:
    """All measurements as one JSON-ready dict (see the module docstring)."""
    machine = MachineLoad(bench.quiet_load_average)
    log(f"load average (1 min) at the start: {machine.start} on {machine.cpus} CPUs")
    robot = load_robot(config_dir)
    # eq. 11 as the paper states it: the baselines solve that problem, without the velocity-aware
    # tau_null bounds of qp.nullspace_step_rad or a posture spring
    config = load_controller_config(config_dir)
    config = dataclasses.replace(
        config, qp=dataclasses.replace(config.qp, nullspace_step_rad=None),
        gains=dataclasses.replace(config.gains, nullspace_posture_nm_rad=None))
    rates = {"rate_hz": config.loop.control_rate_hz, "snapshot_hz": config.loop.dynamics_rate_hz,
             "amplitude_rad": bench.amplitude_rad, "lead_s": bench.goal_lead_s}
    estimator = DynamicsEstimator(robot, config.task)
    warmup, ticks = bench.warmup_ticks, bench.ticks
    all_ticks = trajectory_ticks(robot, estimator, warmup + ticks, bench.seed, **rates)
    m = len(robot.controlled_idx)
    configured = config.qp.solver
    chosen = OSCController(robot, config).qp.solver  # what auto picks for this arm
    log(f"arm: {m} muscles, {robot.arm.n_joints} joints; {ticks} ticks, formulation "
        f"{config.qp.formulation}, solver {configured} ({chosen})")

    def freeze() -> None:
        if bench.gc_freeze:
            gc.collect()
            gc.freeze()

    freeze()

    def show(t: Timing) -> Timing:
        log(f"  {t.case:<46} p50 {t.p50_ms:7.3f}  p99 {t.p99_ms:7.3f}  max {t.max_ms:7.3f} ms")
        return t

    by_solver = {s: show(time_ticks(f"tick ({_label(s, chosen, configured)})",
                                    OSCController(robot, _with_solver(config, s)), all_ticks,
                                    warmup)) for s in _solvers_first(chosen)}
    ours = by_solver[chosen]
    base_ticks = all_ticks[: warmup + bench.baseline_ticks]
    base_ctrl, base_method = _with_qp(OSCController(robot, config), CondensedFreshQP)
    base = show(time_ticks("baseline: QP set up every tick", base_ctrl, base_ticks, warmup,
                           solver="osqp"))
    resetup_ctrl, resetup_method = _with_qp(OSCController(robot, config), LiftedFreshQP)
    resetup = show(time_ticks("resetup: lifted problem set up every tick", resetup_ctrl,
                              base_ticks, warmup, solver="osqp"))
    snapshot = show(time_snapshots(DynamicsEstimator(robot, config.task), all_ticks, warmup, m))
    fused = show(time_ticks(f"fused: snapshot + tick ({chosen})",
                            OSCController(robot, config), all_ticks, warmup,
                            estimator=DynamicsEstimator(robot, config.task)))
    # the baselines and solvers solved the same problems: their activations must agree
    k = len(base.activations)
    base_agree = float(np.abs(base.activations - ours.activations[:k]).max())
    solver_agree = max(float(np.abs(t.activations - ours.activations).max())
                       for t in by_solver.values())
    rows = [*by_solver.values(), base, resetup, snapshot, fused]
    scale_out, scale_snap = [], []
    if scaling:
        with tempfile.TemporaryDirectory() as tmp:
            for muscles, joints in bench.scaling_arms:
                r, cfg, est = synthetic_case(Path(tmp) / f"arm_{muscles}_{joints}", muscles,
                                             joints, config)
                sticks = trajectory_ticks(r, est, warmup + bench.scaling_ticks, bench.seed,
                                          **rates)
                freeze()
                picked = OSCController(r, cfg).qp.solver
                for solver in _solvers_first(picked):
                    tm = show(time_ticks(f"synthetic {muscles} muscles / {joints} joints "
                                         f"({_label(solver, picked, configured)})",
                                         OSCController(r, _with_solver(cfg, solver)), sticks,
                                         warmup))
                    rows.append(tm)
                    scale_out.append({"muscles": muscles, "joints": joints, "solver": solver,
                                      "configured": solver == picked,
                                      "p50_ms": round(tm.p50_ms, 4),
                                      "p99_ms": round(tm.p99_ms, 4),
                                      "max_ms": round(tm.max_ms, 4),
                                      "failures": tm.failures})
                sn = show(time_snapshots(est, sticks, warmup, muscles))
                rows.append(dataclasses.replace(
                    sn, case=f"synthetic {muscles} muscles / {joints} joints (snapshot)"))
                scale_snap.append({"muscles": muscles, "joints": joints,
                                   "p50_ms": round(sn.p50_ms, 4), "p99_ms": round(sn.p99_ms, 4),
                                   "max_ms": round(sn.max_ms, 4)})
    machine.finish()
    if bench.gc_freeze:
        gc.unfreeze()
    log(f"load average (1 min) at the end: {machine.end}")
    result: dict[str, Any] = {
        "solver": chosen,
        "configured_solver": configured,
        "muscles": int(m),  # the controlled muscles: the QP's activations
        "joints": robot.arm.n_joints,
        "tick_p50_ms": round(ours.p50_ms, 4),
        "tick_p99_ms": round(ours.p99_ms, 4),
        "tick_max_ms": round(ours.max_ms, 4),
        "baseline_tick_p50_ms": round(base.p50_ms, 4),
        "baseline_tick_p99_ms": round(base.p99_ms, 4),
        "speedup_vs_baseline": round(base.p50_ms / ours.p50_ms, 2),
        "baseline_method": base_method,
        "resetup_lifted_p50_ms": round(resetup.p50_ms, 4),
        "resetup_method": resetup_method,
        "speedup_vs_resetup": round(resetup.p50_ms / ours.p50_ms, 2),
        "baseline_max_activation_difference": base_agree,
        "solver_max_activation_difference": solver_agree,
        "solver_p50_ms": {s: round(t.p50_ms, 4) for s, t in by_solver.items()},
        "snapshot_p50_ms": round(snapshot.p50_ms, 4),
        "snapshot_p99_ms": round(snapshot.p99_ms, 4),
        "snapshot_max_ms": round(snapshot.max_ms, 4),
        "fused_p50_ms": round(fused.p50_ms, 4),
        "fused_p99_ms": round(fused.p99_ms, 4),
        "fused_max_ms": round(fused.max_ms, 4),
        "scaling": scale_out,
        "scaling_snapshot": scale_snap,
        "ticks": ticks,
        "failures": sum(t.failures for t in rows),
        "targets": dataclasses.asdict(bench.targets),
        "machine": {**machine.as_dict(), "osqp": osqp.__version__, "daqp": _daqp_version(),
                    "numpy": np.__version__, "gc_freeze": bench.gc_freeze},
        "rows": [t.row() for t in rows],
    }
    result["verdicts"] = verdicts(result, bench, machine)
    return result


def _daqp_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("daqp")
    except PackageNotFoundError:
        return "not installed"


def verdicts(result: dict[str, Any], bench: BenchConfig, machine: MachineLoad
             ) -> list[dict[str, Any]]:
    """One verdict per target: met, NOT met, or not judged (busy machine)."""
    t = bench.targets
    configured = result.get("configured_solver", result["solver"])
    budget_ms = 1e3 / 125.0
    arm = f"{result['muscles']}-muscle"  # the benchmarked robot's, not the stand-in's 15
    out = [
        (f"{arm} tick p50", f"<= {t.tick_p50_ms} ms", result["tick_p50_ms"],
         result["tick_p50_ms"] <= t.tick_p50_ms),
        (f"{arm} tick p99", f"<= {t.tick_p99_ms} ms (budget {budget_ms:g} ms at 125 Hz)",
         result["tick_p99_ms"], result["tick_p99_ms"] <= t.tick_p99_ms),
        ("speed-up against the QP set up every tick (p50)", f">= {t.speedup_vs_baseline}x",
         result["speedup_vs_baseline"], result["speedup_vs_baseline"] >= t.speedup_vs_baseline),
        ("dynamics snapshot p99", f"<= {t.snapshot_p99_ms} ms", result["snapshot_p99_ms"],
         result["snapshot_p99_ms"] <= t.snapshot_p99_ms),
        ("fused snapshot + tick p99", f"<= {t.fused_p99_ms} ms", result["fused_p99_ms"],
         result["fused_p99_ms"] <= t.fused_p99_ms),
    ]
    for muscles, joints, p99 in t.scaling_p99_ms:
        rows = [s for s in result["scaling"] if (s["muscles"], s["joints"]) == (muscles, joints)
                and s["configured"]]
        if rows:
            out.append((f"{int(muscles)} muscles / {int(joints)} joints tick p99 "
                        f"({_label(rows[0]['solver'], rows[0]['solver'], configured)})",
                        f"<= {p99} ms", rows[0]["p99_ms"], rows[0]["p99_ms"] <= p99))
    return [{"target": name, "bound": bound, "measured": measured,
             "verdict": machine.verdict(ok)} for name, bound, measured, ok in out]


# -- reports ----------------------------------------------------------------------------------
def by_arm_size(rows: list[dict[str, Any]]) -> list[str]:
    """The tick of each solver and the snapshot per arm, as Markdown table lines: the rows of
    the report's table (``case``, ``solver``, ``muscles``, ``joints``, ``p50_ms``, ``p99_ms``)
    regrouped, one line per arm, with the solver ``auto`` picks there."""
    arms: dict[tuple[int, int], dict[str, str]] = {}
    solvers: list[str] = []
    for r in rows:
        case = str(r["case"])
        if case.startswith(("baseline", "resetup", "fused")):
            continue
        cell = f"{r['p50_ms']:.3f} / {r['p99_ms']:.3f}"
        arm = arms.setdefault((int(r["muscles"]), int(r["joints"])), {})
        if "snapshot" in case:
            arm["snapshot"] = cell
            continue
        solver = str(r["solver"])
        arm[solver] = cell
        if solver not in solvers:
            solvers.append(solver)
        if "(auto:" in case:
            arm["auto"] = solver
    lines = ["| arm (muscles / joints) | " + " | ".join(solvers) + " | auto picks | snapshot |",
             "|---|" + "---|" * (len(solvers) + 2)]
    for (m, n), arm in arms.items():
        cells = [arm.get(s, "") for s in solvers] + [arm.get("auto", ""),
                                                     arm.get("snapshot", "")]
        lines.append(f"| {m} / {n} | " + " | ".join(cells) + " |")
    return lines


def markdown(result: dict[str, Any]) -> str:
    """The Markdown report of one benchmark run: the table, ratios, load and verdicts."""
    mach = result["machine"]
    busy = "" if mach["judged"] else " **Too busy to judge the targets.**"
    lines = [
        "# Control tick benchmark",
        "",
        (f"One full 125 Hz tick (fresh state, reference, QP update, warm-started solve, "
         f"tension) over {result['ticks']} ticks of a smooth trajectory, formulation eq. 11, "
         f"solver {result['configured_solver']} ({result['solver']} on this arm). Machine: "
         f"{mach['cpus']} CPUs, 1-min load average {mach['load_average_start']} at the start "
         f"and {mach['load_average_end']} at the end (judged when at most "
         f"{mach['quiet_load_average']} at the start and {mach['quiet_load_average'] + 1.0} "
         f"at the end).{busy} Python {mach['python']}, "
         f"numpy {mach['numpy']}, OSQP {mach['osqp']}, DAQP {mach['daqp']}; gc.freeze() after "
         f"set-up as in the QP node: {'yes' if mach['gc_freeze'] else 'no'}."),
        "",
        *markdown_table(result["rows"]),
        "",
        "By arm size, p50 / p99 in ms (the first row is the benchmarked arm, the others "
        "synthetic):",
        "",
        *by_arm_size(result["rows"]),
        "",
        "| target | bound | measured | verdict |",
        "|---|---|---|---|",
        *[f"| {v['target']} | {v['bound']} | {v['measured']} | {v['verdict']} |"
          for v in result["verdicts"]],
        "",
        (f"Baseline: {result['baseline_method']}; it solves the same problems (largest "
         f"activation difference from ours {result['baseline_max_activation_difference']:.1e}; "
         f"between our solvers {result['solver_max_activation_difference']:.1e}). Our tick is "
         f"{result['speedup_vs_baseline']}x faster (p50). {result['resetup_method']}: "
         f"{result['resetup_lifted_p50_ms']:.3f} ms (p50), so setting up once and "
         f"warm-starting is {result['speedup_vs_resetup']}x faster."),
        "",
    ]
    return "\n".join(lines)
