"""How control resumes after a fault: from where the arm is, not with a jump to the goal.

After a limp period the hand may be centimetres from its goal and still falling. Handing the
controller the goal as it is would ask for a task-space acceleration of kp times that error
plus kd times that speed (paper eq. 14: 300 s^-2 x 10 cm = 30 m/s^2), far beyond what the
tendons can give: every command clamps at the limit and the arm is yanked. Instead the goal
the controller sees starts at the hand's own position and velocity and joins the real goal
over ``resume_ramp_s`` along a quintic (zero acceleration at both ends): with ``e`` the offset
from the real goal, ``e(0) = x - x_goal``, ``e'(0) = v - v_goal`` and ``e = e' = e'' = 0`` at the
end,

    e(s) = e0 (1 - 10 s^3 + 15 s^4 - 6 s^5) + T v0 (s - 6 s^3 + 8 s^4 - 3 s^5),  s = t / T.

The desired rotation turns from the hand's to the goal's along the geodesic with the same
profile. The real goal may move meanwhile; the offset rides on it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.control.goal import HandGoal
from musculo_control.control.task_space import HandState

FloatArray = npt.NDArray[np.float64]


def _quintic(s: float) -> tuple[float, float, float, float, float, float]:
    """h, h', h'' (from 1 to 0) and b, b', b'' (unit start slope) at s in [0, 1]."""
    s2, s3 = s * s, s * s * s
    h = 1.0 - 10.0 * s3 + 15.0 * s3 * s - 6.0 * s3 * s2
    hd = -30.0 * s2 + 60.0 * s3 - 30.0 * s2 * s2
    hdd = -60.0 * s + 180.0 * s2 - 120.0 * s3
    b = s - 6.0 * s3 + 8.0 * s3 * s - 3.0 * s3 * s2
    bd = 1.0 - 18.0 * s2 + 32.0 * s3 - 15.0 * s2 * s2
    bdd = -36.0 * s + 96.0 * s2 - 60.0 * s3
    return h, hd, hdd, b, bd, bdd


class ResumeRamp:
    """The goal the controller sees for ``duration_s`` after control resumes at ``t0_s``."""

    def __init__(self, t0_s: float, duration_s: float, hand: HandState, goal: HandGoal) -> None:
        self.t0 = float(t0_s)
        self.duration = float(duration_s)
        self._e0 = hand.position_m - goal.position_m  # (3,) [m]
        # the ramp starts at rest relative to the goal: a falling hand is braked by the
        # controller's damping at once, not carried along (matching its speed over the ramp
        # would let it fall a quarter of the ramp time further)
        self._v0 = np.zeros(3)  # (3,) [m/s]
        self._r0 = np.array(hand.rotation)

    def active(self, t_s: float) -> bool:
        return t_s - self.t0 < self.duration

    def goal(self, t_s: float, goal: HandGoal) -> HandGoal:
        """The ramped version of ``goal`` at ``t_s`` [s] (``goal`` itself once the ramp ends)."""
        T = self.duration
        s = min(max((t_s - self.t0) / T, 0.0), 1.0)
        if s >= 1.0:
            return goal
        h, hd, hdd, b, bd, bdd = _quintic(s)
        e = h * self._e0 + T * b * self._v0
        ed = hd / T * self._e0 + bd * self._v0
        edd = hdd / T**2 * self._e0 + bdd / T * self._v0
        rotation = None
        if goal.rotation is not None:
            turn = pin.log3(self._r0.T @ goal.rotation)  # (3,) rotation vector [rad]
            rotation = self._r0 @ pin.exp3((1.0 - h) * turn)
        return HandGoal(goal.position_m + e, goal.velocity_m_s + ed, goal.acceleration_m_s2 + edd,
                        rotation)
