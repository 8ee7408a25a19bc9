"""The fault matrix: every fault of :data:`~musculo_control.sim.faults.FAULTS` injected into the
supervised closed loop, one run each, against a fault-free run of the same scenario.

Scenario (``reliability.yaml`` key ``faults``): the arm holds its start pose, then its hand goal
moves by ``move_m`` (minimum jerk), so sensors see motion; the fault is active from
``inject_at_s`` for ``duration_s``; a latched fault is acknowledged ``acknowledge_after_s``
after it ends; the run goes on for ``observe_after_s``.

Per fault:

- ``detected``: a safety rule the fault is expected to trip (:class:`FaultKind`) fired;
- ``detection_time_ms``: from the fault's onset (see :mod:`musculo_control.sim.faults`) to the
  first control tick (or 500 Hz driver tick, for the driver's watchdog) that reports it (a late
  input's warning counts: it is reported);
- ``safe_state_ms``: from the onset to the first tick at minimum tension; within the hold
  bound of the input the fault silences (safety.yaml ``inputs``) plus one control period, or
  within the detection target for a fault that is one at once; a warning-only fault (a late
  input within its hold bound, a refused goal) must never reach it;
- ``max_command_N``: the largest tension commanded, by the supervisor's output and by the
  tendon driver to the actuators, over the whole run;
- ``any_nan``: a non-finite value in any of those commands;
- ``hand_speed_max_m_s``, ``hand_drop_m``: what the fault and its stop did to the hand, from
  the onset to the end of the run: its largest speed and how far it fell below where it was;
- ``recovered``: after the fault ended (and was acknowledged, if latched) the loop is back in
  normal control and stays there, and the hand ends within ``recovery_tolerance_m`` of where
  the fault-free run's hand ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec
from musculo_control.control.controller import CONTROLLER_NAMES, make_controller
from musculo_control.control.goal import HandGoal
from musculo_control.control.minimum_jerk import minimum_jerk
from musculo_control.errors import ConfigError
from musculo_control.loop.health import ERROR, WARN
from musculo_control.model.robot import Robot
from musculo_control.sim.faults import (
    FAULT_NAMES,
    FaultInjector,
    InjectionConfig,
    fault_kind,
)
from musculo_control.sim.mock_arm import MockArm
from musculo_control.sim.reliability_config import load_reliability_section
from musculo_control.sim.rig import Rig
from musculo_control.sim.runner import REFUSAL, LoopState
from musculo_control.sim.setup import Setup, check_start_pose, start_pose

FloatArray = npt.NDArray[np.float64]



@dataclass(frozen=True, kw_only=True)
class FaultMatrixConfig:
    """``reliability.yaml`` key ``faults``."""

    controller: str = spec("osc", choices=CONTROLLER_NAMES, doc="controller under test")
    start_pose: str = spec("home", doc="'home' or a named pose of robot.yaml")
    move_m: tuple[float, ...] = spec(length=3, doc="the hand goal moves by this [m]")
    move_start_s: float = spec(ge=0.0, doc="the move starts [s]")
    move_s: float = spec(gt=0.0, doc="the move lasts [s]")
    inject_at_s: float = spec(gt=0.0, doc="the fault starts [s]")
    duration_s: float = spec(gt=0.0, doc="the fault lasts [s]")
    stuck_duration_s: float = spec(gt=0.0, doc="pot_stuck lasts this long instead (a frozen "
                                               "reading shows only as its joint moves) [s]")
    acknowledge_after_s: float = spec(ge=0.0, doc="a latched fault is acknowledged this long "
                                                  "after the fault ends [s]")
    observe_after_s: float = spec(gt=0.0, doc="the run goes on this long after the fault [s]")
    recovery_tolerance_m: float = spec(gt=0.0, doc="recovered: the hand ends this close to "
                                                   "the fault-free run's [m]")
    detection_target_ms: float = spec(gt=0.0, doc="every fault detected within this of its "
                                                  "onset [ms]")
    cases: tuple[str, ...] = spec(FAULT_NAMES, min_length=1, doc="faults to run, in order")
    wall_clock_settle_s: float = spec(5.0, ge=0.0, doc="on the node graph at wall clock: the "
                                      "graph runs this long before the scenario starts, as a "
                                      "lab lets a freshly started graph settle [s]")
    injection: InjectionConfig = spec(doc="magnitudes of the faults")

    def check(self, file: str, key: str) -> None:
        for i, name in enumerate(self.cases):
            if name not in FAULT_NAMES:
                raise ConfigError(file, f"{key}.cases[{i}]", f"a fault of {list(FAULT_NAMES)}",
                                  name)


@dataclass(frozen=True)
class FaultResult:
    """One row of the fault matrix."""

    name: str
    detected: bool
    detection_time_ms: float | None  # from onset; None when not detected
    max_command_N: float
    any_nan: bool
    recovered: bool
    # what else a reader needs to judge the row
    rule: str  # the first expected rule that fired ('' if none)
    message: str  # its message
    injection_to_detection_ms: float | None  # from the start of the injection
    recovery_time_ms: float | None  # fault end -> normal control again
    max_deviation_m: float  # largest hand distance from the fault-free run
    final_error_excess_m: float  # final hand error minus the fault-free run's
    target: str  # the joint or tendon hit ('' for a whole stream)
    alarms_before_injection: int  # ticks not ok before the fault (must be 0)
    safe_ticks: int  # control ticks at minimum tension
    limit_N: float  # the actuator's limit
    target_ms: float  # detection target (reliability.yaml faults.detection_target_ms)
    safe_state_ms: float | None = None  # onset -> first tick of the stop
    safe_target_ms: float | None = None  # ... at the latest; None: never (a warning only)
    hand_speed_max_m_s: float = 0.0  # the hand's largest speed from the onset on
    hand_drop_m: float = 0.0  # how far the hand fell below its height at the onset

    def as_dict(self) -> dict[str, Any]:
        def num(v: float | None, digits: int) -> float | None:
            return None if v is None else round(float(v), digits)

        return {
            "name": self.name, "detected": self.detected,
            "detection_time_ms": num(self.detection_time_ms, 2),
            "max_command_N": round(self.max_command_N, 3), "any_nan": self.any_nan,
            "recovered": self.recovered, "rule": self.rule, "message": self.message,
            "injection_to_detection_ms": num(self.injection_to_detection_ms, 2),
            "recovery_time_ms": num(self.recovery_time_ms, 1),
            "max_deviation_m": round(self.max_deviation_m, 4),
            "final_error_excess_m": round(self.final_error_excess_m, 4), "target": self.target,
            "alarms_before_injection": self.alarms_before_injection,
            "safe_ticks": self.safe_ticks, "limit_N": round(self.limit_N, 3),
            "safe_state_ms": num(self.safe_state_ms, 2),
            "safe_target_ms": num(self.safe_target_ms, 2),
            "hand_speed_max_m_s": round(self.hand_speed_max_m_s, 3),
            "hand_drop_m": round(self.hand_drop_m, 4),
        }

    @property
    def safe_state_in_time(self) -> bool:
        """Minimum tension within its bound, or never for a warning-only fault."""
        if self.safe_target_ms is None:
            return self.safe_ticks == 0
        return self.safe_state_ms is not None and self.safe_state_ms <= self.safe_target_ms

    @property
    def meets_target(self) -> bool:
        return (self.detected and self.detection_time_ms is not None
                and self.detection_time_ms <= self.target_ms and self.safe_state_in_time
                and self.max_command_N <= self.limit_N + 1e-9 and not self.any_nan)


class _Trace:
    """Per control tick: time, hand, safety state, the commanded maximum, finiteness."""

    def __init__(self) -> None:
        self.t: list[float] = []
        self.hand: list[FloatArray] = []
        self.goal: list[FloatArray] = []  # the goal asked for (before any gate or ramp)
        self.ok: list[bool] = []  # supervisor running and driver without fault
        self.rules: list[frozenset[str]] = []
        self.messages: list[dict[str, str]] = []
        self.command_max = 0.0
        self.nonfinite = 0

    def add(self, t: float, hand: FloatArray, goal: FloatArray, ok: bool,
            findings: dict[str, str], tension: FloatArray) -> None:
        self.t.append(t)
        self.hand.append(hand)
        self.goal.append(goal)
        self.ok.append(ok)
        self.rules.append(frozenset(findings))
        self.messages.append(findings)
        top = float(np.max(tension))
        if not (math.isfinite(top) and bool(np.isfinite(tension).all())):
            self.nonfinite += 1
        elif top > self.command_max:
            self.command_max = top


def load_fault_matrix_config(config_dir: Path, robot: Robot,
                             overrides: dict[str, Any] | None = None) -> FaultMatrixConfig:
    """``reliability.yaml`` ``faults``, checked against the robot (joints, start pose)."""
    file = str(Path(config_dir) / "reliability.yaml")
    cfg = load_reliability_section(Path(config_dir), "faults", FaultMatrixConfig, overrides)
    cfg.injection.check_robot(robot, file, "faults.injection")
    check_start_pose(robot, cfg.start_pose, file, "faults.start_pose")
    return cfg


def fault_duration(cfg: FaultMatrixConfig, name: str | None) -> float:
    """How long fault ``name`` is active in the scenario [s]."""
    return cfg.stuck_duration_s if name == "pot_stuck" else cfg.duration_s


def _goal_function(cfg: FaultMatrixConfig, x0: FloatArray,
                   rot0: FloatArray) -> Any:
    end = x0 + np.asarray(cfg.move_m)

    def goal_at(t: float) -> HandGoal:
        pos, vel, acc = minimum_jerk(x0, end, cfg.move_s, t - cfg.move_start_s)
        return HandGoal(pos, vel, acc, rot0)

    return goal_at


def run_case(setup: Setup, cfg: FaultMatrixConfig, name: str | None,
             safety_overrides: dict[str, Any] | None = None) -> tuple[_Trace, dict[str, Any]]:
    """One run of the scenario with fault ``name`` (``None``: fault-free)."""
    rig = Rig(setup, cfg.controller, safety_overrides=safety_overrides)
    robot: Robot = setup.robot
    q0 = start_pose(robot, cfg.start_pose)
    x0, rot0 = rig.robot.arm.hand_pose(q0)
    goal_at = _goal_function(cfg, x0, rot0)
    t_on = cfg.inject_at_s
    t_off = t_on + fault_duration(cfg, name)
    t_ack = t_off + cfg.acknowledge_after_s
    injector = None
    controller = rig.controller
    if name is not None:
        injector = FaultInjector(name, t_on, t_off, cfg.injection, robot, rig.calibration,
                                 rig.mock.dt_s, setup.experiments.runner.transport_delay_s,
                                 tension_limit_n=rig.tension_limit_n)
        controller = injector.wrap(rig.controller)
        rig.mock.fault_hook = injector
    loop = rig.loop(controller, injector)
    if injector is not None and injector.kind.layer == "authority":
        loop.watch_writers(rig.parts.safety.authority)  # the graph's publisher lists
    loop.reset(q0, goal_at(0.0))
    supervisor = rig.supervisor
    trace = _Trace()
    extra: dict[str, Any] = {"watchdog_t": None, "watchdog_msg": "", "acknowledged": (),
                             "limit_N": rig.tension_limit_n, "injector": injector,
                             "safe_bounds": safe_bounds(rig.safety_config,
                                                        rig.parts.controller.loop)}

    def on_control(state: LoopState) -> None:
        report = supervisor.report
        driver_out = loop.driver_output
        driver_ok = driver_out is None or driver_out.ok
        findings = {} if report is None else {
            f.rule: f.message for f in (*report.faults, *report.warnings, *report.latched)}
        ok = report is not None and report.ok and driver_ok
        if state.output is not None:
            trace.add(state.t_s, rig.mock.hand_position_m, goal_at(state.t_s).position_m, ok,
                      findings, state.output.tension_n)

    def hook(t: float, mock: MockArm) -> None:
        out = loop.driver_output
        if out is not None and (not out.ok or out.late) and extra["watchdog_t"] is None \
                and t >= t_on:
            extra["watchdog_t"] = t
            extra["watchdog_msg"] = "; ".join(out.faults or out.late)
            extra["watchdog_rule"] = "command_watchdog" if out.faults else "command_late"
        if out is not None and not out.ok and extra.get("driver_safe_t") is None and t >= t_on:
            extra["driver_safe_t"] = t
        if injector is not None and injector.kind.layer == "operator":
            stop = injector.operator_stop(injector.origin_s + t)
            if stop != loop.step.stopped:  # set, then released, as an operator's two calls
                loop.operator_stop(stop, "operator stop (fault matrix)")
        if name is not None and extra["acknowledged"] == () and t >= t_ack:
            extra["acknowledged"] = supervisor.acknowledge() or ("nothing latched",)

    loop.run(t_off + cfg.observe_after_s, goal_at, hook=hook, on_control=on_control)
    extra["health_log"] = list(loop.health_log)
    extra["sent_max_n"] = loop.sent_max_n
    extra["sent_nonfinite"] = loop.sent_nonfinite
    # samples of a stray writer refused by their stage (watch_writers)
    extra["foreign_refused"] = {"tendon driver": loop.tendons.foreign_refused,
                                "mock arm": loop.mock_stage.foreign_refused}
    return trace, extra


def safe_bounds(safety: Any, loop: Any) -> dict[str, float]:
    """Per input of safety.yaml ``inputs``: its hold bound plus one control period [ms], the
    latest a silenced input may bring the safe state (``""``: one control period)."""
    period_ms = 1e3 / loop.control_rate_hz
    bounds = {name: 1e3 * getattr(safety.inputs, name).hold_s + period_ms
              for name in ("joint_state", "tendon_state", "driver_output", "muscle_commands",
                           "snapshot")}
    return {**bounds, "": period_ms}


def safe_target_ms(kind: Any, cfg: FaultMatrixConfig, bounds: dict[str, float]) -> float | None:
    """The latest onset-to-minimum-tension time for fault ``kind`` [ms] (``None``: never)."""
    if not kind.safe_state:
        return None
    if not kind.hold:
        return cfg.detection_target_ms
    return bounds[kind.hold]


def evaluate(name: str, cfg: FaultMatrixConfig, trace: _Trace, extra: dict[str, Any],
             baseline: _Trace) -> FaultResult:
    """Score one faulty run against the fault-free one."""
    kind = fault_kind(name)
    t = np.asarray(trace.t)
    t_on = cfg.inject_at_s
    t_off = t_on + fault_duration(cfg, name)
    injector = extra["injector"]
    onset = injector.onset_s if injector is not None and injector.onset_s is not None else t_on
    detect_t, rule, message = None, "", ""
    for ti, msgs in zip(trace.t, trace.messages):
        if ti < t_on:
            continue
        hit = [r for r in kind.expected_rules if r in msgs]
        if hit:
            detect_t, rule, message = ti, hit[0], msgs[hit[0]]
            break
    if extra["watchdog_t"] is not None and extra.get("watchdog_rule") in kind.expected_rules \
            and (detect_t is None or extra["watchdog_t"] < detect_t):
        detect_t, rule, message = extra["watchdog_t"], extra["watchdog_rule"], \
            extra["watchdog_msg"]
    # a stage that says so itself (its node's /diagnostics): a warning or an error, or a
    # refused message
    for event in extra.get("health_log", ()):
        if event.t_s < onset or (detect_t is not None and event.t_s >= detect_t):
            continue
        if event.stage in kind.stages and event.level in (WARN, ERROR, REFUSAL):
            detect_t, rule, message = event.t_s, event.stage, event.message
            break
    ok = np.asarray(trace.ok)
    unsafe = np.flatnonzero((t >= onset) & ~ok)
    safe_t = float(t[unsafe[0]]) if unsafe.size else None
    driver_safe_t = extra.get("driver_safe_t")
    if driver_safe_t is not None and (safe_t is None or driver_safe_t < safe_t):
        safe_t = driver_safe_t
    back = None
    after = np.flatnonzero(t >= t_off)
    if after.size and ok[after[-1]]:
        not_ok = after[~ok[after]]
        first_good = after[0] if not_ok.size == 0 else not_ok[-1] + 1
        back = float(t[first_good])
    hand = np.asarray(trace.hand)
    base = np.asarray(baseline.hand)
    n = min(len(hand), len(base))
    dev = np.linalg.norm(hand[:n] - base[:n], axis=1)
    # the arm is redundant: after a fall it may hold another posture, whose steady error
    # differs; recovered means as close to the goal as the fault-free run, within tolerance
    err = np.linalg.norm(hand[n - 1] - trace.goal[n - 1])
    err_base = np.linalg.norm(base[n - 1] - baseline.goal[n - 1])
    final_excess = float(err - err_base)
    recovered = back is not None and final_excess <= cfg.recovery_tolerance_m
    speed, drop = hand_after(t, hand, onset)
    command_max = max(trace.command_max, extra["sent_max_n"])
    any_nan = trace.nonfinite > 0 or extra["sent_nonfinite"] > 0
    return FaultResult(
        name=name, detected=detect_t is not None,
        detection_time_ms=None if detect_t is None else (detect_t - onset) * 1e3,
        max_command_N=command_max, any_nan=any_nan, recovered=recovered, rule=rule,
        message=message,
        injection_to_detection_ms=None if detect_t is None else (detect_t - t_on) * 1e3,
        recovery_time_ms=None if back is None else (back - t_off) * 1e3,
        max_deviation_m=float(dev.max()), final_error_excess_m=final_excess,
        target=injector.target if injector is not None else "",
        alarms_before_injection=int(np.count_nonzero(~ok[t < t_on])),
        safe_ticks=int(np.count_nonzero(~ok)), limit_N=extra["limit_N"],
        target_ms=cfg.detection_target_ms,
        safe_state_ms=None if safe_t is None else (safe_t - onset) * 1e3,
        safe_target_ms=safe_target_ms(kind, cfg, extra["safe_bounds"]),
        hand_speed_max_m_s=speed, hand_drop_m=drop)


def hand_after(t: FloatArray, hand: FloatArray, onset: float) -> tuple[float, float]:
    """The hand's largest speed [m/s] and its largest fall below its height at ``onset`` [m],
    from the onset on (per control tick)."""
    i0 = int(np.searchsorted(t, onset))
    if i0 >= len(t) - 1:
        return 0.0, 0.0
    path = hand[i0:]
    speed = np.linalg.norm(np.diff(path, axis=0), axis=1) / np.diff(t[i0:])
    return float(speed.max()), float(max(path[0, 2] - path[:, 2].min(), 0.0))


def run_matrix(setup: Setup, cfg: FaultMatrixConfig,
               safety_overrides: dict[str, Any] | None = None,
               progress: bool = False) -> tuple[list[FaultResult], dict[str, Any]]:
    """Every case of ``cfg`` against one fault-free run; returns the rows and the baseline's
    figures (alarms and largest command of the fault-free run)."""
    import sys

    baseline, base_extra = run_case(setup, cfg, None, safety_overrides)
    base_info = {
        "alarms": int(np.count_nonzero(~np.asarray(baseline.ok))),
        "max_command_N": round(max(baseline.command_max, base_extra["sent_max_n"]), 3),
        "limit_N": round(base_extra["limit_N"], 3),
    }
    results = []
    has_qp = hasattr(make_controller(cfg.controller, setup.robot, setup.controller_config), "qp")
    for name in cfg.cases:
        if name == "qp_failure" and not has_qp:
            if progress:
                print(f"  {name}: skipped, {cfg.controller} solves no QP", file=sys.stderr)
            continue
        trace, extra = run_case(setup, cfg, name, safety_overrides)
        result = evaluate(name, cfg, trace, extra, baseline)
        results.append(result)
        if progress:
            after = ("-" if result.detection_time_ms is None
                     else f"{result.detection_time_ms:.1f}")  # 0.1 ms: a tenth of a step
            print(f"  {name}: detected={result.detected} t={after} ms "
                  f"recovered={result.recovered}", file=sys.stderr, flush=True)
    return results, base_info


def matrix_markdown(results: list[FaultResult]) -> str:
    """The fault matrix as a Markdown table."""
    lines = ["| fault | detected by | detection [ms] | from injection [ms] "
             "| stop after [ms] (bound) | max command [N] "
             "| NaN | recovered | recovery [ms] | max hand deviation [cm] "
             "| hand: max speed [m/s], drop [cm] |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        def ms(v: float | None) -> str:
            return "-" if v is None else f"{v:.1f}"

        bound = "never" if r.safe_target_ms is None else f"<= {r.safe_target_ms:.0f}"
        safe = f"{ms(r.safe_state_ms)} ({bound})"
        if not r.safe_state_in_time:
            safe = f"**{safe}**"
        lines.append(f"| `{r.name}`{' (' + r.target + ')' if r.target else ''} | "
                     f"{r.rule or '**not detected**'} | "
                     f"{ms(r.detection_time_ms)} | {ms(r.injection_to_detection_ms)} | {safe} | "
                     f"{r.max_command_N:.1f} | {'yes' if r.any_nan else 'no'} | "
                     f"{'yes' if r.recovered else '**no**'} | {ms(r.recovery_time_ms)} | "
                     f"{100 * r.max_deviation_m:.1f} | "
                     f"{r.hand_speed_max_m_s:.2f}, {100 * r.hand_drop_m:.1f} |")
    return "\n".join(lines) + "\n"


def comparison_markdown(runner: list[FaultResult], graph: list[FaultResult]) -> str:
    """The matrix of the ROS-free runner and of the node graph side by side (same faults)."""
    by_name = {r.name: r for r in graph}

    def cell(r: FaultResult | None) -> str:
        if r is None:
            return "- | - | -"
        t = "-" if r.detection_time_ms is None else f"{r.detection_time_ms:.0f}"
        return (f"{r.rule or '**not detected**'} | {t} | "
                f"{'yes' if r.recovered else '**no**'}")

    lines = ["| fault | runner: detected by | [ms] | recovered | node graph: detected by | [ms] "
             "| recovered | graph: max on hw/tendon_commands [N], NaN |",
             "|---|---|---|---|---|---|---|---|"]
    for r in runner:
        g = by_name.get(r.name)
        sent = "-" if g is None else f"{g.max_command_N:.0f}, {'yes' if g.any_nan else 'no'}"
        lines.append(f"| `{r.name}` | {cell(r)} | {cell(g)} | {sent} |")
    return "\n".join(lines) + "\n"

