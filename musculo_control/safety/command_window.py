"""The tension commands the tendon driver sent, oldest first, for the tendon monitor's band.

Each entry is (stamp [s], least [N], most [N]) per tendon; least and most are equal but for a
gap of unknown outputs (:mod:`musculo_control.safety.tendon_monitor`). The monitor asks, at
every tendon sample, for the elementwise least and most over the entries that may be in effect
in a time window, about ten at the sensor rate: the entries are rows of one array, so that is
one ``minimum.reduce`` and one ``maximum.reduce`` over a slice (exact in any order) instead of a
numpy call per entry and tendon vector.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


class CommandWindow:
    """Sent commands in stamp order (strictly rising stamps), with the oldest ones dropped as
    the window moves on."""

    def __init__(self, m: int, capacity: int = 64) -> None:
        self.m = m
        self._stamps: list[float] = []  # rows [start, end) are live; older slots are stale
        self._rows = np.zeros((capacity, 2, m))  # [least; most] per entry [N]
        self._start = 0

    def reset(self, stamp_s: float, tension_n: FloatArray) -> None:
        """One entry: ``tension_n`` [N] (m,) in effect since ``stamp_s`` [s]."""
        self._stamps = []
        self._start = 0
        self.append(stamp_s, tension_n, tension_n)

    def __len__(self) -> int:
        return len(self._stamps) - self._start

    def append(self, stamp_s: float, least_n: FloatArray, most_n: FloatArray) -> None:
        """A command (least and most [N], (m,)) sent at ``stamp_s`` [s], after every other."""
        end = len(self._stamps)
        rows = self._rows
        if end == len(rows):  # full: drop the stale rows, or grow
            live = end - self._start
            if live * 2 > len(rows):
                rows = self._rows = np.concatenate([rows, np.zeros_like(rows)])
            rows[:live] = rows[self._start:end]
            del self._stamps[:self._start]
            self._start, end = 0, live
        row = rows[end]
        row[0] = least_n
        row[1] = most_n
        self._stamps.append(stamp_s)

    def newest_most(self) -> FloatArray:
        """(m,) the most of the newest command [N] (a copy)."""
        return self._rows[len(self._stamps) - 1, 1].copy()

    def drop_before(self, stamp_s: float) -> None:
        """Keep the command in effect at ``stamp_s`` [s] (the newest one stamped at or before
        it) as the first entry; drop the older ones. The first entry always stays."""
        first = bisect_right(self._stamps, stamp_s, self._start + 1) - 1
        if first > self._start:
            self._start = first

    def bounds_upto(self, stamp_s: float, out: FloatArray) -> FloatArray:
        """``out`` (2, m): the elementwise least and most [N] of the first entry and of every
        later one stamped at or before ``stamp_s`` [s]."""
        start = self._start
        end = bisect_right(self._stamps, stamp_s, start + 1)
        if end == start + 1:
            np.copyto(out, self._rows[start])
        else:
            window = self._rows[start:end]
            np.minimum.reduce(window[:, 0], axis=0, out=out[0])
            np.maximum.reduce(window[:, 1], axis=0, out=out[1])
        return out
