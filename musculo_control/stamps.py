"""Message stamps: exact (sec, nanosec) times and the ordering rule of a message stream.

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


class StampOrder:
    """Accepts a stream's stamps only in increasing order.

    ``strict`` (sensor streams): each stamp must come after the previous accepted one; a
    repeated stamp is a duplicate. Otherwise (goals, set by hand) an equal stamp passes, an
    earlier one does not. ``allow_zero``: a zero stamp (a message published without one, as
    ``ros2 topic pub`` does) is accepted and does not move the reference.
    """

    def __init__(self, what: str, *, strict: bool = True, allow_zero: bool = False) -> None:
        self.what = what
        self.strict = strict
        self.allow_zero = allow_zero
        self.last: Stamp | None = None

    def reset(self) -> None:
        self.last = None

    def check(self, stamp: Stamp) -> str | None:
        """Why ``stamp`` is refused, or ``None`` (then it becomes the reference)."""
        if stamp.nanosec < 0 or stamp.nanosec >= NS_PER_S:
            return f"{self.what}: stamp nanosec {stamp.nanosec} outside [0, 1e9)"
        if stamp.is_zero:
            return None if self.allow_zero else f"{self.what}: stamp is zero (not set)"
        last = self.last
        if last is not None:
            earlier = stamp.nanoseconds < last.nanoseconds
            if earlier or (self.strict and stamp.nanoseconds == last.nanoseconds):
                word = "before" if earlier else "equal to"
                return (f"{self.what}: stamp {stamp.seconds:.6f} s {word} the previous "
                        f"{last.seconds:.6f} s (out of order)")
        self.last = stamp
        return None
