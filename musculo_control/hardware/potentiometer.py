"""Joint potentiometers: ADC counts -> joint angle and filtered velocity, with fault detection.

Pure logic with explicit time: the caller passes each sample's stamp and, for staleness, the
current time; nothing here reads a clock. A joint whose sample is faulted keeps its last good
angle (NaN until it has had one) and the reading lists why; a consumer must not control on a
reading whose ``faults`` is not empty.

Faults, each a sentence naming the joint:

- wrong number of values, or a non-finite count;
- a count within ``rail_margin_counts`` of 0 or of full scale (open or shorted wire);
- an angle beyond the joint limits by more than ``limit_margin_rad``;
- a stamp not after the previous one;
- counts identical for longer than ``stuck_timeout_s`` (a frozen converter; 0 turns it off);
- no sample for longer than a limit (:meth:`PotentiometerReader.check`; safety.yaml
  ``inputs.joint_state.hold_s``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec
from musculo_control.hardware.calibration import Calibration
from musculo_control.hardware.filters import FilteredDifferentiator

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class PotentiometerReaderConfig:
    """``hardware.yaml`` key ``potentiometer_reader``."""

    velocity_cutoff_hz: float = spec(20.0, gt=0.0, doc="low-pass cutoff of the joint velocity [Hz]")
    stuck_timeout_s: float = spec(
        0.0, ge=0.0, doc="identical counts for longer is a fault [s]; 0 = off (use only when "
                         "the converter's noise keeps the last bit moving)")
    limit_margin_rad: float = spec(0.1, ge=0.0,
                                   doc="angles beyond the joint limits by more are faults [rad]")
    rail_margin_counts: float = spec(2.0, ge=0.0,
                                     doc="counts this close to 0 or full scale are faults [counts]")


class PotentiometerReading(NamedTuple):
    """One converted sample."""

    stamp_s: float  # time of the sample [s]
    q_rad: FloatArray  # (n,) joint angles; last good value of a faulted joint [rad]
    qd_rad_s: FloatArray  # (n,) filtered joint velocities [rad/s]
    faults: tuple[str, ...]  # empty when every joint is good

    @property
    def ok(self) -> bool:
        return not self.faults


class PotentiometerReader:
    """Counts (+ stamp) -> q, qd, faults for every joint, in robot joint order."""

    def __init__(self, calibration: Calibration, lower_rad: FloatArray, upper_rad: FloatArray,
                 config: PotentiometerReaderConfig) -> None:
        self.calibration = calibration
        self.config = config
        self.names = calibration.joint_names
        self.n = len(self.names)
        self._lo = np.asarray(lower_rad, float) - config.limit_margin_rad
        self._hi = np.asarray(upper_rad, float) + config.limit_margin_rad
        self._rail_lo = config.rail_margin_counts
        self._rail_hi = calibration.pot_full_scale_counts - config.rail_margin_counts
        # counts inside which a joint is surely good (rail and limits at once), shrunk by a hair
        # so that the fast path never accepts what the detailed checks would reject
        c_lo_q, c_hi_q = np.sort(np.stack([calibration.rad_to_counts(self._lo),
                                           calibration.rad_to_counts(self._hi)]), axis=0)
        self._fast_lo = np.maximum(c_lo_q, self._rail_lo) + 1e-6
        self._fast_hi = np.minimum(c_hi_q, self._rail_hi) - 1e-6
        self._diff = FilteredDifferentiator(self.n, config.velocity_cutoff_hz)
        self.reset()

    def reset(self) -> None:
        self._diff.reset()
        self._q = np.full(self.n, np.nan)
        self._last_stamp = -math.inf
        self._last_counts = np.full(self.n, np.nan)
        self._changed_at = np.full(self.n, np.nan)  # when each joint's counts last changed [s]
        self.last: PotentiometerReading | None = None

    def update(self, counts: npt.ArrayLike, stamp_s: float) -> PotentiometerReading:
        """Convert one sample of all joints taken at ``stamp_s`` [s]."""
        faults: list[str] = []
        try:
            c = np.asarray(counts, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            c = np.empty(0)
        if c.shape != (self.n,):
            return self._reject(stamp_s, f"potentiometers: expected {self.n} counts "
                                         f"{list(self.names)}, received shape {c.shape}")
        if not math.isfinite(stamp_s) or stamp_s <= self._last_stamp:
            return self._reject(stamp_s, f"potentiometers: stamp {stamp_s} not after the "
                                         f"previous sample's {self._last_stamp}")
        self._last_stamp = stamp_s
        inside = c > self._fast_lo
        inside &= c < self._fast_hi
        if self.config.stuck_timeout_s == 0.0 and np.count_nonzero(inside) == self.n:
            # fast path: every joint good (NaN fails both comparisons)
            q = self.calibration.counts_to_rad(c)
            self._q[:] = q
            reading = PotentiometerReading(stamp_s, q, self._diff.update(q, stamp_s), ())
            self.last = reading
            return reading
        good = np.isfinite(c)
        for j in np.flatnonzero(~good):
            faults.append(f"{self.names[j]}: potentiometer count is not finite ({c[j]})")
        rail = good & ((c <= self._rail_lo) | (c >= self._rail_hi))
        for j in np.flatnonzero(rail):
            faults.append(f"{self.names[j]}: potentiometer at the ADC rail ({c[j]:.0f} counts; "
                          f"open or shorted wire)")
        good &= ~rail
        q = self.calibration.counts_to_rad(np.where(good, c, 0.0))
        out = good & ((q < self._lo) | (q > self._hi))
        for j in np.flatnonzero(out):
            faults.append(f"{self.names[j]}: angle {q[j]:+.3f} rad outside the limits "
                          f"[{self._lo[j]:+.3f}, {self._hi[j]:+.3f}] rad (margin included)")
        good &= ~out
        if self.config.stuck_timeout_s > 0.0:
            changed = good & (c != self._last_counts)
            self._changed_at[changed] = stamp_s
            self._last_counts[good] = c[good]
            stuck = good & (stamp_s - self._changed_at > self.config.stuck_timeout_s)
            for j in np.flatnonzero(stuck):
                faults.append(f"{self.names[j]}: potentiometer stuck at {c[j]:.0f} counts for "
                              f"{stamp_s - self._changed_at[j]:.3f} s")
        self._q[good] = q[good]
        qd = self._diff.update(self._q, stamp_s, good)
        reading = PotentiometerReading(stamp_s, self._q.copy(), qd, tuple(faults))
        self.last = reading
        return reading

    def check(self, now_s: float, stale_timeout_s: float) -> tuple[str, ...]:
        """Faults at ``now_s`` [s]: the last reading's, plus no sample for ``stale_timeout_s``."""
        if self.last is None:
            return ("potentiometers: no sample yet",)
        faults = list(self.last.faults)
        age = now_s - self.last.stamp_s
        if not age <= stale_timeout_s:
            faults.append(f"potentiometers: last sample is {age:.3f} s old (limit "
                          f"{stale_timeout_s} s)")
        return tuple(faults)

    def _reject(self, stamp_s: float, reason: str) -> PotentiometerReading:
        stamp = self.last.stamp_s if self.last is not None else stamp_s
        reading = PotentiometerReading(stamp, self._q.copy(), self._diff.velocity.copy(),
                                       (reason,))
        self.last = reading  # keeps the previous good stamp, so staleness still counts
        return reading
