"""Whether the tendon driver applies the controller's commands.

When the controller's commands stop reaching the driver (a lost link, a stalled transport)
while the controller itself runs on, the driver stops on its own clock: it holds, then lowers
the arm (:mod:`musculo_control.stopping`). The controller does not know: it goes on computing
tensions for its goal, and its feedback grows as the arm sinks away from it. When the link
comes back, those tensions reach the arm at once and pull it back up hard (up to 2.3 m/s after
3 s without commands, on the ROS-free loop).

:class:`CommandFollow` sees it from the driver's side: the driver's outputs (what it sends to
the actuators, ``hw/tendon_commands``) that leave the span of the controller's recent commands
by more than ``follow.tolerance_n`` for ``follow.samples`` outputs in a row. The supervisor
then reports the warning ``driver_not_following`` and keeps the goal at the hand, so that the
commands which reach the arm when the link returns hold it where the driver's stop left it;
from there control goes back to the goal on the resume ramp, at most ``resume_speed_m_s``.

A driver that applies the commands stays within their span: its rate limit only slows its
approach, and commands older than ``inputs.muscle_commands.hold_s`` would stop it anyway.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class FollowConfig:
    """``safety.yaml`` key ``follow``: is the driver applying the controller's commands."""

    tolerance_n: float = spec(
        50.0, gt=0.0, doc="a driver output further than this outside the span of the "
                          "controller's recent commands does not follow them [N] (the driver's "
                          "rate limit catches a 30 N/ms step within the span's window)")
    samples: int = spec(10, ge=1, doc="driver outputs in a row that do not follow before the "
                                      "warning driver_not_following (10: 20 ms at 500 Hz)")


class CommandFollow:
    """The controller's recent commands against the driver's outputs (module docstring)."""

    def __init__(self, config: FollowConfig, window_s: float, history: int = 16) -> None:
        """``window_s`` [s]: how far back a command may still be what the driver applies
        (safety.yaml ``inputs.muscle_commands.hold_s``)."""
        self.config = config
        self.window_s = window_s
        self._sent: deque[tuple[float, FloatArray]] = deque(maxlen=history)
        self.reset()

    def reset(self) -> None:
        self._sent.clear()
        self.misses = 0  # driver outputs in a row outside the span
        self.worst: tuple[int, float, float, float] | None = None  # (tendon, out, lo, hi) [N]

    def sent(self, t_s: float, tension_n: FloatArray) -> None:
        """The controller sent ``tension_n`` [N] at ``t_s`` [s]."""
        self._sent.append((t_s, np.array(tension_n, dtype=float)))

    def driver(self, stamp_s: float, tension_n: FloatArray) -> None:
        """The driver sent ``tension_n`` [N] at ``stamp_s`` [s] to the actuators."""
        span = self._span(stamp_s)
        if span is None:
            return
        lo, hi = span
        tol = self.config.tolerance_n
        off = np.maximum(tension_n - hi, lo - tension_n)
        i = int(np.argmax(off))
        if off[i] > tol:
            self.misses += 1
            self.worst = (i, float(tension_n[i]), float(lo[i]), float(hi[i]))
        else:
            self.misses = 0
            self.worst = None

    def _span(self, stamp_s: float) -> tuple[FloatArray, FloatArray] | None:
        """Per tendon, the least and largest command the driver may be applying at
        ``stamp_s``: those sent within the window before it, and the one in force at its
        start; None when none was sent before ``stamp_s``."""
        start = stamp_s - self.window_s
        lo = hi = None
        for t, f in reversed(self._sent):
            if t > stamp_s:
                continue
            lo = f.copy() if lo is None else np.minimum(lo, f)
            hi = f.copy() if hi is None else np.maximum(hi, f)
            if t <= start:
                break
        return None if lo is None or hi is None else (lo, hi)

    @property
    def following(self) -> bool:
        return self.misses < self.config.samples

    def message(self, names: tuple[str, ...] | list[str]) -> str:
        """Why the driver is not following (the tendon furthest off)."""
        if self.worst is None:
            return ""
        i, out, lo, hi = self.worst
        span = f"{lo:.1f} N" if math.isclose(lo, hi) else f"{lo:.1f}-{hi:.1f} N"
        return (f"the tendon driver does not apply the controller's commands for {self.misses} "
                f"outputs (its own stop? the commands do not reach it): {names[i]} sent "
                f"{out:.1f} N, commanded {span}; holding the goal at the hand")
