"""What every stage of the loop is built from: one config folder's robot, controller, drivers
and safety configuration (:class:`LoopParts`), loaded and checked together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from musculo_control.config.folder import load_checked
from musculo_control.config.parser import load_with_overrides
from musculo_control.control.controller_config import ControllerConfig, load_controller_config
from musculo_control.errors import ErrorCollector
from musculo_control.hardware.drivers import Drivers, load_drivers, read_hardware
from musculo_control.model.hill import HillParams
from musculo_control.model.robot import ROBOT_FILES, Robot, RobotConfig, check_robot_files
from musculo_control.safety.config import SafetyConfig, load_safety_config

#: The files of a config folder the control loop reads (stems): what :func:`load_parts` loads.
LOOP_FILES = (*ROBOT_FILES, "controller", "hardware", "safety")


def check_loop_files(config_dir: str | Path, overrides: dict[str, dict[str, Any]],
                     found: ErrorCollector,
                     files: tuple[str, ...] = LOOP_FILES) -> RobotConfig | None:
    """Each of ``files`` (stems of :data:`LOOP_FILES`) present in ``config_dir`` against its
    schema, with the dotted-key ``overrides`` of its stem, every error added to ``found``
    (:mod:`musculo_control.config.folder`); robot.yaml's config when it parsed."""
    folder = Path(config_dir)
    robot = None
    if set(ROBOT_FILES) & set(files):
        robot = check_robot_files(folder, overrides.get("robot"), found)
    if "hardware" in files and (folder / "hardware.yaml").is_file():
        f_min = (robot.hill if robot is not None else HillParams()).f_min_n
        with found.checking():
            read_hardware(folder / "hardware.yaml", f_min, str(folder / "robot.yaml"))
    for stem, schema in (("controller", ControllerConfig), ("safety", SafetyConfig)):
        path = folder / f"{stem}.yaml"
        if stem in files and path.is_file():
            with found.checking():
                load_with_overrides(schema, path, dict(overrides.get(stem, {})))
    return robot


@dataclass
class LoopParts:
    """The robot and the configuration every stage is built from (one config folder)."""

    robot: Robot
    controller: ControllerConfig
    drivers: Drivers  # one calibration; the potentiometer reader and tendon driver (stateful)
    safety: SafetyConfig

    @property
    def config_dir(self) -> Path:
        return self.robot.config_dir


def load_parts(config_dir: str | Path, *, robot: Robot | None = None,
               controller: ControllerConfig | None = None,
               controller_overrides: dict[str, Any] | None = None,
               safety_overrides: dict[str, Any] | None = None) -> LoopParts:
    """Load robot.yaml, controller.yaml, hardware.yaml and safety.yaml of a config folder
    (``robot`` and ``controller``: already loaded ones, not read again). Every error of every
    file comes together (:func:`check_loop_files`, then the loaders' checks across files)."""
    folder = Path(config_dir)

    def build() -> LoopParts:
        arm = robot if robot is not None else Robot(folder)
        ctrl = controller if controller is not None else load_controller_config(
            folder, controller_overrides)
        drivers = load_drivers(arm)
        safety = load_safety_config(folder, drivers.tendons.config, safety_overrides)
        if safety_overrides:  # the driver's bounds on late inputs are safety.yaml's, overridden
            drivers = load_drivers(arm, inputs=safety.inputs)
        return LoopParts(arm, ctrl, drivers, safety)

    if robot is not None:  # its files were checked when it was loaded
        return build()
    overrides = {"controller": controller_overrides or {}, "safety": safety_overrides or {}}
    return load_checked(lambda found: check_loop_files(folder, overrides, found), build)
