"""Hill-type force-length curves of the muscle model (paper eq. 2-4, SPEC section 3).

Per muscle, with ``l_o = (l_min + l_max) / 2`` and ``l_range = l_max - l_min``:

- active force at full activation ``f_a(l) = f1/2 (1 + cos(2 pi (l - l_o) / (1.5 l_range)))`` for
  ``|l - l_o| <= 0.75 l_range``, else 0;
- passive force ``f_p(l) = f_min`` for ``l < l_o``, else
  ``f2 ((l - l_o) / (l_range / 2))^2 + f_min``;
- tension ``f = a f_a(l) + f_p(l)`` with activation ``a >= 0``.

All functions are vectorised over muscles: lengths and ranges are arrays of shape (m,).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.model.config import spec

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class HillParams:
    """Muscle model constants (paper Table I)."""

    f1_n: float = spec(200.0, gt=0.0, doc="peak active force at l_o [N]")
    f2_n: float = spec(40.0, ge=0.0, doc="passive force at l_o + l_range/2, above f_min [N]")
    f_min_n: float = spec(5.0, gt=0.0, doc="minimum tension that keeps a tendon taut [N]")


class MuscleForces(NamedTuple):
    """Force-length terms at the current lengths, each (m,) [N]."""

    active_n: FloatArray  # f_a(l): tension per unit activation
    passive_n: FloatArray  # f_p(l)


class ForceLengthCurves:
    """f_a(l) and f_p(l) of a set of muscles, with the per-muscle constants computed once.

    Called at every 125 Hz tick, so it spends few numpy calls: the active curve's argument
    ``2 pi (l - l_o) / (1.5 l_range)`` is clamped to [-pi, pi], where the cosine makes f_a
    exactly zero, instead of masking the outside (same values, one call instead of four).
    """

    def __init__(self, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams) -> None:
        self.l_opt_m = np.array(l_opt_m, dtype=float)  # (m,) [m]
        self._phase_per_m = 2.0 * np.pi / (1.5 * np.asarray(l_range_m, dtype=float))  # [1/m]
        self._stretch_per_m = 1.0 / (0.5 * np.asarray(l_range_m, dtype=float))  # [1/m]
        self._half_f1 = 0.5 * params.f1_n
        self._f2, self._f_min = params.f2_n, params.f_min_n

    def __call__(self, length_m: FloatArray) -> MuscleForces:
        """f_a and f_p at ``length_m`` (paper eq. 3-4), each (m,) [N]."""
        dl = length_m - self.l_opt_m
        phase = dl * self._phase_per_m
        np.maximum(phase, -np.pi, out=phase)
        np.minimum(phase, np.pi, out=phase)
        active = np.cos(phase, out=phase)
        active += 1.0
        active *= self._half_f1
        stretch = np.maximum(dl, 0.0, out=dl)
        stretch *= self._stretch_per_m
        passive = stretch * stretch
        passive *= self._f2
        passive += self._f_min
        return MuscleForces(active, passive)


def active_force(
    length_m: FloatArray, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams
) -> FloatArray:
    """f_a(l) [N] per unit activation (paper eq. 3)."""
    return ForceLengthCurves(l_opt_m, l_range_m, params)(length_m).active_n


def passive_force(
    length_m: FloatArray, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams
) -> FloatArray:
    """f_p(l) [N] (paper eq. 4): f_min below l_o, a quadratic rise above it."""
    return ForceLengthCurves(l_opt_m, l_range_m, params)(length_m).passive_n


def muscle_forces(
    length_m: FloatArray, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams
) -> MuscleForces:
    """Both force-length terms at once (for repeated calls, keep a :class:`ForceLengthCurves`)."""
    return ForceLengthCurves(l_opt_m, l_range_m, params)(length_m)


def tension(activation: FloatArray, forces: MuscleForces) -> FloatArray:
    """f = a f_a(l) + f_p(l) [N] (paper eq. 2)."""
    return activation * forces.active_n + forces.passive_n
