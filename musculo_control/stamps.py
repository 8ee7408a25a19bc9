"""Message stamps: exact (sec, nanosec) times.

ROS stamps are two integers; converting them to a float of seconds loses nothing that matters
for ages and periods (0.2 us near today's epoch), but a stamp that must be echoed back (the
dynamics snapshot carries the stamp of its source joint state) travels as the two integers.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from musculo_control.errors import InputError

NS_PER_S = 1_000_000_000


class Stamp(NamedTuple):
    """A ROS time as (sec, nanosec), both integers, 0 <= nanosec < 1e9."""

    sec: int
    nanosec: int

    @property
    def seconds(self) -> float:
        return self.sec + self.nanosec * 1e-9

    @property
    def nanoseconds(self) -> int:
        return self.sec * NS_PER_S + self.nanosec

    @property
    def is_zero(self) -> bool:
        return self.sec == 0 and self.nanosec == 0

    @classmethod
    def from_seconds(cls, t_s: float) -> Stamp:
        if not math.isfinite(t_s):
            raise InputError("stamp", "a finite time", t_s)
        # whole seconds apart: t_s * 1e9 near today's epoch (1.8e18) would round to 256 ns
        sec = math.floor(t_s)
        ns = round((t_s - sec) * NS_PER_S)
        return cls.from_nanoseconds(sec * NS_PER_S + ns)

    @classmethod
    def from_nanoseconds(cls, t_ns: int) -> Stamp:
        return cls(int(t_ns) // NS_PER_S, int(t_ns) % NS_PER_S)
