"""Cheap tests on the short arrays of the loop (one entry per joint or muscle).

On arrays of tens of entries numpy's cost is its per-call overhead, not the arithmetic, and its
reductions are the dearest calls: ``m.any()``, ``np.all(m)`` or ``a.max()`` go through several
Python layers (1.5-4 us each on the development machine), while ``np.count_nonzero`` and a dot
product are single C calls (0.3-0.8 us). The loop's stages test a few such arrays at every
sample, 500 times a second per stage; these helpers answer the same questions cheaply.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def all_finite(*arrays: FloatArray) -> bool:
    """True when no array holds a NaN or an infinity.

    One dot product of each array with itself instead of an elementwise test (the cheapest
    numpy call that touches every entry): a NaN or an infinity makes it non-finite. It also
    overflows from finite values beyond ~1e154, which then count as non-finite too; no torque,
    tension or activation gets there, and such a value is refused as it should be. (Where a
    huge finite value must pass, use this as the fast test and decide exactly when it fails.)
    """
    total = 0.0
    for arr in arrays:
        total += float(arr.dot(arr) if arr.ndim == 1 else np.vdot(arr, arr))
    return math.isfinite(total)


def any_true(values: npt.NDArray[Any]) -> bool:
    """``values.any()`` (a True or non-zero entry), at a fifth of its cost."""
    return np.count_nonzero(values) != 0


def finite(*arrays: FloatArray) -> bool:
    """True when no array holds a NaN or an infinity, exactly (huge finite values pass):
    :func:`all_finite` decides the common case, an elementwise test the rest."""
    return all_finite(*arrays) or all(bool(np.isfinite(a).all()) for a in arrays)


def largest(values: FloatArray) -> float:
    """``float(values.max())`` (NaN if any is NaN) of a 1-D array, at half its cost."""
    return float(np.maximum.reduce(values))


def smallest(values: FloatArray) -> float:
    """``float(values.min())`` (NaN if any is NaN) of a 1-D array, at half its cost."""
    return float(np.minimum.reduce(values))
