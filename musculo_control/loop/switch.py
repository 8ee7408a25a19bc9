"""A controller switched in while the arm runs, without a jump (a bumpless transfer).

The new controller's first commands would differ from the old one's by whatever the two
control laws disagree on (eq. 11 against eq. 10, or a joint-space baseline against the
task-space controller): on a gravity-loaded arm a step of tension is a swing. So for
``controller.yaml`` ``loop.switch_ramp_s`` after the switch, :class:`TensionRamp` ticks both
and sends

    f = f_old + w(s) (f_new - f_old),   s = (t - t_switch) / switch_ramp_s,   w = 3 s^2 - 2 s^3

both computed at every tick on the live state, so the arm stays under feedback throughout
(a blend from tensions frozen at the switch would leave it open-loop at first). Both are
commands the supervisor accepts (at least the minimum tension, at most the actuators' limit),
so every blend of them is too, and the supervisor checks the blended command as any other.
A tick the new controller cannot answer passes its failure on unblended (the supervisor's stop
takes over, as it would without the ramp); one the old cannot answer blends from the tensions
in force at the switch.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

from musculo_control.control.goal import HandGoal
from musculo_control.control.output import ControlOutput
from musculo_control.control.tick_base import Controller
from musculo_control.estimation.snapshot import DynamicsSnapshot

FloatArray = npt.NDArray[np.float64]


class TensionRamp:
    """``controller`` with its commands ramped in from those of ``previous`` (or, where that
    has none, ``from_tension_n`` [N], the tensions in force at the switch), starting at
    ``t0_s`` [s] and lasting ``ramp_s`` [s] (see the module docstring)."""

    def __init__(self, controller: Controller, from_tension_n: npt.ArrayLike, t0_s: float,
                 ramp_s: float, previous: Controller | None = None) -> None:
        self.controller = controller
        self.previous = previous
        self.name = controller.name
        self.from_tension_n = np.array(from_tension_n, dtype=float)
        self.t0_s = t0_s
        self.ramp_s = ramp_s

    def weight(self, t_s: float) -> float:
        """The new controller's share of the command at ``t_s`` (0 at the switch, 1 after)."""
        s = min(max((t_s - self.t0_s) / self.ramp_s, 0.0), 1.0)
        return s * s * (3.0 - 2.0 * s)

    def done(self, t_s: float) -> bool:
        return t_s >= self.t0_s + self.ramp_s

    def tick(self, snapshot: DynamicsSnapshot | None, q_rad: npt.ArrayLike,
             qd_rad_s: npt.ArrayLike, goal: HandGoal, t_s: float) -> ControlOutput:
        out = self.controller.tick(snapshot, q_rad, qd_rad_s, goal, t_s)
        if not out.ok:
            return out
        start = self.from_tension_n
        if self.previous is not None:
            old = self.previous.tick(snapshot, q_rad, qd_rad_s, goal, t_s)
            if old.ok:
                start = old.tension_n
        w = self.weight(t_s)
        return dataclasses.replace(out, tension_n=start + w * (out.tension_n - start))

    def reset(self) -> None:
        self.controller.reset()
        if self.previous is not None:
            self.previous.reset()
