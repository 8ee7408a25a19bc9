"""The goal gate: the one place a hand goal is accepted or refused, in the runner and the nodes.

A goal arrives as a :class:`~musculo_control.control.goal.HandGoal` (built in code, already
validated) or as a :class:`GoalRequest`, the raw fields of a message, which may hold anything
(NaN, wrong shapes, a quaternion that is not one). It is refused, with a sentence naming the
fault, when

- its frame is not the base frame of the workspace (there is no TF lookup in the control loop);
- a value is not finite, a shape is wrong, or a rotation is not one (rule ``goal_invalid``);
- it lies outside the workspace of controller.yaml (rule ``goal_outside_workspace``);
- its stamp is earlier than the last accepted goal's (rule ``goal_invalid``; a zero stamp, a
  goal published by hand without one, means "now").

A refused goal leaves the last accepted goal in force: a bad request says nothing about the
robot, and going limp on it would drop the arm.

Between two goals the controller works with the last one moved along its own feed-forward
(paper eq. 14: a trajectory point carries velocity and acceleration):
``x(t) = x + v dt + a dt^2 / 2`` and ``v(t) = v + a dt`` with ``dt = t - stamp`` capped at
``extrapolate_max_s``, so that a goal stream slower than the control rate still gives a smooth
reference, and a stream that stops ends in a held point instead of running away.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from musculo_control.arrays import any_true
from musculo_control.control.goal import HandGoal, WorkspaceConfig, check_goal
from musculo_control.errors import InputError
from musculo_control.safety.rules import Finding
from musculo_control.streams import StampOrder


class GoalRequest(NamedTuple):
    """A hand goal as received, unvalidated (SI units)."""

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


def _without_rotation(goal: HandGoal) -> HandGoal:
    """``goal`` with its orientation dropped (itself when it has none)."""
    if goal.rotation is None:
        return goal
    return HandGoal(goal.position_m, goal.velocity_m_s, goal.acceleration_m_s2)


class GoalGate:
    """Accepts or refuses each offered goal; gives the goal in force at any time."""

    def __init__(self, workspace: WorkspaceConfig, base_frame: str,
                 use_orientation: bool = True, extrapolate_max_s: float = 0.0) -> None:
        self.workspace = workspace
        self.base_frame = base_frame
        self.use_orientation = use_orientation
        self.extrapolate_max_s = extrapolate_max_s
        self._order = StampOrder("goal", strict=False, allow_zero=True)
        self.reset()

    def reset(self) -> None:
        self.accepted: HandGoal | None = None
        self.accepted_stamp_s = 0.0
        self.refused = 0
        self._order.reset()
        self._inside: tuple[HandGoal, WorkspaceConfig] | None = None  # last goal found inside

    def offer(self, goal: object, stamp_s: float, now_s: float,
              frame_id: str | None = None) -> Finding | None:
        """Judge a goal received at ``now_s`` [s]; why it was refused, or ``None``.

        ``frame_id``: the frame it is expressed in (``None``: the base frame, for goals made in
        code). ``stamp_s``: its stamp; 0 means "now".
        """
        finding = self._judge(goal, stamp_s, now_s, frame_id)
        if finding is not None:
            self.refused += 1
        return finding

    def _judge(self, goal: object, stamp_s: float, now_s: float,
               frame_id: str | None) -> Finding | None:
        base = self.base_frame
        if frame_id is not None and frame_id != base:
            return Finding("goal_invalid", f"goal refused, holding the last one: frame_id "
                                           f"'{frame_id}', expected the base frame '{base}'")
        try:
            if isinstance(goal, HandGoal):
                candidate = goal
            elif isinstance(goal, GoalRequest):
                candidate = goal_from_request(goal)
            else:
                raise InputError("goal", "a HandGoal or a GoalRequest", type(goal).__name__)
        except InputError as exc:
            return Finding("goal_invalid", f"goal refused, holding the last one: {exc}")
        if not self.use_orientation:
            candidate = _without_rotation(candidate)
        # a goal is immutable (read-only arrays): one found inside the workspace, offered
        # again (a held goal, at every tick), is inside still
        inside = self._inside
        why = None if inside is not None and inside[0] is candidate \
            and inside[1] is self.workspace else check_goal(candidate, self.workspace)
        if why is None:
            self._inside = (candidate, self.workspace)
        else:
            return Finding("goal_outside_workspace",
                           f"goal refused, holding the last one: {why}")
        late = self._order.check(stamp_s)
        if late is not None:
            return Finding("goal_invalid", f"goal refused, holding the last one: {late}")
        self.accepted = candidate
        self.accepted_stamp_s = float(stamp_s) if stamp_s != 0.0 else float(now_s)
        return None

    def set_orientation(self, use: bool) -> None:
        """Track the goals' orientation or not from now on; turned off, the goal in force
        loses its orientation at once (turned on, the next goal brings one: the hand is not
        pulled to an orientation it was not told)."""
        self.use_orientation = bool(use)
        if not self.use_orientation and self.accepted is not None:
            self.accepted = _without_rotation(self.accepted)

    def hold(self, goal: HandGoal, now_s: float) -> None:
        """Accept ``goal`` as made here (the hand where it is, before any goal came)."""
        if not self.use_orientation and goal.rotation is not None:
            goal = HandGoal(goal.position_m)
        self.accepted = goal
        self.accepted_stamp_s = float(now_s)

    def goal_at(self, t_s: float) -> HandGoal | None:
        """The accepted goal moved along its feed-forward to ``t_s`` [s] (see the module
        docstring); ``None`` before any goal."""
        goal = self.accepted
        if goal is None or self.extrapolate_max_s <= 0.0:
            return goal
        dt = min(max(t_s - self.accepted_stamp_s, 0.0), self.extrapolate_max_s)
        if dt == 0.0 or not (any_true(goal.velocity_m_s) or any_true(goal.acceleration_m_s2)):
            return goal
        a = goal.acceleration_m_s2
        return HandGoal(goal.position_m + goal.velocity_m_s * dt + 0.5 * a * dt * dt,
                        goal.velocity_m_s + a * dt, a, goal.rotation)
