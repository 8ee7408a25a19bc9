"""The solver field on the controller's own QPs (``benchmarks/bench_solvers.py``): the same
recorded sequences of eq. 11 problems through DAQP, OSQP, the dual Newton solver, ProxQP,
PIQP, quadprog and Clarabel, against SciPy's BVLS.

The sequences:

- the shipped arm (15 muscles / 7 joints), recorded from a closed-loop run of the ROS-free runner
  (experiment B, the trajectory, controller ``osc`` with the shipped ``controller.yaml``: eq. 11
  with its per-tick tau_null bounds while the hand is near its goal);
- synthetic arms (``bench.yaml`` ``solver_arms``; MyoArm's size among them), recorded from the
  tick benchmark's joint trajectory (:func:`~musculo_control.tick_benchmark.tick.trajectory_ticks`),
  eq. 11 as the paper states it.

Each solver gets the form it is built for, filled by the project's own code so that only the
solver differs: the condensed problem (:class:`~musculo_control.control.qp_problem.CondensedQP`)
for the dense solvers (DAQP, ProxQP's dense backend, quadprog), the lifted one
(:class:`~musculo_control.control.qp_problem.QPStructure`) for the sparse ones (OSQP, PIQP's
sparse backend, Clarabel), and the dual for the dual Newton solver. A solver that can start
from the previous answer does so (DAQP, OSQP, dual Newton, ProxQP); the interior-point solvers
(PIQP, Clarabel) and quadprog start cold at every QP. What is timed is one QP from its torque
balance to the activations, as a control tick sees it: filling the solver's input, updating it
and solving.

Per solver and sequence: p50 / p99 / max wall time, mean and largest iterations, failures, the
largest activation difference from BVLS (``scipy.optimize.lsq_linear(method="bvls")`` on the
stacked least squares, the exact oracle of the tests) and the speed-up against BVLS measured in
the same run (the baseline ratio). Written as CSV, Markdown and JSON.
"""

from __future__ import annotations

import dataclasses
import gc
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import lsq_linear

from musculo_control.control.activation_qp import ActivationQP
from musculo_control.control.controller import OSCController
from musculo_control.control.controller_config import ControllerConfig, load_controller_config
from musculo_control.control.qp_problem import CondensedQP, QPStructure, TorqueBalance
from musculo_control.errors import InputError
from musculo_control.tick_benchmark.config import BenchConfig
from musculo_control.tick_benchmark.measure import MachineLoad, markdown_table, summary_ms

FloatArray = npt.NDArray[np.float64]

#: Every solver of the field, in the order of the report.
FIELD = ("daqp", "osqp", "dual_newton", "proxqp", "piqp", "quadprog", "clarabel")
#: The PyPI package of each solver (``pip install -e '.[bench]'``).
PACKAGES = {"daqp": "daqp", "osqp": "osqp", "dual_newton": "musculo_control",
            "proxqp": "proxsuite", "piqp": "piqp", "quadprog": "quadprog",
            "clarabel": "clarabel"}
#: Tolerances given to the solvers that have one (absolute, on their own residuals); DAQP,
#: quadprog and the dual Newton solver end on an active-set solution, OSQP runs with the
#: shipped settings (1e-6 and polishing).
TOLERANCE = 1e-9


class RecordedQP(NamedTuple):
    """One tick's QP as the controller handed it to :meth:`ActivationQP.solve`."""

    formulation: str
    k: float
    r: float
    tau_null_max_nm: float | None  # the box the QP was built with (None: none)
    balance: TorqueBalance
    lower: FloatArray  # (m,)
    upper: FloatArray  # (m,)
    null_bound: FloatArray | None  # (n,) this tick's |tau_null| bounds, or None

    @property
    def size(self) -> tuple[int, int]:
        return self.balance.muscle_jacobian.shape  # type: ignore[return-value]

    def bounds(self) -> tuple[FloatArray, FloatArray]:
        """Bounds of z = [a; tau_null] (eq. 11) or of a (eq. 10)."""
        m, n = self.size
        if self.formulation != "eq11":
            return self.lower, self.upper
        box = np.full(n, np.inf if self.tau_null_max_nm is None else self.tau_null_max_nm)
        if self.null_bound is not None:
            box = self.null_bound
        return np.r_[self.lower, -box], np.r_[self.upper, box]


def _copy_balance(b: TorqueBalance) -> TorqueBalance:
    def copy(x: FloatArray) -> FloatArray:
        return np.array(x, dtype=np.float64)

    return TorqueBalance(copy(b.muscle_jacobian), copy(b.active_n), copy(b.passive_n),
                         copy(b.offset_nm), None if b.nullspace is None else copy(b.nullspace))


@contextmanager
def recording(into: list[RecordedQP]) -> Iterator[None]:
    """Record every :meth:`ActivationQP.solve` of eq. 10/11 without rows made meanwhile."""
    original = ActivationQP.solve

    def solve(self: ActivationQP, balance: TorqueBalance, lower: FloatArray, upper: FloatArray,
              rows: Any = None, tau_null_bound: FloatArray | None = None) -> Any:
        s = self.structure
        if s.formulation != "eq9" and rows is None:
            into.append(RecordedQP(
                s.formulation, s.k, s.r, s.tau_null_max_nm, _copy_balance(balance),
                np.array(lower, dtype=float), np.array(upper, dtype=float),
                None if tau_null_bound is None else np.array(tau_null_bound, dtype=float)))
        return original(self, balance, lower, upper, rows, tau_null_bound)

    ActivationQP.solve = solve  # type: ignore[method-assign]
    try:
        yield
    finally:
        ActivationQP.solve = original  # type: ignore[method-assign]


def record_closed_loop(config_dir: Path, count: int) -> list[RecordedQP]:
    """``count`` consecutive QPs of the shipped arm's controller in experiment B (after the
    start-up hold), from the ROS-free runner."""
    from musculo_control.sim import experiments as ex
    from musculo_control.sim.setup import Overrides, experiment_config, load_setup

    setup = load_setup(config_dir, Overrides.parse([]))
    pose = experiment_config(setup, "trajectory").start_poses[0]
    qps: list[RecordedQP] = []
    with recording(qps):
        ex.run_trajectory(setup, "osc", pose)
    if len(qps) < count:
        raise InputError("solver_qps", f"at most the {len(qps)} QPs of experiment B", count)
    return qps[-count:]  # the end of the run: the start-up hold lies before it


def record_synthetic(muscles: int, joints: int, config: ControllerConfig, bench: BenchConfig,
                     count: int, folder: Path) -> list[RecordedQP]:
    """``count`` consecutive QPs of a synthetic arm's controller along the tick benchmark's
    joint trajectory (eq. 11 as the paper states it)."""
    from musculo_control.tick_benchmark.tick import synthetic_case, trajectory_ticks

    robot, cfg, estimator = synthetic_case(folder, muscles, joints, config)
    ticks = trajectory_ticks(robot, estimator, bench.warmup_ticks + count, bench.seed,
                             rate_hz=config.loop.control_rate_hz,
                             snapshot_hz=config.loop.dynamics_rate_hz,
                             amplitude_rad=bench.amplitude_rad, lead_s=bench.goal_lead_s)
    controller = OSCController(robot, cfg)
    qps: list[RecordedQP] = []
    for tick in ticks[: bench.warmup_ticks]:
        controller.tick(*tick)
    with recording(qps):
        for tick in ticks[bench.warmup_ticks:]:
            controller.tick(*tick)
    return qps


# -- the oracle -------------------------------------------------------------------------------
def bvls(qp: RecordedQP) -> FloatArray:
    """The exact activations of eq. 10/11 by SciPy's BVLS on the stacked least squares."""
    b = qp.balance
    m, n = qp.size
    B = b.muscle_jacobian.T * b.active_n
    c = b.muscle_jacobian.T @ b.passive_n + b.offset_nm
    if qp.formulation == "eq11":
        assert b.nullspace is not None
        A = np.block([[B, b.nullspace], [np.sqrt(qp.k) * np.eye(m), np.zeros((m, n))],
                      [np.zeros((n, m)), np.sqrt(qp.r) * np.eye(n)]])
    else:
        A = np.vstack([B, np.sqrt(qp.k) * np.eye(m)])
    lo, hi = qp.bounds()
    res = lsq_linear(A, np.r_[-c, np.zeros(A.shape[0] - n)], bounds=(lo, hi), method="bvls",
                     tol=1e-15, max_iter=100 * A.shape[1])
    return np.asarray(res.x[:m], dtype=np.float64)


# -- the solvers ------------------------------------------------------------------------------
class FieldSolver(Protocol):
    """One solver of the field on one sequence: ``solve`` answers one recorded QP."""

    form: str
    warm: bool

    def solve(self, qp: RecordedQP) -> tuple[bool, FloatArray, int]: ...


class OurSolver:
    """DAQP, OSQP or the dual Newton solver as the controller runs them (ActivationQP)."""

    warm = True

    def __init__(self, name: str, first: RecordedQP, config: ControllerConfig) -> None:
        m, n = first.size
        self.form = {"daqp": "condensed", "osqp": "lifted", "dual_newton": "dual"}[name]
        self.qp = ActivationQP(first.formulation, m, n, k=first.k, r=first.r, solver=name,
                               osqp_config=config.osqp, daqp_config=config.daqp,
                               dual_newton_config=config.dual_newton,
                               tau_null_max_nm=first.tau_null_max_nm)

    def solve(self, qp: RecordedQP) -> tuple[bool, FloatArray, int]:
        res = self.qp.solve(qp.balance, qp.lower, qp.upper, None, qp.null_bound)
        return res.found, res.activations, res.iterations


class _Condensed:
    """The condensed problem of a sequence, filled by :class:`CondensedQP`."""

    def __init__(self, first: RecordedQP) -> None:
        m, n = first.size
        self.pr = CondensedQP(first.formulation, m, n, first.k, first.r, 0, first.tau_null_max_nm)

    def fill(self, qp: RecordedQP) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """(H, f, lower, upper) of ``min 1/2 z^T H z + f^T z, lower <= z <= upper``."""
        pr = self.pr
        pr.fill(qp.balance, qp.lower, qp.upper, None)
        nv, m = pr.n_variables, pr.n_muscles
        lower, upper = pr.lower[:nv].copy(), pr.upper[:nv].copy()
        lower[:m], upper[:m] = qp.lower, qp.upper
        if qp.null_bound is not None and pr.keeps_null:
            upper[m:] = qp.null_bound
            lower[m:] = -qp.null_bound
        return pr.H, pr.f, lower, upper


class ProxQPSolver(_Condensed):
    """ProxQP's dense backend on the condensed problem, box constraints, warm-started."""

    form, warm = "condensed", True

    def __init__(self, first: RecordedQP) -> None:
        super().__init__(first)
        from proxsuite import proxqp

        self._proxqp = proxqp
        self.solver: Any = None

    def solve(self, qp: RecordedQP) -> tuple[bool, FloatArray, int]:
        H, f, lower, upper = self.fill(qp)
        px = self._proxqp
        if self.solver is None:
            self.solver = px.dense.QP(len(f), 0, 0, True)
            settings = self.solver.settings
            settings.eps_abs, settings.eps_rel = TOLERANCE, 0.0
            settings.verbose = False
            settings.initial_guess = px.InitialGuess.WARM_START_WITH_PREVIOUS_RESULT
            self.solver.init(H, f, None, None, None, None, None, lower, upper)
        else:
            self.solver.update(H=H, g=f, l_box=lower, u_box=upper)
        self.solver.solve()
        res = self.solver.results
        found = res.info.status == px.QPSolverOutput.PROXQP_SOLVED
        return found, np.array(res.x[: self.pr.n_muscles]), int(res.info.iter)


class QuadprogSolver(_Condensed):
    """quadprog (Goldfarb-Idnani dual active set) on the condensed problem; no warm start."""

    form, warm = "condensed", False

    def __init__(self, first: RecordedQP) -> None:
        super().__init__(first)
        import quadprog

        self._solve_qp = quadprog.solve_qp

    def solve(self, qp: RecordedQP) -> tuple[bool, FloatArray, int]:
        H, f, lower, upper = self.fill(qp)
        nv = len(f)
        eye = np.eye(nv)
        lo, hi = np.isfinite(lower), np.isfinite(upper)
        # constraints C^T z >= b: z >= lower, -z >= -upper (finite bounds only)
        C = np.hstack([eye[:, lo], -eye[:, hi]])
        b = np.r_[lower[lo], -upper[hi]]
        try:
            z, _, _, iterations, _, _ = self._solve_qp(H, -f, C, b, 0)
        except ValueError:  # its only ways to fail: infeasible, or H not positive definite
            return False, np.zeros(self.pr.n_muscles), 0
        return True, np.array(z[: self.pr.n_muscles]), int(iterations[0])


class _Lifted:
    """The lifted problem of a sequence, filled by :class:`QPStructure`."""

    def __init__(self, first: RecordedQP) -> None:
        m, n = first.size
        self.st = QPStructure(first.formulation, m, n, first.k, first.r, 0, None)
        self.Ax, self.l, self.u, self.c = self.st.new_buffers()
        st = self.st
        self.P = st.P_matrix()
        self.nv = st.n_variables

    def fill(self, qp: RecordedQP) -> tuple[sp.csc_matrix, FloatArray, FloatArray, FloatArray]:
        """(A_eq, b_eq, x_lower, x_upper): ``A_eq x = b_eq`` the torque rows, bounds on x."""
        st = self.st
        st.fill(qp.balance, qp.lower, qp.upper, None, self.Ax, self.l, self.u, self.c)
        A = st.A_matrix(self.Ax)[st.torque_rows.start: st.torque_rows.stop]
        lo, hi = qp.bounds()
        x_lower = np.full(self.nv, -np.inf)
        x_upper = np.full(self.nv, np.inf)
        x_lower[: len(lo)], x_upper[: len(hi)] = lo, hi
        return sp.csc_matrix(A), -self.c, x_lower, x_upper


class PIQPSolver(_Lifted):
    """PIQP's sparse backend (proximal interior point) on the lifted problem, set up once and
    updated; an interior-point method starts cold at every solve."""

    form, warm = "lifted", False

    def __init__(self, first: RecordedQP) -> None:
        super().__init__(first)
        import piqp

        self._piqp = piqp
        self.solver: Any = None

    def solve(self, qp: RecordedQP) -> tuple[bool, FloatArray, int]:
        A, b, xl, xu = self.fill(qp)
        if self.solver is None:
            self.solver = self._piqp.SparseSolver()
            self.solver.settings.eps_abs = TOLERANCE
            self.solver.settings.eps_rel = 0.0
            self.solver.setup(self.P, np.zeros(self.nv), A, b, None, None, None, xl, xu)
        else:
            self.solver.update(A=A, b=b, x_l=xl, x_u=xu)
        status = self.solver.solve()
        res = self.solver.result
        return (status == self._piqp.PIQP_SOLVED, np.array(res.x[: self.st.n_muscles]),
                int(res.info.iter))


class ClarabelSolver(_Lifted):
    """Clarabel (interior point, conic) on the lifted problem, set up at every QP."""

    form, warm = "lifted", False

    def __init__(self, first: RecordedQP) -> None:
        super().__init__(first)
        import clarabel

        self._cl = clarabel
        self.settings = clarabel.DefaultSettings()
        self.settings.verbose = False
        self.settings.tol_gap_abs = self.settings.tol_feas = TOLERANCE
        self.settings.tol_gap_rel = TOLERANCE
        self.P_upper = sp.triu(self.P, format="csc")

    def solve(self, qp: RecordedQP) -> tuple[bool, FloatArray, int]:
        A_eq, b_eq, xl, xu = self.fill(qp)
        eye = sp.identity(self.nv, format="csr")
        lo, hi = np.isfinite(xl), np.isfinite(xu)
        # A x + s = b: equality rows (zero cone), then -x <= -lower and x <= upper (s >= 0)
        A = sp.vstack([A_eq, -eye[lo], eye[hi]], format="csc")
        b = np.r_[b_eq, -xl[lo], xu[hi]]
        cones = [self._cl.ZeroConeT(A_eq.shape[0]),
                 self._cl.NonnegativeConeT(int(lo.sum() + hi.sum()))]
        solver = self._cl.DefaultSolver(self.P_upper, np.zeros(self.nv), A, b, cones,
                                        self.settings)
        sol = solver.solve()
        found = str(sol.status) == "Solved"
        return found, np.array(sol.x[: self.st.n_muscles]), int(sol.iterations)


def make_solver(name: str, first: RecordedQP, config: ControllerConfig) -> FieldSolver:
    """The field solver ``name`` set up for the sequence that starts with ``first``."""
    if name in ("daqp", "osqp", "dual_newton"):
        return OurSolver(name, first, config)
    factory: dict[str, Callable[[RecordedQP], FieldSolver]] = {
        "proxqp": ProxQPSolver, "piqp": PIQPSolver, "quadprog": QuadprogSolver,
        "clarabel": ClarabelSolver}
    if name not in factory:
        raise InputError("solver", f"one of {list(FIELD)}", name)
    return factory[name](first)


def installed(name: str) -> bool:
    """Whether the package of solver ``name`` is installed (the ``bench`` extra)."""
    try:
        version(PACKAGES[name])
    except PackageNotFoundError:
        return False
    return True


def package_version(name: str) -> str:
    try:
        return version(PACKAGES[name])
    except PackageNotFoundError:
        return "not installed"


# -- running ----------------------------------------------------------------------------------
def run_sequence(name: str, label: str, qps: list[RecordedQP], oracle: list[FloatArray],
                 bvls_p50_ms: float, config: ControllerConfig) -> dict[str, Any]:
    """One solver through one sequence: the row of the report."""
    m, n = qps[0].size
    solver = make_solver(name, qps[0], config)
    times, iters, fails, worst = [], [], 0, 0.0
    clock = time.perf_counter
    gc.collect()
    for qp, exact in zip(qps, oracle):
        t0 = clock()
        found, a, it = solver.solve(qp)
        times.append(clock() - t0)
        iters.append(it)
        if found:
            worst = max(worst, float(np.abs(a - exact).max()))
        else:
            fails += 1
    stats = summary_ms(times)
    return {"sequence": label, "muscles": m, "joints": n, "solver": name, "form": solver.form,
            "warm_start": "yes" if solver.warm else "no", "qps": len(qps),
            "p50_ms": round(stats["p50_ms"], 4), "p99_ms": round(stats["p99_ms"], 4),
            "max_ms": round(stats["max_ms"], 4),
            "mean_iterations": round(float(np.mean(iters)), 1), "max_iterations": max(iters),
            "failures": fails, "max_activation_difference": f"{worst:.1e}",
            "speedup_vs_bvls": round(bvls_p50_ms / stats["p50_ms"], 1)}


def run_solver_bench(config_dir: Path, bench: BenchConfig, solvers: tuple[str, ...] = FIELD,
                     qps_per_sequence: int | None = None,
                     log: Callable[[str], None] = print) -> dict[str, Any]:
    """Record the sequences, solve each with every solver and BVLS: one JSON-ready dict."""
    count = qps_per_sequence or bench.solver_qps
    missing = [s for s in solvers if not installed(s)]
    if missing:
        raise InputError("solvers", "installed (pip install -e '.[bench]')", missing)
    machine = MachineLoad(bench.quiet_load_average)
    log(f"load average (1 min) at the start: {machine.start} on {machine.cpus} CPUs")
    config = load_controller_config(config_dir)
    paper = dataclasses.replace(
        config, qp=dataclasses.replace(config.qp, nullspace_step_rad=None),
        gains=dataclasses.replace(config.gains, nullspace_posture_nm_rad=None))
    sequences: list[tuple[str, list[RecordedQP]]] = []
    log("recording the closed loop (experiment B) ...")
    sequences.append(("closed loop, shipped arm", record_closed_loop(config_dir, count)))
    with tempfile.TemporaryDirectory() as tmp:
        for muscles, joints in bench.solver_arms:
            log(f"recording the synthetic {muscles} / {joints} arm ...")
            sequences.append((f"synthetic {muscles} / {joints}",
                              record_synthetic(muscles, joints, paper, bench, count,
                                               Path(tmp) / f"arm_{muscles}_{joints}")))
    rows: list[dict[str, Any]] = []
    bvls_rows: list[dict[str, Any]] = []
    for label, qps in sequences:
        m, n = qps[0].size
        times, oracle = [], []
        for qp in qps:
            t0 = time.perf_counter()
            oracle.append(bvls(qp))
            times.append(time.perf_counter() - t0)
        b = summary_ms(times)
        bvls_rows.append({"sequence": label, "muscles": m, "joints": n,
                          "p50_ms": round(b["p50_ms"], 3), "p99_ms": round(b["p99_ms"], 3)})
        log(f"{label}: {len(qps)} QPs of {m} muscles / {n} joints; BVLS p50 {b['p50_ms']:.2f} ms")
        for name in solvers:
            row = run_sequence(name, label, qps, oracle, b["p50_ms"], config)
            rows.append(row)
            log(f"  {name:<12} p50 {row['p50_ms']:8.3f}  p99 {row['p99_ms']:8.3f}  max "
                f"{row['max_ms']:8.3f} ms  it {row['mean_iterations']:6.1f}  fail "
                f"{row['failures']}  |da| {row['max_activation_difference']}")
    machine.finish()
    log(f"load average (1 min) at the end: {machine.end}")
    return {"rows": rows, "bvls": bvls_rows, "qps_per_sequence": count,
            "tolerance": TOLERANCE, "crossover": crossover(rows),
            "machine": {**machine.as_dict(), "numpy": np.__version__,
                        **{f"{s}_version": package_version(s) for s in solvers
                           if s != "dual_newton"}}}


def crossover(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per sequence, the fastest solver by p99 among those that solved every QP to 1e-6 of
    BVLS, and the fastest of the controller's three."""
    out = []
    for label in dict.fromkeys(r["sequence"] for r in rows):
        ok = [r for r in rows if r["sequence"] == label and r["failures"] == 0
              and float(r["max_activation_difference"]) <= 1e-6]
        ours = [r for r in ok if r["solver"] in ("daqp", "osqp", "dual_newton")]
        best = min(ok, key=lambda r: r["p99_ms"], default=None)
        best_ours = min(ours, key=lambda r: r["p99_ms"], default=None)
        muscles = next(r["muscles"] for r in rows if r["sequence"] == label)
        out.append({"sequence": label, "muscles": muscles,
                    "fastest": best["solver"] if best else "-",
                    "fastest_runtime_solver": best_ours["solver"] if best_ours else "-"})
    return out


def markdown(result: dict[str, Any], command: str) -> str:
    """The Markdown report: the table, the oracle's times, the machine and the command."""
    mach = result["machine"]
    busy = "" if mach["judged"] else " **The machine was busy: read the ratios, not the times.**"
    versions = ", ".join(f"{k.removesuffix('_version')} {v}" for k, v in mach.items()
                         if k.endswith("_version"))
    lines = [
        "# The QP solvers on the controller's QPs",
        "",
        (f"{result['qps_per_sequence']} consecutive eq. 11 QPs per sequence, one warm-started "
         f"solver object per sequence where the solver allows it; time = one QP from its torque "
         f"balance to the activations (fill, update, solve). Tolerance given to the solvers "
         f"that take one: {result['tolerance']:g}. `max_activation_difference`: largest "
         f"|a - a_BVLS| over the sequence; `speedup_vs_bvls`: BVLS p50 / the solver's p50 in "
         f"the same run."),
        "",
        *markdown_table(result["rows"]),
        "",
        "BVLS (the oracle, `scipy.optimize.lsq_linear(method='bvls')`, the baseline):",
        "",
        *markdown_table(result["bvls"]),
        "",
        "Fastest by p99 among the solvers that solved every QP within 1e-6 of BVLS:",
        "",
        *markdown_table(result["crossover"]),
        "",
        (f"Machine: {mach['cpus']} CPUs, 1-min load average {mach['load_average_start']} at the "
         f"start and {mach['load_average_end']} at the end.{busy} Python {mach['python']}, numpy "
         f"{mach['numpy']}, {versions}."),
        "",
        f"Command: `{command}`",
        "",
    ]
    return "\n".join(lines)
