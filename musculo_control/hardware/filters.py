"""Velocity of sampled positions: a backward difference smoothed by a first-order low-pass.

The low-pass is discretised exactly for a piecewise-constant input: with ``dt`` the time since
the element's previous sample, ``alpha = 1 - exp(-2 pi f_c dt)`` and
``v <- v + alpha ((x - x_prev) / dt - v)``. Irregular sample times are fine; each element keeps
its own previous sample so elements can skip samples (a faulted sensor).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


class FilteredDifferentiator:
    """Per-element filtered derivative of a vector signal."""

    def __init__(self, size: int, cutoff_hz: float) -> None:
        if not (cutoff_hz > 0.0 and math.isfinite(cutoff_hz)):
            raise ValueError(f"cutoff_hz: expected a positive finite number; received {cutoff_hz}")
        self.size = size
        self._omega = 2.0 * math.pi * cutoff_hz  # [rad/s]
        self.reset()

    def reset(self) -> None:
        self._x = np.full(self.size, np.nan)  # last accepted sample per element
        self._t = np.full(self.size, np.nan)  # its time [s]
        self._common_t: float | None = None  # the time of every element's last sample, if shared
        self.velocity: FloatArray = np.zeros(self.size)  # filtered derivative [unit/s]

    def update(self, x: FloatArray, stamp_s: float, valid: BoolArray | None = None) -> FloatArray:
        """Take sample ``x`` at ``stamp_s``; elements where ``valid`` is False are skipped.

        The first sample of an element sets its velocity to zero. Samples not later than the
        element's previous one are ignored. ``valid=None`` means every element is valid.
        """
        if valid is None and self._common_t is not None:
            # fast path: every element sampled together, as in normal operation; the per-element
            # times are all _common_t and written out only when the slow path needs them
            dt = stamp_s - self._common_t
            if dt > 0.0:
                alpha = 1.0 - math.exp(-self._omega * dt)
                step = x - self._x
                step /= dt  # the raw derivative
                step -= self.velocity
                step *= alpha
                self.velocity += step
                self._x[:] = x
                self._common_t = stamp_s
            return self.velocity.copy()
        if self._common_t is not None:
            self._t[:] = self._common_t
        ok = np.ones(self.size, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
        dt_all = stamp_s - self._t  # NaN where no previous sample
        step = ok & (dt_all > 0.0)
        if np.any(step):
            alpha_v = 1.0 - np.exp(-self._omega * dt_all[step])
            raw_v = (x[step] - self._x[step]) / dt_all[step]
            self.velocity[step] += alpha_v * (raw_v - self.velocity[step])
        first = ok & np.isnan(self._t)
        self.velocity[first] = 0.0
        take = step | first
        self._x[take] = x[take]
        self._t[take] = stamp_s
        self._common_t = stamp_s if np.all(self._t == stamp_s) else None
        return self.velocity.copy()
