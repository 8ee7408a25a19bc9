"""The stop a fault calls, and the tensions that stop sends over time.

On a gravity-loaded tendon arm every tendon at its minimum tension is a fall. So each fault
rule names one of three stops, after the stop categories of IEC 60204-1:

- :attr:`Stop.HOLD` (category 2): the tensions in force when the stop began are kept, so the
  arm keeps its posture; after ``stops.hold_s`` the hold becomes a descend;
- :attr:`Stop.DESCEND` (category 1): the tensions ramp from where they are to the minimum over
  ``stops.descend_s``, so the arm lowers itself under control instead of falling;
- :attr:`Stop.CUT` (category 0): every tendon at the minimum tension at once, for faults where
  tension itself is the hazard (a runaway winch, a command that is not a number).

Input loss therefore goes hold, then descend, then minimum tension. A stop only escalates while
it stands: a more severe fault takes over from the tensions in force at that instant, a milder
one changes nothing. Pure logic with explicit time arguments; the supervisor (125 Hz) and the
tendon driver (500 Hz) each keep one :class:`StopSequence`; which stop each fault calls is
safety.yaml's ``stops`` (:mod:`musculo_control.safety.stops`).
"""

from __future__ import annotations

import enum
import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


class Stop(enum.IntEnum):
    """A stop, ordered by severity (a larger value overrides a smaller one)."""

    HOLD = 1
    DESCEND = 2
    CUT = 3

    @property
    def category(self) -> int:
        """Its stop category of IEC 60204-1 (2 hold, 1 descend, 0 cut)."""
        return 3 - int(self)

    @property
    def label(self) -> str:
        """Its name in safety.yaml and in reports."""
        return self.name.lower()

    @classmethod
    def named(cls, label: str) -> Stop:
        return cls[label.upper()]


STOP_LABELS: tuple[str, ...] = tuple(s.label for s in Stop)


class StopSequence:
    """The tensions of a standing stop over time (see the module docstring)."""

    def __init__(self, f_min_n: float | FloatArray, hold_s: float, descend_s: float) -> None:
        """``f_min_n``: the minimum tension [N]; a hold lasts ``hold_s`` [s], a descend
        ``descend_s`` [s]."""
        self.hold_s = hold_s
        self.descend_s = descend_s
        self._f_min = f_min_n
        self.clear()

    def clear(self) -> None:
        """No stop stands (control is back)."""
        self.stop: Stop | None = None
        self.since_s = math.nan  # when the stop began
        self._from: FloatArray | None = None  # the tensions the current phase started from
        self._phase_t = math.nan  # when the current phase (hold or descend) began

    @property
    def active(self) -> bool:
        return self.stop is not None

    def engage(self, t_s: float, stop: Stop, in_force_n: FloatArray) -> None:
        """A stop ``stop`` at ``t_s`` [s] with ``in_force_n`` [N] the tensions in force: starts
        one, or escalates the standing one from ``in_force_n``; a milder one changes nothing."""
        if self.stop is not None and stop <= self.stop:
            return
        if self.stop is None:
            self.since_s = t_s
        self.stop = stop
        self._from = np.array(in_force_n, dtype=float)
        self._phase_t = t_s

    def phase(self, t_s: float) -> Stop | None:
        """What the stop does at ``t_s``: a hold past ``hold_s`` descends, a descend past
        ``descend_s`` has reached the minimum (reported as a cut)."""
        if self.stop is None:
            return None
        elapsed = t_s - self._phase_t
        if self.stop == Stop.HOLD:
            if elapsed < self.hold_s:
                return Stop.HOLD
            elapsed -= self.hold_s
        if self.stop <= Stop.DESCEND and elapsed < self.descend_s:
            return Stop.DESCEND
        return Stop.CUT

    def tension(self, t_s: float, out: FloatArray | None = None) -> FloatArray:
        """The tensions to send at ``t_s`` [s] (into ``out`` when given)."""
        if self._from is None or self.stop is None:
            raise RuntimeError("StopSequence.tension: no stop stands")
        if out is None:
            out = np.empty_like(self._from)
        elapsed = t_s - self._phase_t
        if not math.isfinite(elapsed):
            elapsed = math.inf
        if self.stop == Stop.HOLD:
            elapsed -= self.hold_s
            if elapsed < 0.0:
                out[:] = self._from
                return out
        if self.stop == Stop.CUT:
            remaining = 0.0
        else:
            remaining = min(max(1.0 - elapsed / self.descend_s, 0.0), 1.0)
        # f_min + (f0 - f_min) * remaining: a straight line to the minimum
        np.subtract(self._from, self._f_min, out=out)
        np.maximum(out, 0.0, out=out)
        out *= remaining
        out += self._f_min
        return out
