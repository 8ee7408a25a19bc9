"""Input streams of a stage: stamps in order, the newest message kept, its age known.

Every stage takes each of its inputs through one :class:`Latest`, so the ordering rule of a
message stream and the age of its newest sample are decided in one place for the whole loop:
by the runner in simulated time and by the nodes on the ROS clock (stamps as float seconds;
``Stamp.seconds`` of a ROS stamp).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Generic, TypeVar

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError

T = TypeVar("T")

#: Grades of an input's age (:meth:`InputBounds.grade`).
ON_TIME, LATE, STALE = 0, 1, 2


@dataclass(frozen=True, kw_only=True)
class InputBounds:
    """How old one input may be (``safety.yaml`` ``inputs.<stream>``): up to ``late_s`` it is
    on time; up to ``hold_s`` it is *late*: reported at WARN and counted while control goes on
    with the newest sample; beyond ``hold_s`` it is *stale*: a fault, every tendon at the
    minimum tension. Without ``late_s`` (or with it equal to ``hold_s``) an input has no late
    stage: on time, then stale, as before late inputs were graded."""

    late_s: float = spec(None, gt=0.0, doc="older: reported as late, control goes on [s]; "
                                           "default hold_s: no late stage")
    hold_s: float = spec(gt=0.0, doc="older: a fault, every tendon at minimum tension [s]")

    def __post_init__(self) -> None:
        if self.late_s is None:
            object.__setattr__(self, "late_s", self.hold_s)

    def check(self, file: str, key: str) -> None:
        if not self.late_s <= self.hold_s:
            raise ConfigError(file, f"{key}.late_s" if key else "late_s",
                              f"at most hold_s = {self.hold_s} s (late is reported before "
                              f"the safe state)", self.late_s)

    def grade(self, age_s: float) -> int:
        """:data:`ON_TIME`, :data:`LATE` or :data:`STALE` for an input ``age_s`` [s] old (NaN:
        stale)."""
        if age_s <= self.late_s:
            return ON_TIME
        return LATE if age_s <= self.hold_s else STALE


@dataclass(frozen=True, kw_only=True)
class LateInputsConfig:
    """The graded answer to late inputs, one pair of bounds per input stream (``safety.yaml``
    ``inputs``): one policy for the ROS-free runner and the nodes."""

    joint_state: InputBounds = spec(doc="joint_states at the controller and the dynamics "
                                        "stage; late ones are extrapolated by their velocity")
    tendon_state: InputBounds = spec(doc="muscle_states at the controller, hw/tendon_states "
                                         "at the tendon driver")
    driver_output: InputBounds = spec(doc="hw/tendon_commands (what the tendon driver sends) "
                                          "at the controller: a dead driver")
    muscle_commands: InputBounds = spec(doc="muscle_commands at the tendon driver: a dead "
                                            "controller (the driver's watchdog)")
    snapshot: InputBounds = spec(doc="the 20 Hz dynamics snapshot at the controller (its age "
                                     "counts from the joint sample it was computed from)")
    own_pause_s: float = spec(0.015, gt=0.0, doc="a tick of the controller or of the tendon "
                                                 "driver this long after its previous one is "
                                                 "its own pause: inputs on time before it are "
                                                 "aged from the tick after it [s]")



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
        self.last_s: float | None = None

    def reset(self) -> None:
        self.last_s = None

    def check(self, stamp_s: float) -> str | None:
        """Why a message stamped ``stamp_s`` [s] is refused, or ``None`` (it becomes the
        reference)."""
        if not math.isfinite(stamp_s):
            return f"{self.what}: stamp {stamp_s} is not a finite time"
        if stamp_s == 0.0:
            return None if self.allow_zero else f"{self.what}: stamp is zero (not set)"
        last = self.last_s
        if last is not None and (stamp_s < last or (self.strict and stamp_s == last)):
            word = "before" if stamp_s < last else "equal to"
            return (f"{self.what}: stamp {stamp_s:.6f} s {word} the previous {last:.6f} s "
                    f"(out of order)")
        self.last_s = stamp_s
        return None


class Latest(Generic[T]):
    """The newest in-order message of one stream, with its stamp."""

    def __init__(self, what: str, *, strict: bool = True, allow_zero: bool = False) -> None:
        self.what = what
        self.order = StampOrder(what, strict=strict, allow_zero=allow_zero)
        self.value: T | None = None
        self.stamp_s = -math.inf
        self.count = 0  # messages accepted

    def reset(self) -> None:
        self.order.reset()
        self.value = None
        self.stamp_s = -math.inf
        self.count = 0

    def offer(self, stamp_s: float, value: T) -> str | None:
        """Keep ``value`` if its stamp is in order; else why it was refused."""
        late = self.order.check(stamp_s)
        if late is not None:
            return late
        self.value = value
        self.stamp_s = stamp_s
        self.count += 1
        return None

    def age_s(self, now_s: float) -> float:
        """Time since the newest message's stamp (inf before the first) [s]."""
        return now_s - self.stamp_s


class OwnPause:
    """A consumer's own pause: a tick ``pause_s`` or more after its previous tick means the
    consumer itself was not running (its process stopped or not scheduled), and its inputs aged
    with it. An input that was on time at the last tick before the pause is then aged from the
    first tick after it, until a fresh sample arrives; so a pause resynchronises on the samples
    that come after it instead of being blamed on them. An input that was already late before
    the pause keeps its true age, so pauses that recur cannot hide a sensor that stopped.
    """

    def __init__(self, pause_s: float = math.inf) -> None:
        self.pause_s = pause_s
        self.reset()

    def reset(self) -> None:
        self._prev_s = math.nan  # the previous tick
        self._before_s = -math.inf  # the last tick before the newest pause
        self.resumed_s = -math.inf  # the first tick after it
        self.pauses = 0  # pauses seen

    def tick(self, now_s: float) -> bool:
        """A tick at ``now_s`` [s]; whether it ends a pause."""
        paused = now_s - self._prev_s >= self.pause_s
        if paused:
            self._before_s, self.resumed_s = self._prev_s, now_s
            self.pauses += 1
        if math.isfinite(now_s):
            self._prev_s = now_s
        return paused

    def age_s(self, now_s: float, stamp_s: float, bounds: InputBounds) -> float:
        """The age of a sample stamped ``stamp_s`` at ``now_s`` [s], its own pause left out."""
        if stamp_s < self.resumed_s and stamp_s >= self._before_s - bounds.late_s:
            return now_s - self.resumed_s
        return now_s - stamp_s
