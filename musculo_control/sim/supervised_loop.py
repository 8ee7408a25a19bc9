"""The closed loop with the safety supervisor in it, for the fault matrix and the soak.

:class:`SupervisedRig` builds the same parts as the experiments' ``Bench`` (mock arm, drivers,
estimator, controller) plus a :class:`~musculo_control.safety.supervisor.Supervisor` from
``safety.yaml``, and makes :class:`~musculo_control.sim.runner.ClosedLoop` instances with a
controller and stream-fault injector of the caller's choice. ``reliability.yaml`` holds the
fault matrix (``faults``) and the soak (``soak``); :func:`load_reliability_section` reads one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.control.controller import Controller, make_controller
from musculo_control.control.goal import HandGoal
from musculo_control.errors import ConfigError
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.hardware.drivers import load_drivers
from musculo_control.hardware.mock_arm import MockArm
from musculo_control.model.config import apply_overrides, parse, parse_override, read_yaml
from musculo_control.model.robot import Robot
from musculo_control.safety.config import load_safety_config
from musculo_control.safety.supervisor import Supervisor
from musculo_control.sim.experiments import Setup
from musculo_control.sim.runner import ClosedLoop, StreamFaults

FloatArray = npt.NDArray[np.float64]
T = TypeVar("T")

#: Top-level sections of reliability.yaml.
RELIABILITY_SECTIONS = ("faults", "soak")


def load_reliability_section(config_dir: Path, key: str, cls: type[T],
                             overrides: dict[str, Any] | None = None) -> T:
    """Parse section ``key`` of ``reliability.yaml`` into ``cls`` (dotted overrides allowed,
    e.g. ``{"soak.duration_s": 60}``)."""
    path = Path(config_dir) / "reliability.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(str(path), "<top level>",
                          f"a mapping with keys {list(RELIABILITY_SECTIONS)}", type(data).__name__)
    for name in data:
        if name not in RELIABILITY_SECTIONS:
            raise ConfigError(str(path), str(name),
                              f"one of the known keys {list(RELIABILITY_SECTIONS)}", "unknown key")
    if overrides:
        data = apply_overrides(data, overrides, str(path))
    if key not in data:
        raise ConfigError(str(path), key, "a section", "missing")
    return parse(cls, data[key], str(path), key)


def check_start_pose(robot: Robot, name: str, file: str, key: str) -> None:
    """A start pose must be 'home' or a named pose of robot.yaml."""
    names = [p.name for p in robot.poses.config.named] if robot.poses is not None else []
    if name != "home" and name not in names:
        raise ConfigError(file, key, f"'home' or a named pose of {robot.robot_file} 'poses' "
                                     f"{names}", name)


def split_overrides(items: list[str], prefixes: tuple[str, ...]) -> tuple[dict[str, Any],
                                                                          list[str]]:
    """``--set`` items whose file is one of ``prefixes`` (as {"file.key": value}), and the
    rest untouched (for :meth:`Overrides.parse`)."""
    mine: dict[str, Any] = {}
    rest: list[str] = []
    for item in items:
        key, sep, text = item.partition("=")
        prefix = key.strip().partition(".")[0]
        if sep and prefix in prefixes:
            mine.update([parse_override(item)])
        else:
            rest.append(item)
    return mine, rest


class SupervisedRig:
    """Mock arm, drivers, estimator, a controller and the supervisor, for one run."""

    def __init__(self, setup: Setup, controller_name: str = "osc",
                 safety_overrides: dict[str, Any] | None = None) -> None:
        robot = setup.robot
        cfg = setup.controller_config
        self.setup = setup
        self.robot = robot
        self.controller = make_controller(controller_name, robot, cfg)
        drivers = load_drivers(robot)
        self.calibration = drivers.calibration
        self.pots, self.driver = drivers.potentiometers, drivers.tendons
        folder = robot.config_dir
        self.mock = MockArm(robot, drivers.calibration, setup.mock_config, setup.mock_config.seed,
                            str(folder / "mock_arm.yaml"))
        self.estimator = DynamicsEstimator(robot, cfg.task)
        self.safety_config = load_safety_config(folder, drivers.tendons.config, safety_overrides)
        self.supervisor = Supervisor(robot, self.safety_config, cfg.workspace,
                                     drivers.tendons.config)
        #: the actuator's limit: the driver's clamp, or the motor's at rest if lower [N]
        self.tension_limit_n = float(min(drivers.tendons.config.max_tension_n,
                                         float(self.mock.max_tension_n.min())))

    def loop(self, controller: Controller | None = None,
             faults: StreamFaults | None = None) -> ClosedLoop:
        """A closed loop over these parts (``controller`` default: the rig's own)."""
        return ClosedLoop(self.robot, controller or self.controller, self.mock, self.pots,
                          self.driver, self.estimator, self.setup.experiments.runner,
                          str(self.robot.config_dir / "experiments.yaml"),
                          safety=self.supervisor, faults=faults)

    def hand_pose_at(self, q: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Model hand position [m] and rotation at joint angles ``q``."""
        data = self.robot.new_data()
        pin.framesForwardKinematics(self.robot.arm.model, data, q)
        placement = data.oMf[self.robot.arm.task_frame_id]
        return placement.translation.copy(), placement.rotation.copy()

    def holding_tension_n(self, q: FloatArray) -> FloatArray:
        """The controller's answer for holding still at ``q`` (all muscles) [N]."""
        x, rot = self.hand_pose_at(q)
        snap = self.estimator.compute(q, np.zeros_like(q), 0.0)
        out = self.controller.tick(snap, q, np.zeros_like(q), HandGoal.hold(x, rot), 0.0)
        self.controller.reset()
        return out.tension_n

    def most_loaded_tendon(self, q: FloatArray) -> int:
        """Index of the controlled muscle that pulls hardest to hold ``q``."""
        tension = self.holding_tension_n(q)
        ci = self.robot.controlled_idx
        return int(ci[int(np.argmax(tension[ci]))])
