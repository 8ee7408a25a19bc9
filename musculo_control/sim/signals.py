"""The signals every experiment run records at the control ticks (``signals.csv``, the bag).

Measured signals are what the controller's side of the loop had (the potentiometer reader's
joint state, the tendon driver's muscle state, the controller's command and state record);
truth signals are the mock arm's (``q_rad``, ``hand_m``, ``elbow_m``, ``tension_n``, the gauge).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.control.goal import HandGoal
from musculo_control.loop.state_record import controller_state_layout, controller_state_values
from musculo_control.messages import quaternion_from_rotation
from musculo_control.model.robot import Robot
from musculo_control.records import RecordLayout
from musculo_control.sim.mock_arm import MockArm
from musculo_control.sim.runner import LoopState

FloatArray = npt.NDArray[np.float64]
XYZ = ("x", "y", "z")
_IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])  # (x, y, z, w): no rotation
_IDENTITY.setflags(write=False)


def record_labels(layout: RecordLayout) -> tuple[str, ...]:
    """Component labels of a flat record: a scalar by its name, a vector as ``name.i``."""
    out: list[str] = []
    for f in layout.fields:
        out += [f.name] if not f.shape else [f"{f.name}.{i}" for i in range(f.size)]
    return tuple(out)


def _norm(x: FloatArray) -> float:
    """``np.linalg.norm`` of a 1-D array (the same sqrt of the dot product), without its
    layers of Python."""
    return math.sqrt(float(x.dot(x)))


class RunSignals:
    """The signal set of one run and the function that samples it at a control tick."""

    def __init__(self, robot: Robot, control_rate_hz: float) -> None:
        joints = robot.arm.joint_names
        muscles = robot.muscle_names
        controlled = tuple(muscles[i] for i in robot.controlled_idx)
        self.layout = controller_state_layout(robot.arm.n_joints)
        self.period_s = 1.0 / control_rate_hz
        self._nan_joints = np.full(len(joints), np.nan)
        self._nan_muscles = np.full(len(muscles), np.nan)
        # the goal's quaternion, computed again only when its rotation changes
        self._rotation_key = b""
        self._quaternion = _IDENTITY
        #: name -> component labels (Recorder's argument)
        self.labels: dict[str, tuple[str, ...]] = {
            # measured: the potentiometer reader's and the tendon driver's output
            "q_measured_rad": joints, "qd_measured_rad_s": joints,
            "muscle_length_m": muscles, "muscle_velocity_m_s": muscles,
            "muscle_tension_measured_n": muscles,
            # the controller
            "hand_goal_m": XYZ, "hand_goal_quaternion_xyzw": ("x", "y", "z", "w"),
            "activation": controlled, "activation_norm": ("norm",),
            "tension_command_n": muscles,
            "controller_state": record_labels(self.layout),
            # the mock arm's truth
            "q_rad": joints, "qd_rad_s": joints, "hand_m": XYZ, "hand_error_m": ("norm",),
            "elbow_m": XYZ, "tension_n": muscles, "gauge_force_n": ("value",),
        }

    def sample(self, state: LoopState, mock: MockArm, goal: HandGoal) -> dict[str, Any]:
        """One control tick's values of every signal."""
        out = state.output
        joints, tendons = state.joints, state.tendons
        hand = mock.hand_position_m
        rot = goal.rotation
        if rot is not None and rot.tobytes() != self._rotation_key:  # the goal's turned
            self._rotation_key = rot.tobytes()
            self._quaternion = quaternion_from_rotation(rot)
        return {
            "q_measured_rad": joints.q_rad if joints is not None else self._nan_joints,
            "qd_measured_rad_s": joints.qd_rad_s if joints is not None else self._nan_joints,
            "muscle_length_m": tendons.length_m if tendons is not None else self._nan_muscles,
            "muscle_velocity_m_s": (tendons.velocity_m_s if tendons is not None
                                    else self._nan_muscles),
            "muscle_tension_measured_n": (tendons.tension_n if tendons is not None
                                          else self._nan_muscles),
            "hand_goal_m": goal.position_m,
            "hand_goal_quaternion_xyzw": self._quaternion if rot is not None else _IDENTITY,
            "activation": out.activations, "activation_norm": _norm(out.activations),
            "tension_command_n": out.tension_n,
            "controller_state": self.layout.pack(controller_state_values(
                out, state.report, self.period_s, state.joint_age_s)),
            "q_rad": mock.q_rad, "qd_rad_s": mock.qd_rad_s, "hand_m": hand,
            "hand_error_m": _norm(hand - goal.position_m),
            "elbow_m": mock.elbow_position_m, "tension_n": mock.tendon_tension_n,
            "gauge_force_n": mock.gauge_force_n,
        }

