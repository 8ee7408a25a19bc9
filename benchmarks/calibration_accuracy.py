"""How well ``musculo calibrate``'s procedure recovers the offsets the mock arm hides.

For each seed: the mock arm with hidden potentiometer, encoder and load-cell offset errors
(``mock_arm.yaml`` ``sensors``), the procedure of hardware.yaml ``calibration_procedure`` run on
it without ROS, and the largest difference between what it measured and what the mock drew
(which the procedure never sees); the signs it could check, the sign fit's factors, the
smallest pulled-tendon motion, arm and wall time. doc/calibration.md shows a run.

    python benchmarks/calibration_accuracy.py [--config DIR] [--seeds N] [--pot E] [--enc E]
                                              [--cell E]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from musculo_control.hardware.calibration import load_calibration
from musculo_control.hardware.calibrator import Calibrator
from musculo_control.hardware.drivers import read_hardware
from musculo_control.model.robot import load_robot
from musculo_control.paths import default_config_dir
from musculo_control.sim.calibration_run import calibrate_on_mock
from musculo_control.sim.mock_arm import MockArm, load_mock_config


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default=None, help="config folder (default: the shipped arm)")
    p.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    p.add_argument("--pot", type=float, default=40.0, help="hidden pot offset error [counts]")
    p.add_argument("--enc", type=float, default=500.0, help="hidden encoder offset error [counts]")
    p.add_argument("--cell", type=float, default=50.0, help="hidden load-cell zero error [counts]")
    args = p.parse_args()
    folder = default_config_dir() if args.config is None else args.config
    robot = load_robot(folder)
    hw = read_hardware(robot.config_dir / "hardware.yaml", robot.hill.f_min_n)
    cal = load_calibration(robot, robot.config_dir / "hardware.yaml")
    cfg = load_mock_config(robot, robot.config_dir / "mock_arm.yaml")
    sensors = dataclasses.replace(cfg.sensors, potentiometer_offset_error_counts=args.pot,
                                  encoder_offset_error_counts=args.enc,
                                  loadcell_offset_error_counts=args.cell)
    cfg = dataclasses.replace(cfg, sensors=sensors)
    print("| seed | pot error | encoder error | load-cell error | signs checked (pots, "
          "tendons) | fit factors | smallest motion [mm] | arm / wall time [s] |")
    print("|---|---|---|---|---|---|---|---|")
    for seed in range(args.seeds):
        mock = MockArm(robot, cal, cfg, seed)
        c = Calibrator(robot, cal, hw.calibration_procedure,
                       driver_max_tension_n=hw.driver.max_tension_n)
        t0 = time.perf_counter()
        calibrate_on_mock(mock, c, hw.rates.sensor_rate_hz)
        wall = time.perf_counter() - t0
        r = c.result()
        d = mock.drawn()
        err = [np.abs(got - conf - np.asarray(d[key])).max() for got, conf, key in (
            (r.pot_offset_counts, cal.pot_offset_counts, "potentiometer_offset_error_counts"),
            (r.encoder_offset_counts, cal.encoder_offset_counts, "encoder_offset_error_counts"),
            (r.loadcell_offset_counts, cal.loadcell_offset_counts,
             "loadcell_offset_error_counts"))]
        fit = f"{np.nanmin(r.pot_sign_fit):.2f}-{np.nanmax(r.pot_sign_fit):.2f}"
        print(f"| {seed} | {err[0]:.2f} | {err[1]:.2f} | {err[2]:.2f} | "
              f"{r.pot_sign_checked.sum()}/{robot.arm.n_joints}, "
              f"{r.encoder_sign_checked.sum()}/{robot.n_muscles} | {fit} | "
              f"{np.abs(r.shortening_m).min() * 1e3:.3f} | {mock.time_s:.1f} / {wall:.1f} |")


if __name__ == "__main__":
    main()
