"""``musculo calibrate``: measure hardware.yaml's calibration on the arm (doc/calibration.md).

Records the raw sensors with the arm held at the calibration pose (tendons slack, then taut),
then lets it go and pulls each tendon a little to check the signs; writes the ``calibration``
block with the measured offsets and signs into a copy of the hardware file (``--out``), or into
the file itself after a backup (``--write``). Over the node graph (the raw hw/ topics; the tendon
driver must not be running) or, with ``--sim``, on the mock arm without ROS.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from musculo_control.commands.checks import writable_file
from musculo_control.commands.options import add_common, setup_from_args
from musculo_control.config.parser import read_yaml
from musculo_control.errors import ConfigError, InputError
from musculo_control.hardware.calibration import Calibration, load_calibration
from musculo_control.hardware.calibration_file import calibration_text, describe_result
from musculo_control.hardware.calibrator import CalibrationRefused, Calibrator
from musculo_control.hardware.drivers import read_hardware
from musculo_control.model.robot import Robot
from musculo_control.paths import default_config_dir
from musculo_control.sim.mock_arm import MockArm


def add_parser(sub: Any) -> None:
    p = sub.add_parser("calibrate", help="measure hardware.yaml's calibration (pot and encoder "
                                         "offsets, load-cell zeros, signs) on the arm",
                       description=__doc__.split("\n\n")[1])
    add_common(p)
    p.add_argument("--hardware", type=Path, default=None, metavar="FILE",
                   help="the hardware file to start from and to write (default: the config "
                        "folder's hardware.yaml)")
    p.add_argument("--out", type=Path, default=Path("out/hardware.yaml"), metavar="FILE",
                   help="write the hardware file with the measured calibration here (default: "
                        "out/hardware.yaml)")
    p.add_argument("--write", action="store_true",
                   help="replace the calibration block of the hardware file itself, after "
                        "copying it to FILE.<UTC time>.bak")
    p.add_argument("--sim", action="store_true",
                   help="calibrate the mock arm, without ROS (its hidden errors: --set "
                        "mock_arm.sensors.encoder_offset_error_counts=E and the like)")
    p.add_argument("--sim-pose", default=None, metavar="Q",
                   help="with --sim: hold the mock arm here instead of the calibration pose "
                        "(comma-separated angles [rad]), to see the procedure refuse")
    p.add_argument("--yes", action="store_true",
                   help="over the graph: do not wait for Enter before the pulls (the arm is "
                        "let go, e.g. the mock arm)")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="over the graph: wait this long for the raw topics [s] (default 10)")
    p.set_defaults(func=run)


def _pose(text: str, n: int) -> np.ndarray:
    try:
        q = np.array([float(v) for v in text.split(",")])
    except ValueError:
        raise InputError("--sim-pose", f"{n} comma-separated angles [rad]", text) from None
    if q.shape != (n,):
        raise InputError("--sim-pose", f"{n} comma-separated angles [rad]", text)
    return q


def run(args: argparse.Namespace) -> int:
    folder = args.config or default_config_dir()
    hardware = args.hardware or folder / "hardware.yaml"
    if args.write and args.hardware is None and args.sim:
        print("musculo calibrate: note: --sim --write writes the config folder's own "
              "hardware.yaml (a backup is kept)", file=sys.stderr)
    if not args.write:
        writable_file(args.out, "--out")
    setup = setup_from_args(args)
    robot = setup.robot
    hw = read_hardware(hardware, robot.hill.f_min_n, robot.robot_file)
    calibration = load_calibration(robot, hardware)
    calibrator = Calibrator(robot, calibration, hw.calibration_procedure, str(hardware),
                            driver_max_tension_n=hw.driver.max_tension_n)
    print(f"calibrating {len(robot.arm.joint_names)} joints and {robot.n_muscles} tendons "
          f"({calibrator.duration_s():.0f} s; commands at most "
          f"{hw.calibration_procedure.max_tension_n:g} N) from {hardware}", flush=True)
    if args.sim:
        from musculo_control.sim.calibration_run import calibrate_on_mock

        # the mock's truth is the config folder's own hardware.yaml plus its hidden errors
        truth = load_calibration(robot, folder / "hardware.yaml")
        mock = MockArm(robot, truth, setup.mock_config, file=str(folder / "mock_arm.yaml"))
        hold = None if args.sim_pose is None else _pose(args.sim_pose, robot.arm.n_joints)
        calibrate_on_mock(mock, calibrator, hw.rates.sensor_rate_hz, hold, str(hardware))
    else:
        try:
            from musculo_control.nodes.calibration_client import calibrate_over_graph
        except ImportError as exc:
            raise SystemExit(f"musculo calibrate needs rclpy over the graph ({exc}); install "
                             "with: pip install -e '.[ros]', or use --sim") from exc
        calibrate_over_graph(robot, calibrator, args.timeout, wait_for_user=not args.yes)
    try:
        result = calibrator.result()
    except CalibrationRefused as exc:
        print("musculo calibrate: refused, nothing written:\n  " + "\n  ".join(exc.problems),
              file=sys.stderr)
        return 1
    for line in describe_result(calibration, result):
        print(line)
    for line in result.warnings:
        print(f"warning: {line}")
    stamp = datetime.datetime.now(datetime.timezone.utc)
    text = _new_text(robot, hardware, calibration, result, stamp)
    target = hardware if args.write else args.out
    if args.write:
        backup = hardware.with_name(f"{hardware.name}.{stamp:%Y%m%dT%H%M%SZ}.bak")
        shutil.copy2(hardware, backup)
        print(f"backup of {hardware}: {backup}")
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote the measured calibration to {target}")
    return 0


def _new_text(robot: Robot, hardware: Path, calibration: Calibration, result: Any,
              stamp: datetime.datetime) -> str:
    """The hardware file with the new calibration block, checked by loading it back."""
    raw = read_yaml(hardware)
    section = raw.get("calibration") if isinstance(raw, dict) else None
    if not isinstance(section, dict):
        raise ConfigError(str(hardware), "calibration", "a mapping", section)
    header = f"{stamp:%Y-%m-%d %H:%M} UTC: offsets, zeros and signs; gains as configured"
    text = calibration_text(hardware.read_text(encoding="utf-8"), section, calibration, result,
                            header, str(hardware))
    with tempfile.TemporaryDirectory(prefix="musculo_calibrate_") as tmp:
        check = Path(tmp) / hardware.name
        check.write_text(text, encoding="utf-8")
        read_hardware(check, robot.hill.f_min_n, robot.robot_file)
        load_calibration(robot, check)
    return text
