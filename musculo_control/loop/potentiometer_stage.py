"""Joint potentiometers: raw counts in, joint states out (``potentiometer_node``'s logic).

A sample is refused when its stamp is out of order (dropped, a warning), and not passed on
when the reader finds a fault in it (a joint at the ADC rail, beyond its limits, a non-finite
count): consumers then see their joint state go stale and fall back to minimum tension,
while this stage says which joint failed. :meth:`PotentiometerStage.check` adds lateness (a
warning) and staleness (an error; safety.yaml ``inputs.joint_state``).
"""

from __future__ import annotations

import numpy.typing as npt

from musculo_control.hardware.potentiometer import PotentiometerReader, PotentiometerReading
from musculo_control.loop import topics
from musculo_control.loop.health import ERROR, OK, WARN, Health
from musculo_control.streams import LATE, InputBounds, StampOrder

IN_TOPIC = topics.POTENTIOMETERS
OUT_TOPIC = topics.JOINT_STATES


class PotentiometerStage:
    """Counts (+ stamp) -> joint state to publish, or nothing (see the module docstring)."""

    def __init__(self, reader: PotentiometerReader, joint_state: InputBounds,
                 warn_throttle_s: float = 1.0) -> None:
        """``joint_state``: how old the newest sample may be (safety.yaml
        ``inputs.joint_state``): late, a warning; stale, an error."""
        self.reader = reader
        self.bounds = joint_state
        self.order = StampOrder(IN_TOPIC)
        self.health = Health("potentiometers", warn_throttle_s)
        self.published = 0

    def reset(self) -> None:
        self.reader.reset()
        self.order.reset()
        self.published = 0

    def receive(self, stamp_s: float, counts: npt.ArrayLike) -> PotentiometerReading | None:
        """The joint state to publish for one raw sample, or ``None``."""
        late = self.order.check(stamp_s)
        if late is not None:
            self.health.refuse(IN_TOPIC, late, stamp_s)
            return None
        reading = self.reader.update(counts, stamp_s)
        if not reading.ok:
            self.health.set(ERROR, "; ".join(reading.faults), stamp_s)
            return None
        self.published += 1
        return reading

    def check(self, now_s: float) -> None:
        """Update the health at ``now_s`` [s]: the last sample's faults, lateness and
        staleness."""
        faults = self.reader.check(now_s, self.bounds.hold_s)
        if faults:
            self.health.set(ERROR, "; ".join(faults), now_s)
        elif self.reader.last is not None \
                and self.bounds.grade(now_s - self.reader.last.stamp_s) == LATE:
            age = now_s - self.reader.last.stamp_s
            self.health.set(WARN, f"newest sample {age * 1e3:.1f} ms old (late beyond "
                                  f"{self.bounds.late_s * 1e3:.0f} ms)", now_s)
        else:
            self.health.set(OK, f"publishing {OUT_TOPIC}", now_s)

    def values(self) -> dict[str, str]:
        return {"published": str(self.published), **self.health.values()}
