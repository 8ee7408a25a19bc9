"""The goal gate: a new hand goal is used only when it is well formed and inside the workspace.

A goal arrives as a :class:`~musculo_control.control.goal.HandGoal` (already validated) or as a
:class:`GoalRequest`, the raw fields of a message, which may hold anything (NaN, wrong shapes, a
quaternion that is not one). A rejected goal leaves the last accepted goal in force and is
reported (rules ``goal_invalid`` and ``goal_outside_workspace``): a bad request says nothing
about the robot, and going limp on it would drop the arm. Before any goal was accepted there is
nothing to hold (rule ``no_goal``, a fault).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from musculo_control.control.goal import HandGoal, WorkspaceConfig, check_goal
from musculo_control.errors import InputError
from musculo_control.safety.rules import Finding


class GoalRequest(NamedTuple):
    """A hand goal as received, unvalidated (base frame; SI units)."""

    position_m: Any
    velocity_m_s: Any = None
    acceleration_m_s2: Any = None
    rotation: Any = None  # (3, 3) world_R_hand, or None
    quaternion_xyzw: Any = None  # alternative to rotation, as in a ROS Pose


def goal_from_request(request: GoalRequest) -> HandGoal:
    """Validate a request into a :class:`HandGoal`; raises :class:`InputError` if malformed."""
    rotation = request.rotation
    if request.quaternion_xyzw is not None:
        if rotation is not None:
            raise InputError("goal", "a rotation or a quaternion, not both")
        rotation = HandGoal.from_pose(np.zeros(3), request.quaternion_xyzw).rotation
    try:
        return HandGoal(request.position_m, request.velocity_m_s, request.acceleration_m_s2,
                        rotation)
    except InputError:
        raise
    except (TypeError, ValueError) as exc:  # e.g. strings where numbers belong
        raise InputError("goal", "numeric fields", f"{type(exc).__name__}: {exc}") from exc


class GoalGate:
    """Accepts or rejects each offered goal and remembers the last accepted one."""

    def __init__(self, workspace: WorkspaceConfig) -> None:
        self.workspace = workspace
        self.reset()

    def reset(self) -> None:
        self.accepted: HandGoal | None = None
        self._last_offer: object = None
        self._last_finding: Finding | None = None

    def offer(self, goal: object) -> tuple[HandGoal | None, Finding | None]:
        """The goal to control with now, and why ``goal`` was refused (``None`` if it was not).

        Offering the same immutable :class:`HandGoal` again costs nothing.
        """
        if goal is self._last_offer and isinstance(goal, HandGoal):
            return self.accepted, self._last_finding
        finding = self._judge(goal)
        self._last_offer = goal
        self._last_finding = finding
        return self.accepted, finding

    def _judge(self, goal: object) -> Finding | None:
        try:
            if isinstance(goal, HandGoal):
                candidate = goal
            elif isinstance(goal, GoalRequest):
                candidate = goal_from_request(goal)
            else:
                raise InputError("goal", "a HandGoal or a GoalRequest", type(goal).__name__)
        except InputError as exc:
            return Finding("goal_invalid", f"goal rejected, holding the last one: {exc}")
        why = check_goal(candidate, self.workspace)
        if why is not None:
            return Finding("goal_outside_workspace", f"goal rejected, holding the last one: {why}")
        self.accepted = candidate
        return None
