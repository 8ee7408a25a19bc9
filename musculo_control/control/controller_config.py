"""``controller.yaml``: the loop rates, the task, gains, the activation QP and its solvers, the
baselines and the goal workspace, in one frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import load_with_overrides, spec
from musculo_control.control.baselines_config import BaselinesConfig
from musculo_control.control.goal import WorkspaceConfig
from musculo_control.control.qp_config import (
    DAQPConfig,
    DualNewtonConfig,
    OSQPConfig,
    QPConfig,
    SolverChoiceConfig,
)
from musculo_control.control.task_space import (
    GainsConfig,
)
from musculo_control.model.task import TaskConfig

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class LoopConfig:
    """``controller.yaml`` key ``loop``: the rates of the paper's two threads (SPEC section 7)."""

    control_rate_hz: float = spec(125.0, gt=0.0, doc="the QP tick (paper: 125 Hz) [Hz]")
    dynamics_rate_hz: float = spec(20.0, gt=0.0, doc="the dynamics snapshot (paper: 20 Hz) "
                                                     "[Hz]")
    fused_dynamics: bool = spec(False, doc="compute the snapshot at every control tick in the "
                                           "QP's own process instead (no 20 Hz staleness)")
    switch_ramp_s: float = spec(0.5, gt=0.0, doc="a controller switched in while the arm runs "
                                                "ramps from the tensions in force to its own "
                                                "commands over this [s]")


@dataclass(frozen=True, kw_only=True)
class ControllerConfig:
    """The whole ``controller.yaml``."""

    loop: LoopConfig = spec(LoopConfig(), doc="control and dynamics rates")
    task: TaskConfig = spec(doc="task rows and decoupling mask (paper eq. 13)")
    gains: GainsConfig = spec(GainsConfig(), doc="task-space gains (paper eq. 14-15)")
    qp: QPConfig = spec(QPConfig(), doc="the activation QP (paper eq. 9-11)")
    osqp: OSQPConfig = spec(OSQPConfig(), doc="OSQP settings (qp.solver: osqp)")
    daqp: DAQPConfig = spec(DAQPConfig(), doc="DAQP settings (qp.solver: daqp)")
    dual_newton: DualNewtonConfig = spec(DualNewtonConfig(), doc="Newton on the dual of eq. "
                                                                 "10/11 (qp.solver: dual_newton)")
    solver_choice: SolverChoiceConfig = spec(SolverChoiceConfig(),
                                             doc="how qp.solver: auto picks a solver")
    baselines: BaselinesConfig = spec(doc="paper eq. 16-17")
    workspace: WorkspaceConfig = spec(doc="where a hand goal may lie")
    goal_extrapolation_s: float = spec(
        0.04, ge=0.0, doc="between two goals, the last one follows its own velocity and "
                          "acceleration for at most this long, then holds [s]")


def load_controller_config(config_dir: str | Path,
                           overrides: dict[str, Any] | None = None) -> ControllerConfig:
    """Parse ``controller.yaml`` of a config folder, with optional dotted-key overrides."""
    return load_with_overrides(ControllerConfig, Path(config_dir) / "controller.yaml", overrides)
