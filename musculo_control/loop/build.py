"""Building the stages of the loop from one config folder: the same objects for every user.

Each node builds its one stage here, and the ROS-free runner builds all of them here, so that
a stage is configured by the same files and the same code wherever it runs. The mock arm's stage
is the simulation's (:func:`musculo_control.sim.mock_stage.mock_stage`): nothing on the robot's
path loads the simulator.
"""

from __future__ import annotations

from musculo_control.control.controller import make_controller
from musculo_control.control.tick_base import Controller
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.loop.control_step import ControlStep
from musculo_control.loop.driver_parts import potentiometer_stage, tendon_stage
from musculo_control.loop.dynamics_stage import DynamicsStage
from musculo_control.loop.parts import LoopParts
from musculo_control.safety.supervisor import Supervisor
from musculo_control.streams import OwnPause

__all__ = ["control_step", "controller", "dynamics_stage", "potentiometer_stage",
           "tendon_stage"]


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


def switch_controller(step: ControlStep, parts: LoopParts, name: str, now_s: float) -> str:
    """Switch ``step`` to the controller ``name`` at ``now_s`` [s], ramped over controller.yaml
    ``loop.switch_ramp_s`` (:meth:`ControlStep.switch_controller`); '' when switched or already
    running, else why it was refused."""
    if name == step.controller.name:
        return ""
    try:
        new = controller(parts, name)
    except InputError as exc:
        return f"switch refused: {exc}"
    return step.switch_controller(new, now_s, parts.controller.loop.switch_ramp_s)


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
