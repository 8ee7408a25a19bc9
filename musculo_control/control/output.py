"""What one controller tick returns, and the safe output every failure turns into."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from musculo_control.model.robot import Robot

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, eq=False)  # eq on arrays is ambiguous: compare fields
class ControlOutput:
    """One 125 Hz tick's command and what the controller knew when it made it.

    ``tension_n`` covers ALL muscles in robot order: controlled ones from the controller, the
    uncontrolled (finger) muscles at their fixed tension. When ``ok`` is false, ``reason`` says
    why and every muscle is at the minimum tension ``hill.f_min_n``; the other arrays are zeros.
    """

    ok: bool
    reason: str  # '' when ok
    tension_n: FloatArray  # (n_muscles,) command, all muscles [N]
    activations: FloatArray  # (n_controlled,) a, or zeros
    tau_null_nm: FloatArray  # (n,) [Nm]
    torque_residual_nm: FloatArray  # (n,) what the tensions miss of the torque balance [Nm]
    tau_ref_nm: FloatArray  # (n,) the torque the task asked for (eq. 16 baseline: K e + g) [Nm]
    hand_position_m: FloatArray  # (3,) from the fresh joint state
    hand_error_m: FloatArray  # (3,) x_des - x [m]
    solver_status: str
    iterations: int
    solve_time_s: float
    snapshot_age_s: float
    objective: float = 0.0  # the QP's cost (paper eq. 9-11, 16), 0 without a QP
    compute_time_s: float = 0.0  # wall time of the whole tick [s]


def safe_output(robot: Robot, reason: str, snapshot_age_s: float = 0.0,
                solver_status: str = "not solved", compute_time_s: float = 0.0) -> ControlOutput:
    """Every muscle at the minimum tension ``hill.f_min_n``, and why."""
    n = robot.arm.n_joints
    zeros_n = np.zeros(n)
    age = snapshot_age_s if np.isfinite(snapshot_age_s) else 0.0
    return ControlOutput(
        ok=False,
        reason=reason or "unspecified failure",
        tension_n=np.full(robot.n_muscles, robot.hill.f_min_n),
        activations=np.zeros(len(robot.controlled_idx)),
        tau_null_nm=zeros_n,
        torque_residual_nm=zeros_n.copy(),
        tau_ref_nm=zeros_n.copy(),
        hand_position_m=np.zeros(3),
        hand_error_m=np.zeros(3),
        solver_status=solver_status,
        iterations=0,
        solve_time_s=0.0,
        snapshot_age_s=float(age),
        compute_time_s=compute_time_s,
    )
