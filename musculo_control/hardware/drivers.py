"""The potentiometer reader and the tendon driver of a config folder, from ``hardware.yaml``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from musculo_control.config.parser import load, located, parse, read_yaml, spec, unknown_keys
from musculo_control.errors import ConfigError, raise_collected
from musculo_control.hardware.calibration import (
    Calibration,
    CalibrationConfig,
    load_calibration_config,
)
from musculo_control.hardware.calibrator import CalibrationProcedureConfig
from musculo_control.hardware.potentiometer import PotentiometerReader, PotentiometerReaderConfig
from musculo_control.hardware.tendon_driver import TendonDriver, TendonDriverConfig
from musculo_control.streams import LateInputsConfig

if TYPE_CHECKING:  # only a type here: the driver nodes load no rigid-body model
    from musculo_control.model.robot import Robot

#: Top-level sections of hardware.yaml.
SECTIONS = ("rates", "calibration", "driver", "potentiometer_reader")
#: ... and those it may leave out (their defaults apply).
OPTIONAL_SECTIONS = ("calibration_procedure",)


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


class HardwareConfig(NamedTuple):
    """``hardware.yaml`` parsed, before it is checked against the robot."""

    calibration: CalibrationConfig
    potentiometer_reader: PotentiometerReaderConfig
    driver: TendonDriverConfig
    rates: HardwareRates
    calibration_procedure: CalibrationProcedureConfig = CalibrationProcedureConfig()


def read_hardware(path: Path, f_min_n: float, robot_file: str = "robot.yaml") -> HardwareConfig:
    """Parse every section of ``hardware.yaml``, raising every error of the file together (with
    lines); the driver's minimum tension is the robot's ``f_min_n`` (``robot_file``
    hill.f_min_n), never a value of this file."""
    file = str(path)
    data = read_yaml(path)
    try:
        if not isinstance(data, dict):
            raise ConfigError(file, "<top level>", f"a mapping with keys {list(SECTIONS)}", data)
        errors = unknown_keys(data, SECTIONS + OPTIONAL_SECTIONS, file, "")
        errors += [ConfigError(file, key, "a section", "missing")
                   for key in SECTIONS if key not in data]
        parts: dict[str, object] = {}

        def part(name: str, make: Callable[[], object]) -> None:
            if name not in data:
                return
            try:
                parts[name] = make()
            except ConfigError as exc:
                errors.append(exc)

        driver = data.get("driver")
        if isinstance(driver, dict) and "min_tension_n" in driver:
            errors.append(ConfigError(
                file, "driver.min_tension_n", f"no value here: the minimum tension is "
                f"{robot_file} hill.f_min_n = {f_min_n} N, one source for the controller, the "
                f"supervisor and the driver", driver["min_tension_n"]))
            driver = {k: v for k, v in driver.items() if k != "min_tension_n"}
        if isinstance(driver, dict):
            driver = {**driver, "min_tension_n": f_min_n}
        part("calibration", lambda: load_calibration_config(path))
        part("potentiometer_reader", lambda: parse(
            PotentiometerReaderConfig, data["potentiometer_reader"], file, "potentiometer_reader"))
        part("driver", lambda: parse(TendonDriverConfig, driver, file, "driver"))
        part("rates", lambda: parse(HardwareRates, data["rates"], file, "rates"))
        part("calibration_procedure", lambda: parse(
            CalibrationProcedureConfig, data["calibration_procedure"], file,
            "calibration_procedure"))
        raise_collected(errors)
    except ConfigError as exc:
        raise located(exc, path) from None
    return HardwareConfig(**parts)  # type: ignore[arg-type]


def load_drivers(robot: Robot, file: str | Path | None = None,
                 inputs: LateInputsConfig | None = None) -> Drivers:
    """Build both drivers from ``hardware.yaml`` (default: the robot's config folder); the
    tendon driver's bounds on late commands are ``inputs.muscle_commands`` (default: the
    config folder's safety.yaml ``inputs``; :func:`musculo_control.loop.build.tendon_stage`
    adds the bound on tendon states)."""
    path = Path(file) if file is not None else robot.config_dir / "hardware.yaml"
    if inputs is None:
        inputs = load(LateInputsConfig, robot.config_dir / "safety.yaml", "inputs")
    hw = read_hardware(path, robot.hill.f_min_n, robot.robot_file)
    try:
        calibration = Calibration(robot, hw.calibration, str(path), "calibration")
    except ConfigError as exc:
        raise located(exc, path) from None
    return Drivers(
        calibration,
        PotentiometerReader(calibration, robot.arm.lower_rad, robot.arm.upper_rad,
                            hw.potentiometer_reader),
        TendonDriver(calibration, hw.driver, inputs.muscle_commands),
        hw.rates,
    )
