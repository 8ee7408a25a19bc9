"""One controller tick's state as a labelled flat record (the ``controller/state`` topic).

Schema ``controller_state_v3`` (see :mod:`musculo_control.records`); per-muscle activations go
out separately, with their names, as a JointState.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from musculo_control.control.output import ControlOutput
from musculo_control.records import Field, RecordLayout
from musculo_control.safety.supervisor import SafetyReport
from musculo_control.safety.supervisor_state import SupervisorState

FloatArray = npt.NDArray[np.float64]

SCHEMA = "controller_state_v3"
#: ``supervisor_state`` codes of the record.
STATE_CODES = {SupervisorState.RUNNING: 0.0, SupervisorState.FAULT: 1.0,
               SupervisorState.HOLDING: 2.0, SupervisorState.LATCHED: 3.0}


def controller_state_layout(n_joints: int) -> RecordLayout:
    n = n_joints
    return RecordLayout(SCHEMA, [
        Field("ok", ()),  # 1.0 when the tick commanded the controller's tensions, else 0.0
        Field("supervisor_state", ()),  # STATE_CODES: running 0, fault 1, holding 2, latched 3
        Field("safety_level", ()),  # diagnostic level of the safety report: 0 OK, 1 WARN, 2 ERROR
        Field("iterations", ()),  # QP solver iterations
        Field("solve_time_s", ()),  # QP solve time [s]
        Field("compute_time_s", ()),  # whole controller tick [s]
        Field("snapshot_age_s", ()),  # age of the dynamics snapshot used [s]
        Field("joint_age_s", ()),  # age of the newest joint sample: sensing to command [s]
        Field("objective", ()),  # QP cost (paper eq. 9-11, 16)
        Field("activation_norm", ()),  # ||a|| (SPEC section 8 C)
        Field("tick_period_s", ()),  # time since the previous tick started [s]
        Field("hand_position_m", (3,)),
        Field("hand_error_m", (3,)),  # x_des - x [m]
        Field("tau_null_nm", (n,)),
        Field("torque_residual_nm", (n,)),
        Field("tau_ref_nm", (n,)),
    ])


def controller_state_values(out: ControlOutput, report: SafetyReport, tick_period_s: float,
                            joint_age_s: float) -> dict[str, npt.ArrayLike | float]:
    """Field values of one tick's output and safety report, for
    :func:`controller_state_layout`."""
    return {
        "ok": 1.0 if report.ok else 0.0,
        "supervisor_state": STATE_CODES[report.state],
        "safety_level": float(report.level),
        "iterations": float(out.iterations),
        "solve_time_s": out.solve_time_s,
        "compute_time_s": out.compute_time_s,
        "snapshot_age_s": out.snapshot_age_s,
        "joint_age_s": joint_age_s if np.isfinite(joint_age_s) else 0.0,
        "objective": out.objective,
        "activation_norm": float(np.linalg.norm(out.activations)),
        "tick_period_s": tick_period_s if np.isfinite(tick_period_s) else 0.0,
        "hand_position_m": out.hand_position_m,
        "hand_error_m": out.hand_error_m,
        "tau_null_nm": out.tau_null_nm,
        "torque_residual_nm": out.torque_residual_nm,
        "tau_ref_nm": out.tau_ref_nm,
    }
