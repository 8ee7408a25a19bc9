"""The fresh state of one 125 Hz tick, on top of a dynamics snapshot up to ~50 ms old.

The snapshot (20 Hz) carries the expensive quantities: M, g, J, Lambda, N, Jm. What the
feedback law needs *now* is recomputed from the fresh joint state (q, qd):

- Hand pose and twist: exact, by a first-order forward-kinematics pass on this object's own
  Pinocchio data (``forwardKinematics(q, qd)``, then the one task frame). It costs a few
  microseconds for a 7-joint chain, much less than the QP. The alternative,
  ``x_snap + J6 (q - q_snap)``, has a second-order position error and needs an exponential map
  for the orientation anyway; its velocity ``J6_snap qd`` uses a stale Jacobian. The exact pass
  is cheaper to reason about and no slower in practice.
- Muscle lengths: first order, ``l = l_snap + Jm (q - q_snap)``. One (m x n) product; the
  force-length curves are smooth at the scale of the joint motion between snapshots.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.control.task_space import HandState
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.model.hill import MuscleForces
from musculo_control.model.robot import Robot

FloatArray = npt.NDArray[np.float64]


class FreshState(NamedTuple):
    """The tick's state: hand, muscle lengths and force-length terms, all muscles."""

    hand: HandState
    muscle_length_m: FloatArray  # (m,) all muscles, first order around the snapshot
    forces: MuscleForces  # f_a, f_p at those lengths, (m,) each [N]
    joint_change_rad: FloatArray  # (n,) q - q_snapshot


class FreshStateEstimator:
    """Computes :class:`FreshState`; holds its own Pinocchio data (never shared across threads)."""

    def __init__(self, robot: Robot) -> None:
        self.robot = robot
        self._model = robot.arm.model
        self._data = self._model.createData()
        self._frame = robot.arm.task_frame_id

    def hand_state(self, q: FloatArray, qd: FloatArray) -> HandState:
        """Exact hand pose and world-aligned twist at (q, qd)."""
        model, data = self._model, self._data
        pin.forwardKinematics(model, data, q, qd)
        placement = pin.updateFramePlacement(model, data, self._frame)
        twist = pin.getFrameVelocity(model, data, self._frame, pin.LOCAL_WORLD_ALIGNED)
        return HandState(placement.translation.copy(), twist.linear.copy(),
                         placement.rotation.copy(), twist.angular.copy())

    def compute(self, snapshot: DynamicsSnapshot, q: FloatArray, qd: FloatArray) -> FreshState:
        """The fresh state at (q, qd) given the latest snapshot; inputs already validated."""
        dq = q - snapshot.q_rad
        lengths = snapshot.muscle_length_m + snapshot.muscle_jacobian @ dq
        return FreshState(self.hand_state(q, qd), lengths, self.robot.forces(lengths), dq)
