"""Every stage of the loop for one simulated run, built from one :class:`Setup`.

The one place the ROS-free runner's parts are made (experiments, fault matrix, soak): the mock
arm's stage and the four stages of the node graph, each built by
:mod:`musculo_control.loop.build` exactly as its node builds it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.control.controller_config import ControllerConfig
from musculo_control.control.goal import HandGoal
from musculo_control.control.tick_base import Controller
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.loop import build
from musculo_control.loop.parts import load_parts
from musculo_control.sim.mock_stage import mock_stage
from musculo_control.sim.runner import ClosedLoop, StreamFaults
from musculo_control.sim.setup import Setup

FloatArray = npt.NDArray[np.float64]


class Rig:
    """The stages of one run (see the module docstring).

    ``controller_config``: instead of the setup's (e.g. the trajectory experiment's kr = 0);
    ``safety_overrides``: dotted keys of safety.yaml.
    """

    def __init__(self, setup: Setup, controller_name: str = "osc",
                 controller_config: ControllerConfig | None = None,
                 safety_overrides: dict[str, Any] | None = None) -> None:
        robot = setup.robot
        self.setup = setup
        self.robot = robot
        self.parts = load_parts(robot.config_dir, robot=robot,
                                      controller=controller_config or setup.controller_config,
                                      safety_overrides=safety_overrides)
        self.controller_name = controller_name
        self.controller = build.controller(self.parts, controller_name)
        self.mock_stage = mock_stage(self.parts, setup.mock_config,
                                           setup.mock_config.seed,
                                           file=str(robot.config_dir / "mock_arm.yaml"))
        self.mock = self.mock_stage.arm
        self.calibration = self.parts.drivers.calibration
        self.safety_config = self.parts.safety
        #: the actuators' limit: the driver's clamp, or the motor's at rest if lower [N]
        self.tension_limit_n = float(min(self.parts.drivers.tendons.config.max_tension_n,
                                         float(self.mock.max_tension_n.min())))
        self.estimator = DynamicsEstimator(robot, self.parts.controller.task)

    def loop(self, controller: Controller | None = None,
             faults: StreamFaults | None = None) -> ClosedLoop:
        """A closed loop over fresh stages (``controller``: instead of the rig's own, e.g.
        wrapped by a fault injector)."""
        parts = self.parts
        step = build.control_step(parts, self.controller_name,
                                  with_controller=controller or self.controller)
        self.supervisor = step.supervisor
        return ClosedLoop(self.mock_stage, build.potentiometer_stage(parts),
                          build.tendon_stage(parts), build.dynamics_stage(parts), step,
                          parts.controller.loop, parts.drivers.rates,
                          self.setup.experiments.runner,
                          str(self.robot.config_dir / "experiments.yaml"), faults=faults)

    def holding_tension_n(self, q: FloatArray) -> FloatArray:
        """The controller's answer for holding still at ``q`` (all muscles) [N]."""
        x, rot = self.robot.arm.hand_pose(q)
        snap = self.estimator.compute(q, np.zeros_like(q), 0.0)
        out = self.controller.tick(snap, q, np.zeros_like(q), HandGoal.hold(x, rot), 0.0)
        self.controller.reset()
        return out.tension_n

    def most_loaded_tendon(self, q: FloatArray) -> int:
        """Index of the controlled muscle that pulls hardest to hold ``q``."""
        tension = self.holding_tension_n(q)
        ci = self.robot.controlled_idx
        return int(ci[int(np.argmax(tension[ci]))])
