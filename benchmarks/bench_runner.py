"""Benchmark of the ROS-free closed loop (sim/runner.py): speed against real time, and where the
time goes, part by part.

Runs experiment B (``run_trajectory``, controller ``osc``, first start pose) ``--repeat`` times
and measures, over the simulated seconds after start-up:

- the loop's process CPU time per simulated second and its real-time factor (CPU and wall);
- per part, the CPU-free wall time of every call (``perf_counter`` around it; the median call
  resists preemption on a loaded machine) and the part's total, in microseconds per simulated
  second: physics (MockStage.step), sensors (MockStage.sense), potentiometer stage, tendon
  stage read, tendon driver (command + output), dynamics snapshot, the control tick split into
  tendon monitor, supervisor, controller and step bookkeeping, goal, recording, and the
  runner itself (the rest);
- baseline, in the same run: the bare ``mujoco.mj_step`` of the same model, 1000 steps per
  simulated second: the floor of any loop that steps this physics at 1 kHz. The loop's cost is
  printed as a multiple of it.

Per-part timing wraps each method in a timer (one ``perf_counter`` pair per call), which
itself adds cost: the real-time factor is taken from an unwrapped run first.

    python benchmarks/bench_runner.py [--config DIR] [--repeat N] [--out DIR] [--set F.K=V ...]

``--set`` changes the config as ``musculo simulate`` does (e.g. the mock wires' elasticity,
``--set mock_arm.tendon.axial_stiffness_n=1.2e5``).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from musculo_control.control.tick_base import TickBase
from musculo_control.loop.control_step import ControlStep
from musculo_control.loop.dynamics_stage import DynamicsStage
from musculo_control.loop.potentiometer_stage import PotentiometerStage
from musculo_control.loop.tendon_stage import TendonStage
from musculo_control.paths import default_config_dir
from musculo_control.safety.supervisor import Supervisor
from musculo_control.sim import experiments as ex
from musculo_control.sim.mock_stage import MockStage
from musculo_control.sim.runner import ClosedLoop
from musculo_control.sim.setup import Overrides, Setup, experiment_config, load_setup
from musculo_control.tick_benchmark.config import load_bench_config
from musculo_control.tick_benchmark.measure import (
    MachineLoad,
    markdown_table,
    positive_int,
    summary_ms,
    write_reports,
)

#: (part, class, method): what is timed. Nested calls (the controller inside the supervisor,
#: both inside the control step) are subtracted from the outer part.
PARTS: tuple[tuple[str, type, str], ...] = (
    ("physics (MockStage.step)", MockStage, "step"),
    ("sensors (MockStage.sense)", MockStage, "sense"),
    ("potentiometer stage", PotentiometerStage, "receive"),
    ("potentiometer stage", PotentiometerStage, "check"),
    ("tendon stage: read", TendonStage, "receive_state"),
    ("tendon stage: driver", TendonStage, "receive_command"),
    ("tendon stage: driver", TendonStage, "output"),
    ("dynamics stage", DynamicsStage, "tick"),
    ("dynamics stage", DynamicsStage, "receive_joints"),
    ("control: tendon monitor", ControlStep, "_feed_monitor"),
    ("control: step", ControlStep, "tick"),
    ("control: step", ControlStep, "receive_joints"),
    ("control: step", ControlStep, "receive_tendons"),
    ("control: step", ControlStep, "receive_sent"),
    ("control: step", ControlStep, "receive_snapshot"),
    ("control: step", ControlStep, "offer_goal"),
    ("control: supervisor", Supervisor, "tick"),
    ("control: controller", TickBase, "tick"),
    ("goal and recording (experiment)", ex.Bench, "record"),
)
#: inner part -> the part it runs inside (its time is subtracted there)
NESTED = {"control: tendon monitor": "control: step", "control: supervisor": "control: step",
          "control: controller": "control: supervisor"}


class Timers:
    """Per-part call durations while :attr:`on`."""

    def __init__(self) -> None:
        self.on = False
        self.calls: dict[str, list[float]] = {}

    def wrap(self, part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        clock = time.perf_counter
        samples = self.calls.setdefault(part + f" [{fn.__qualname__}]", [])

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.on:
                return fn(*args, **kwargs)
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                samples.append(clock() - t0)
        return timed


def _family(cls: type) -> list[type]:
    """``cls`` and every subclass of it (a subclass may override the timed method)."""
    out = [cls]
    for sub in cls.__subclasses__():
        out += _family(sub)
    return out


def _install(timers: Timers) -> Callable[[], None]:
    """Wrap every method of :data:`PARTS` (and ClosedLoop.run, to time only after start-up);
    returns the function that undoes it."""
    saved = []
    for part, cls, name in PARTS:
        for klass in _family(cls):
            if name in vars(klass):
                saved.append((klass, name, vars(klass)[name]))
                setattr(klass, name, timers.wrap(part, vars(klass)[name]))
    run = ClosedLoop.run

    def timed_run(self: ClosedLoop, *args: Any, **kwargs: Any) -> float:
        timers.on = True
        try:
            return run(self, *args, **kwargs)
        finally:
            timers.on = False
    saved.append((ClosedLoop, "run", run))
    ClosedLoop.run = timed_run  # type: ignore[method-assign]

    def undo() -> None:
        for klass, name, fn in saved:
            setattr(klass, name, fn)
    return undo


def _run(setup: Setup, pose: str) -> tuple[float, float, float]:
    """(simulated s, CPU s, wall s) of the loop after start-up (ClosedLoop.run only)."""
    spent: dict[str, float] = {}
    run = ClosedLoop.run

    def measured(self: ClosedLoop, *args: Any, **kwargs: Any) -> float:
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            return run(self, *args, **kwargs)
        finally:
            spent["cpu"] = time.process_time() - c0
            spent["wall"] = time.perf_counter() - w0
    ClosedLoop.run = measured  # type: ignore[method-assign]
    try:
        result = ex.run_trajectory(setup, "osc", pose)
    finally:
        ClosedLoop.run = run  # type: ignore[method-assign]
    return result.simulated_s, spent["cpu"], spent["wall"]


def _bare_step_s(setup: Setup, steps: int) -> tuple[float, np.ndarray]:
    """(CPU s per step, wall s of each step) of the bare mj_step of the mock's model."""
    bench = ex.Bench(setup, "osc")
    model, data = bench.mock.model, mujoco.MjData(bench.mock.model)
    data.qpos[:] = bench.mock.data.qpos
    samples = np.empty(steps)
    clock = time.perf_counter
    c0 = time.process_time()
    for i in range(steps):
        t0 = clock()
        mujoco.mj_step(model, data)
        samples[i] = clock() - t0
    return (time.process_time() - c0) / steps, samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--repeat", type=positive_int, default=2,
                        help="runs of experiment B per measurement (default 2)")
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="FILE.KEY=VALUE", help="config override (repeatable)")
    args = parser.parse_args()
    machine = MachineLoad(load_bench_config(args.config).quiet_load_average)
    print(f"load average (1 min) at the start: {machine.start}")
    setup = load_setup(args.config, Overrides.parse(args.overrides))
    pose = experiment_config(setup, "trajectory").start_poses[0]
    rate = 1.0 / ex.Bench(setup, "osc").mock.dt_s  # physics steps per simulated second

    bare_cpu_s, bare_wall = _bare_step_s(setup, 20000)
    bare_us = bare_cpu_s * rate * 1e6  # per simulated second
    print(f"baseline: bare mujoco.mj_step {bare_cpu_s * 1e6:.1f} us CPU per step = "
          f"{bare_us / 1e3:.1f} ms per simulated second", flush=True)

    sim = cpu = wall = 0.0
    for i in range(args.repeat):
        s, c, w = _run(setup, pose)
        sim, cpu, wall = sim + s, cpu + c, wall + w
        print(f"run {i + 1}: {s:.0f} s simulated, {c:.2f} s CPU, {w:.2f} s wall", flush=True)
    cpu_us = cpu / sim * 1e6
    print(f"closed loop: {cpu_us / 1e3:.1f} ms CPU per simulated second = {sim / cpu:.1f}x real "
          f"time by CPU ({sim / wall:.1f}x by wall clock); {cpu_us / bare_us:.1f}x the bare "
          f"physics", flush=True)

    timers = Timers()
    undo = _install(timers)
    try:
        t_sim = t_cpu = 0.0
        for _ in range(args.repeat):
            s, c, _w = _run(setup, pose)
            t_sim, t_cpu = t_sim + s, t_cpu + c
    finally:
        undo()
    machine.finish()

    # per part: median call x calls (a preempted call lands in the tail, not in the median)
    totals: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    for key, samples in timers.calls.items():
        if not samples:
            continue
        part = key.partition(" [")[0]
        stats = summary_ms(samples)
        typical = stats["p50_ms"] * 1e-3 * len(samples)  # [s]
        totals[part] = totals.get(part, 0.0) + typical
        rows.append({"case": key, "calls_per_sim_s": round(len(samples) / t_sim, 1),
                     "p50_us": round(stats["p50_ms"] * 1e3, 2),
                     "p99_us": round(stats["p99_ms"] * 1e3, 2),
                     "max_us": round(stats["max_ms"] * 1e3, 1),
                     "us_per_sim_s": round(typical / t_sim * 1e6)})
    exclusive = dict(totals)
    for inner, outer in NESTED.items():
        if inner in exclusive and outer in exclusive:
            exclusive[outer] -= totals[inner]
    per_sim = {part: v / t_sim for part, v in exclusive.items()}
    # the unwrapped run's CPU minus the parts: the runner's own loop (delay lines, modulo
    # tests, the experiment's goal function)
    per_sim["runner, goal function (the rest)"] = cpu / sim - sum(per_sim.values())
    bare = summary_ms(bare_wall)
    rows.append({"case": "baseline: bare mujoco.mj_step", "calls_per_sim_s": rate,
                 "p50_us": round(bare["p50_ms"] * 1e3, 2), "p99_us": round(bare["p99_ms"] * 1e3, 2),
                 "max_us": round(bare["max_ms"] * 1e3, 1), "us_per_sim_s": round(bare_us)})
    parts = [{"part": part, "us_per_sim_s": round(v * 1e6),
              "share": f"{100 * v * sim / cpu:.0f} %"} for part, v in per_sim.items()]
    notes = [f"closed loop (unwrapped): {cpu_us / 1e3:.1f} ms CPU per simulated second, "
             f"{sim / cpu:.1f}x real time by CPU, {sim / wall:.1f}x by wall clock",
             f"baseline in the same run: bare mj_step {bare_us / 1e3:.1f} ms per simulated "
             f"second; the loop costs {cpu_us / bare_us:.1f}x that",
             f"timed run (every part wrapped): {t_cpu / t_sim * 1e3:.1f} ms CPU per simulated "
             f"second",
             f"experiment B from {pose}, {args.repeat} run(s), {sim:.0f} s simulated; "
             f"{machine.describe()}",
             *([f"overrides: {', '.join(args.overrides)}"] if args.overrides else [])]
    text = "\n".join(["# Closed-loop runner benchmark", "", *markdown_table(parts), "",
                      *markdown_table(rows), "", *[f"- {n}" for n in notes], ""])
    print(text)
    paths = write_reports(args.out, "bench_runner", rows, text,
                          {"rows": rows, "parts": parts, "cpu_us_per_sim_s": cpu_us,
                           "real_time_factor_cpu": sim / cpu, "real_time_factor_wall": sim / wall,
                           "bare_step_us_per_sim_s": bare_us, "overrides": args.overrides,
                           "machine": machine.as_dict()})
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
