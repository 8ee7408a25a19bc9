"""Building the stages of the loop from one config folder: the same objects for every user.

Each node builds its one stage here, and the ROS-free runner builds all of them here, so that
a stage is configured by the same files and the same code wherever it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from musculo_control.control.controller import make_controller
from musculo_control.control.controller_config import ControllerConfig, load_controller_config
from musculo_control.control.tick_base import Controller
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.hardware.drivers import Drivers, load_drivers
from musculo_control.hardware.mock_arm import MockArm, MockArmConfig
from musculo_control.loop.control_step import ControlStep
from musculo_control.loop.driver_parts import potentiometer_stage, tendon_stage
from musculo_control.loop.dynamics_stage import DynamicsStage
from musculo_control.loop.mock_stage import MockStage
from musculo_control.model.robot import Robot, load_robot
from musculo_control.safety.config import SafetyConfig, load_safety_config
from musculo_control.safety.supervisor import Supervisor
from musculo_control.streams import OwnPause

__all__ = ["LoopParts", "control_step", "controller", "dynamics_stage", "load_parts", "mock_stage",
           "potentiometer_stage", "tendon_stage"]


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
    (``robot`` and ``controller``: already loaded ones, not read again)."""
    folder = Path(config_dir)
    robot = robot if robot is not None else load_robot(folder)
    ctrl = controller if controller is not None else load_controller_config(
        folder, controller_overrides)
    drivers = load_drivers(robot)
    safety = load_safety_config(folder, drivers.tendons.config, safety_overrides)
    if safety_overrides:  # the driver's bounds on late inputs are safety.yaml's, overridden
        drivers = load_drivers(robot, inputs=safety.inputs)
    return LoopParts(robot, ctrl, drivers, safety)


def dynamics_stage(parts: LoopParts, warn_throttle_s: float = 1.0) -> DynamicsStage:
    # its ticks are a 20 Hz period apart: a pause is inputs.own_pause_s beyond that
    period = 1.0 / parts.controller.loop.dynamics_rate_hz
    return DynamicsStage(DynamicsEstimator(parts.robot, parts.controller.task),
                         parts.safety.inputs.joint_state, warn_throttle_s,
                         OwnPause(period + parts.safety.inputs.own_pause_s))


def controller(parts: LoopParts, name: str) -> Controller:
    """The controller ``name``, bounded by the actuators' largest tension."""
    return make_controller(name, parts.robot, parts.controller,
                           tension_max_n=parts.drivers.tendons.config.max_tension_n)


def control_step(parts: LoopParts, controller_name: str, *, use_goal_orientation: bool = True,
                 with_controller: Controller | None = None,
                 warn_throttle_s: float = 1.0) -> ControlStep:
    """The control step of ``controller_name`` (or of ``with_controller``, e.g. one wrapped by
    a fault injector) with the supervisor of safety.yaml."""
    ctrl_cfg = parts.controller
    driver = parts.drivers.tendons
    supervisor = Supervisor(parts.robot, parts.safety, ctrl_cfg.workspace, driver.config,
                            use_goal_orientation=use_goal_orientation,
                            goal_extrapolation_s=ctrl_cfg.goal_extrapolation_s)
    ctrl = with_controller if with_controller is not None else controller(parts, controller_name)
    estimator = (DynamicsEstimator(parts.robot, ctrl_cfg.task)
                 if ctrl_cfg.loop.fused_dynamics else None)
    return ControlStep(ctrl, supervisor, estimator, warn_throttle_s)


def mock_stage(parts: LoopParts, config: MockArmConfig, seed: int | None = None,
               stamp0_s: float = 0.0, file: str = "mock_arm.yaml",
               warn_throttle_s: float = 1.0) -> MockStage:
    arm = MockArm(parts.robot, parts.drivers.calibration, config, seed, file)
    return MockStage(arm, stamp0_s, warn_throttle_s)
