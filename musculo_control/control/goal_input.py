"""The gate every externally received hand goal passes before the controller may use it.

A goal arrives as a stamped pose (``hand_goal``, from the goal node, RViz or a user). It is
refused, with a sentence that names the topic and the fault, when

- its frame is not the robot's base frame (there is no TF lookup in the control loop);
- a position or quaternion value is NaN or infinite, or the quaternion is not of unit norm;
- it lies outside the workspace (:func:`musculo_control.control.goal.check_goal`);
- its stamp is earlier than that of the last accepted goal (out of order). A zero stamp (a
  goal published by hand without one) is accepted as "now".

A refused goal leaves the previous goal in force; it never reaches the QP.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from musculo_control.control.goal import HandGoal, WorkspaceConfig, check_goal
from musculo_control.errors import InputError
from musculo_control.stamps import Stamp, StampOrder


class GoalGate:
    """Validates stamped goal poses (see the module docstring)."""

    def __init__(self, workspace: WorkspaceConfig, frame_id: str, topic: str = "hand_goal",
                 use_orientation: bool = True) -> None:
        self.workspace = workspace
        self.frame_id = frame_id
        self.topic = topic
        self.use_orientation = use_orientation
        self._order = StampOrder(topic, strict=False, allow_zero=True)

    def reset(self) -> None:
        self._order.reset()

    def accept(self, stamp: Stamp, frame_id: str, position_m: npt.ArrayLike,
               quaternion_xyzw: npt.ArrayLike) -> HandGoal | str:
        """The goal, or why it is refused."""
        if frame_id != self.frame_id:
            return (f"{self.topic}: frame_id '{frame_id}', expected the base frame "
                    f"'{self.frame_id}'")
        p = np.asarray(position_m, dtype=float)
        q = np.asarray(quaternion_xyzw, dtype=float)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            return f"{self.topic}: position {p.tolist()} is not 3 finite values"
        try:
            goal = HandGoal.from_pose(p, q)
        except InputError as exc:
            return f"{self.topic}: {exc}"
        if not self.use_orientation:
            goal = HandGoal.hold(goal.position_m)
        why = check_goal(goal, self.workspace)
        if why is not None:
            return f"{self.topic}: {why}"
        late = self._order.check(stamp)
        if late is not None:
            return late
        return goal
