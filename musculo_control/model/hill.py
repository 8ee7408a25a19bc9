"""Hill-type force-length curves of the muscle model (paper eq. 2-4, SPEC section 3).

Per muscle, with ``l_o = (l_min + l_max) / 2`` and ``l_range = l_max - l_min``:

- active force at full activation ``f_a(l) = f1/2 (1 + cos(2 pi (l - l_o) / (1.5 l_range)))`` for
  ``|l - l_o| <= 0.75 l_range``, else 0;
- passive force ``f_p(l) = f_min`` for ``l < l_o``, else
  ``f2 ((l - l_o) / (l_range / 2))^2 + f_min``;
- tension ``f = a f_a(l) + f_p(l)`` with activation ``a >= 0``.

All functions are vectorised over muscles: lengths and ranges are arrays of shape (m,). The peak
force f1 is one value for all muscles (``HillParams.f1_n``, the paper's Table I) unless a
per-muscle array ``f1_n`` (m,) is given (a robot whose muscles differ, e.g. an MJCF's muscle
actuators, :attr:`musculo_control.model.robot.Robot.f1_n`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec

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

    Called at every 125 Hz tick, so it spends few numpy calls, each on whole arrays (a scalar
    operand costs numpy more than an array one): the active curve's argument
    ``2 pi (l - l_o) / (1.5 l_range)`` is clamped to [-pi, pi], where the cosine makes f_a
    exactly zero, instead of masking the outside; f_p is ``(sqrt(f2) s)^2 + f_min`` with the
    stretch ``s = max(l - l_o, 0) / (l_range / 2)``.
    """

    def __init__(self, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams,
                 f1_n: FloatArray | None = None) -> None:
        """``f1_n`` (m,): each muscle's peak force (default ``params.f1_n`` for all) [N]."""
        l_range = np.asarray(l_range_m, dtype=float)
        self.l_opt_m = np.array(l_opt_m, dtype=float)  # (m,) [m]
        ones = np.ones_like(self.l_opt_m)
        self._phase_per_m = 2.0 * np.pi / (1.5 * l_range)  # [1/m]
        self._pi = np.pi * ones
        self._minus_pi = -self._pi
        f1 = params.f1_n if f1_n is None else np.asarray(f1_n, dtype=float)
        self._half_f1 = 0.5 * f1 * ones  # [N]
        self._zero = 0.0 * ones
        self._root_f2_per_m = np.sqrt(params.f2_n) / (0.5 * l_range)  # [sqrt(N)/m]
        self._f_min = params.f_min_n * ones  # [N]

    def __call__(self, length_m: FloatArray) -> MuscleForces:
        """f_a and f_p at ``length_m`` (paper eq. 3-4), each (m,) [N]."""
        dl = length_m - self.l_opt_m
        active = dl * self._phase_per_m
        np.maximum(active, self._minus_pi, out=active)
        np.minimum(active, self._pi, out=active)
        np.cos(active, out=active)
        active *= self._half_f1
        active += self._half_f1
        passive = np.maximum(dl, self._zero, out=dl)
        passive *= self._root_f2_per_m
        passive *= passive
        passive += self._f_min
        return MuscleForces(active, passive)


def active_force(
    length_m: FloatArray, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams,
    f1_n: FloatArray | None = None,
) -> FloatArray:
    """f_a(l) [N] per unit activation (paper eq. 3); ``f1_n`` (m,) overrides ``params.f1_n``."""
    return ForceLengthCurves(l_opt_m, l_range_m, params, f1_n)(length_m).active_n


def passive_force(
    length_m: FloatArray, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams
) -> FloatArray:
    """f_p(l) [N] (paper eq. 4): f_min below l_o, a quadratic rise above it."""
    return ForceLengthCurves(l_opt_m, l_range_m, params)(length_m).passive_n


def muscle_forces(
    length_m: FloatArray, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams,
    f1_n: FloatArray | None = None,
) -> MuscleForces:
    """Both force-length terms at once; ``f1_n`` (m,) as in :func:`active_force` (for repeated
    calls, keep a :class:`ForceLengthCurves`)."""
    return ForceLengthCurves(l_opt_m, l_range_m, params, f1_n)(length_m)


def tension(activation: FloatArray, forces: MuscleForces) -> FloatArray:
    """f = a f_a(l) + f_p(l) [N] (paper eq. 2)."""
    return activation * forces.active_n + forces.passive_n
