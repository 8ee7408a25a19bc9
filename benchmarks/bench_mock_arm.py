"""Benchmark of the mock arm and the hardware logic at a 1 kHz physics step, 18 tendons.

Cases (per call; p50 / p99 / max), with the bare ``mujoco.mj_step`` of the same model measured in
the same run as a baseline:

- ``MockArm.step`` (actuator lag, motor envelope, MuJoCo step);
- one 500 Hz sensor tick: read potentiometers and tendons, potentiometer reader, tendon driver
  read, command and output, ``set_command``;
- the hardware loop of one simulated second (1000 steps + 500 sensor ticks), as a real-time factor.

The ROS-free runner needs the whole loop (this plus dynamics and QP) >= 10x faster than real time.
Prints the load average before and after; the figures are only comparable on a quiet machine.

    python benchmarks/bench_mock_arm.py [--config DIR] [--count N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import mujoco
import numpy as np

from musculo_control.hardware.drivers import load_drivers
from musculo_control.model.robot import load_robot
from musculo_control.paths import default_config_dir
from musculo_control.sim.mock_arm import load_mock_arm
from musculo_control.tick_benchmark.config import load_bench_config
from musculo_control.tick_benchmark.measure import (
    MachineLoad,
    markdown_table,
    positive_int,
    summary_ms,
    time_calls,
    write_reports,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--count", type=positive_int, default=20000, help="timed calls per case")
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    args = parser.parse_args()
    machine = MachineLoad(load_bench_config(args.config).quiet_load_average)
    print(f"load average (1 min) at the start: {machine.start}")

    robot = load_robot(args.config)
    arm = load_mock_arm(robot)
    drivers = load_drivers(robot)  # as every loader builds them (hardware.yaml, robot.yaml)
    reader, driver = drivers.potentiometers, drivers.tendons
    tension = np.full(arm.m, 20.0)

    def restart() -> None:
        arm.reset(robot.home_pose_rad, 20.0)
        arm.set_command(arm.calibration.n_to_driver(tension))
        reader.reset()
        driver.reset()

    def step(i: int) -> None:
        if i % 2000 == 0:  # keep the arm in a sane state over long runs
            restart()
        arm.step()

    def tick(i: int) -> None:
        t = arm.time_s + i * 0.002
        reader.update(arm.read_potentiometers(), t)
        enc, cell = arm.read_tendons()
        driver.read(enc, cell, t)
        driver.command(tension, t)
        arm.set_command(driver.output(t).units)

    def bare(i: int) -> None:
        mujoco.mj_step(arm.model, arm.data)

    rows = []
    for name, fn in (("MockArm.step", step), ("500 Hz sensor tick + driver", tick),
                     ("bare mujoco.mj_step", bare)):
        restart()
        stats = summary_ms(time_calls(fn, args.count))
        rows.append({"case": name, **stats})
        print(f"{name:<30} p50 {stats['p50_ms']:.4f} ms  p99 {stats['p99_ms']:.4f} ms  "
              f"max {stats['max_ms']:.3f} ms")

    restart()
    seconds = 5
    t0 = time.perf_counter()
    for k in range(seconds * 1000):
        if k % 2 == 0:
            tick(0)
        arm.step()
    wall = time.perf_counter() - t0
    factor = seconds / wall
    steps_per_s = seconds * 1000 / wall
    print(f"hardware loop (1 kHz physics + 500 Hz sensors/driver): {steps_per_s:.0f} steps/s, "
          f"{factor:.1f}x real time")
    machine.finish()
    overhead = rows[0]["p50_ms"] / rows[2]["p50_ms"]
    notes = [(f"hardware loop: {steps_per_s:.0f} steps/s = {factor:.1f}x real time "
              f"(1 kHz physics, 500 Hz sensor tick and driver)"),
             f"MockArm.step costs {overhead:.2f}x a bare mj_step (p50, same run)",
             f"{robot.n_muscles} tendons, {robot.arm.n_joints} joints, {args.count} calls; "
             f"{machine.describe()}"]
    for note in notes[1:]:
        print(note)
    text = "\n".join(["# Mock arm benchmark", "", *markdown_table(rows), "",
                      *[f"- {n}" for n in notes], ""])
    paths = write_reports(args.out, "bench_mock_arm", rows, text,
                          {"rows": rows, "steps_per_s": steps_per_s, "real_time_factor": factor,
                           "machine": machine.as_dict()})
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
