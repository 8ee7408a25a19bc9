"""The potentiometer reader and the tendon driver of a config folder, from ``hardware.yaml``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from musculo_control.config.parser import check_known_keys, load, parse, read_yaml, spec
from musculo_control.errors import ConfigError
from musculo_control.hardware.calibration import Calibration, load_calibration
from musculo_control.hardware.potentiometer import PotentiometerReader, PotentiometerReaderConfig
from musculo_control.hardware.tendon_driver import TendonDriver, TendonDriverConfig
from musculo_control.model.robot import Robot
from musculo_control.safety.config import LateInputsConfig

#: Top-level sections of hardware.yaml.
SECTIONS = ("rates", "calibration", "driver", "potentiometer_reader")


@dataclass(frozen=True, kw_only=True)
class HardwareRates:
    """``hardware.yaml`` key ``rates``: how often the arm talks."""

    sensor_rate_hz: float = spec(gt=0.0, doc="the arm samples every potentiometer and tendon "
                                             "(hw/potentiometers, hw/tendon_states) [Hz]")
    driver_rate_hz: float = spec(gt=0.0, doc="the tendon driver sends to the actuators "
                                             "(hw/tendon_commands) [Hz]")


class Drivers(NamedTuple):
    """The logic of the two driver nodes, sharing one calibration."""

    calibration: Calibration
    potentiometers: PotentiometerReader
    tendons: TendonDriver
    rates: HardwareRates


def load_drivers(robot: Robot, file: str | Path | None = None,
                 inputs: LateInputsConfig | None = None) -> Drivers:
    """Build both drivers from ``hardware.yaml`` (default: the robot's config folder); the
    tendon driver's bounds on late commands are ``inputs.muscle_commands`` (default: the
    config folder's safety.yaml ``inputs``; :func:`musculo_control.loop.build.tendon_stage`
    adds the bound on tendon states)."""
    path = Path(file) if file is not None else robot.config_dir / "hardware.yaml"
    if inputs is None:
        inputs = load(LateInputsConfig, robot.config_dir / "safety.yaml", "inputs")
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(str(path), "<top level>", f"a mapping with keys {list(SECTIONS)}", data)
    check_known_keys(data, SECTIONS, str(path), "")
    for key in SECTIONS:
        if key not in data:
            raise ConfigError(str(path), key, "a section", "missing")
    calibration = load_calibration(robot, path)
    pot_cfg = parse(PotentiometerReaderConfig, data["potentiometer_reader"], str(path),
                    "potentiometer_reader")
    driver = data["driver"]
    if isinstance(driver, dict) and "min_tension_n" in driver:
        raise ConfigError(str(path), "driver.min_tension_n",
                          f"no value here: the minimum tension is {robot.robot_file} "
                          f"hill.f_min_n = {robot.hill.f_min_n} N, one source for the "
                          f"controller, the supervisor and the driver", driver["min_tension_n"])
    if isinstance(driver, dict):
        driver = {**driver, "min_tension_n": robot.hill.f_min_n}
    drv_cfg = parse(TendonDriverConfig, driver, str(path), "driver")
    rates = parse(HardwareRates, data["rates"], str(path), "rates")
    return Drivers(
        calibration,
        PotentiometerReader(calibration, robot.arm.lower_rad, robot.arm.upper_rad, pot_cfg),
        TendonDriver(calibration, drv_cfg, inputs.muscle_commands),
        rates,
    )
