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


def active_force(
    length_m: FloatArray, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams,
    f1_n: FloatArray | None = None,
) -> FloatArray:
    """f_a(l) [N] per unit activation (paper eq. 3); ``f1_n`` (m,) overrides ``params.f1_n``."""
    dl = length_m - l_opt_m
    inside = np.abs(dl) <= 0.75 * l_range_m
    f1 = params.f1_n if f1_n is None else f1_n
    fa = 0.5 * f1 * (1.0 + np.cos(2.0 * np.pi * dl / (1.5 * l_range_m)))
    return np.where(inside, fa, 0.0)


def passive_force(
    length_m: FloatArray, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams
) -> FloatArray:
    """f_p(l) [N] (paper eq. 4): f_min below l_o, a quadratic rise above it."""
    stretch = np.maximum(length_m - l_opt_m, 0.0) / (0.5 * l_range_m)
    return params.f2_n * stretch**2 + params.f_min_n


def muscle_forces(
    length_m: FloatArray, l_opt_m: FloatArray, l_range_m: FloatArray, params: HillParams,
    f1_n: FloatArray | None = None,
) -> MuscleForces:
    """Both force-length terms at once; ``f1_n`` (m,) as in :func:`active_force`."""
    return MuscleForces(
        active_force(length_m, l_opt_m, l_range_m, params, f1_n),
        passive_force(length_m, l_opt_m, l_range_m, params),
    )


def tension(activation: FloatArray, forces: MuscleForces) -> FloatArray:
    """f = a f_a(l) + f_p(l) [N] (paper eq. 2)."""
    return activation * forces.active_n + forces.passive_n
