"""The minimum-jerk profile: a rest-to-rest move with zero velocity and acceleration at both
ends (Flash and Hogan 1985), the one profile of every goal that moves (experiments, fault
matrix, soak, trajectory files).

With u = t / T clamped to [0, 1], the fraction of the move is
s(u) = 10 u^3 - 15 u^4 + 6 u^5, and its time derivatives are s'(u) / T and s''(u) / T^2.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def _fraction(t_s: float, duration_s: float) -> tuple[float, float, float]:
    """(s, ds/du, d2s/du2) at u = t_s / duration_s clamped to [0, 1] (unitless)."""
    u = min(max(t_s / duration_s, 0.0), 1.0)
    return (10 * u**3 - 15 * u**4 + 6 * u**5,
            30 * u**2 - 60 * u**3 + 30 * u**4,
            60 * u - 180 * u**2 + 120 * u**3)


def minimum_jerk_profile(t_s: float, duration_s: float) -> tuple[float, float, float]:
    """s(t) [-], ds/dt [1/s], d2s/dt2 [1/s^2] of the profile from 0 to 1 (clamped outside
    [0, duration_s]); for moves that interpolate more than a vector (a rotation too)."""
    s, ds_du, dds_du = _fraction(t_s, duration_s)
    return s, ds_du / duration_s, dds_du / duration_s**2


def minimum_jerk(start: FloatArray, end: FloatArray, duration_s: float,
                 t_s: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Position, velocity and acceleration of a minimum-jerk move from ``start`` to ``end``
    at ``t_s`` (clamped to [0, duration_s]); units of ``start`` per s^0, s^1, s^2."""
    s, ds_du, dds_du = _fraction(t_s, duration_s)
    d = end - start
    # d * (ds/du) / T, not (ds/du / T) * d: the experiments' seeded figures keep their last bit
    return start + d * s, d * ds_du / duration_s, d * dds_du / duration_s**2
