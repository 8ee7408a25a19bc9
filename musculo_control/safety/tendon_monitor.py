"""Per-tendon checks on the measured muscle state: slack, runaway, tension tracking.

It runs where the tendon states arrive (the tendon driver node, or the runner at 500 Hz) and
knows what the driver sent, so it can say what each load cell *should* read: the sent tension,
arriving at the actuator ``command_delay_s`` to ``command_delay_s + command_jitter_s`` after it
was sent (the modules take the newest command at their own tick, and on a loaded computer the
hop itself is late), through the actuator's first-order lag ``tau``
(``tendons.actuator_time_constant_s``). Since the lag is monotone in its input, a healthy
load cell reads inside a band: the lag of the smallest and of the largest command that can be
in effect at each instant (any command sent in the last ``jitter``, and the one before),
advanced exactly between samples, ``e <- e + (1 - exp(-dt / tau)) (c - e)``; the least rises
no faster than ``rise_rate_n_s``, the slowest healthy rise of a tension step (an elastic wire:
its stiffness times the winch's speed). (Without the delay
a 700 N step alone would put the expectation 70 N ahead for a few milliseconds; without the
jitter a command delivered 7 ms late, seen on a loaded 2-core computer, latched a healthy
actuator.)

- ``tendon_slack``: tension below ``slack_tension_n`` for ``slack_samples`` samples on a tendon
  slower than ``tracking_max_rate_m_s``, although the driver never sends less than its
  minimum: the tendon came off its winch or its load cell failed. (Faster, the winch is at its
  speed limit and cannot keep the tendon taut; that is the motor envelope, not a fault. A
  snapped tendon's free winch runs there; the joint/tendon consistency check catches it.)
- ``tendon_runaway``: |length rate| above ``max_length_rate_m_s`` or a length outside
  [l_min, l_max] +- ``length_margin_m``: an unloaded winch winds in at its no-load speed.
- ``actuator_tracking``: measured tension below the band by more than
  ``tracking_tolerance_n``, or above it by more than ``tracking_excess_tolerance_n``, and not
  shrinking, for ``tracking_samples`` consecutive samples, on a tendon moving slower than
  ``tracking_max_rate_m_s``: the actuator saturates below its command (motor current or supply
  limit), or the load cell is off. (Faster, the winch motor's back-EMF limits the tension by
  design.) A healthy actuator knocked off its command, by a joint striking its stop or a
  millisecond at its speed limit, closes the gap at its lag's rate, since it and the band
  follow the same commands through the same lag; a gap that stops shrinking is an actuator
  that cannot deliver. At a steady command the band is that command's: a saturated actuator
  is seen within ``tracking_samples``, as before the band.

- ``actuator_lagging``: the first such miss (not latched). A module whose commands reach it
  late, or not at all for a while, holds its last command and reads exactly like a weak one
  (measured at wall clock under load: no command delivered for 50 ms while the driver kept
  sending); the band restarts from the load cells and control restarts. A second miss within
  ``tracking_confirm_window_s``, after every tendon has tracked again for
  ``tracking_clean_s`` (at minimum tension, then on the resume ramp), is ``actuator_tracking``.
- ``actuator_watchdog``: the tracking misses of ``actuator_tracking``, but every loaded tendon
  reads as if one common factor ``e`` had pulled it towards ``watchdog_tension_n`` ``w``:
  ``f - w = e (x - w)``, ``x`` where its band was since the last sample on which every tendon
  tracked, within ``watchdog_tolerance_n``, and ``e`` no smaller than the actuators' lag allows
  since that sample. That is what the actuator modules do when the driver's commands stop
  reaching them for longer than their own watchdog (a late or lost link on a loaded computer;
  measured: no command delivered to the mock arm for 50 ms while the driver kept sending, and
  every tension fell at the lag, 0.905 of its distance to 5 N a sample): each module lags from
  its tension towards ``w``. The modules are healthy, so the fault is not latched; the band
  restarts from the load cells, and the fault stands while the readings keep falling short.
  The episode lasts until the tendons have tracked for ``tracking_clean_s`` with some band
  above ``w`` by more than ``tracking_tolerance_n`` (at minimum tension a silent module reads
  as a working one); while it lasts, every tendon reading ``w`` within the tolerance is still
  the hold: on the controller's ramp back up from minimum tension a single tendon may be
  loaded, and one factor has nothing to compare. Outside an episode that reading is judged as
  a miss (one dead module under the only loaded tendon reads the same).
  One actuator short of its command, tensions held at a cap (those under it do not fall) or a
  tension that rises too slowly are ``actuator_tracking``.

The band restarts from the load cells when it cannot be trusted: after a gap longer than
``tracking_resync_gap_s`` between two driver outputs or two tendon samples seen (lost or late
messages). What the actuators were sent in a gap of the outputs is unknown: anything from 0 to
the larger of the commands around it may take effect until the window has passed the output
after the gap. Samples and outputs must come in stamp order
(:class:`~musculo_control.loop.control_step.ControlStep` joins the two streams); a sample
older than the band's time is checked for slack and runaway only.

A sample with sensor faults (non-finite counts) is the driver's business (rule
``tendon_state``); its tendons are skipped here.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from musculo_control.arrays import all_finite, any_true, largest, smallest
from musculo_control.hardware.tendon_driver import TendonState
from musculo_control.safety.command_window import CommandWindow
from musculo_control.safety.config import TendonMonitorConfig
from musculo_control.safety.rules import Finding

FloatArray = npt.NDArray[np.float64]


def _names(names: tuple[str, ...], mask: npt.NDArray[np.bool_]) -> list[str]:
    return [names[i] for i in np.flatnonzero(mask)]


class TendonMonitor:
    """Slack, runaway and tracking checks of all tendons (muscles-file order)."""

    def __init__(self, names: tuple[str, ...], l_min_m: FloatArray, l_max_m: FloatArray,
                 config: TendonMonitorConfig) -> None:
        self.names = tuple(names)
        self.m = len(self.names)
        self.config = config
        self._lo = np.asarray(l_min_m, dtype=float) - config.length_margin_m
        self._commands = CommandWindow(self.m)
        # the band: least (row 0) and most (row 1) a healthy load cell may read now [N]; and
        # its least and most since the last sample on which every tendon tracked
        self._band = np.zeros((2, self.m))
        self._low, self._high = self._band
        self._since = np.zeros((2, self.m))
        self._since_low, self._since_high = self._since
        self._window = np.zeros((2, self.m))  # the band's targets: the window's bounds [N]
        self._steps = np.zeros((2, self.m))  # the band's steps [N]
        self._tolerances = np.array([config.tracking_tolerance_n,
                                     config.tracking_excess_tolerance_n])  # below, above [N]
        self._hi = np.asarray(l_max_m, dtype=float) + config.length_margin_m
        self.reset(0.0, np.zeros(self.m))

    def reset(self, stamp_s: float, tension_n: npt.ArrayLike) -> None:
        """Actuators delivering and commanded ``tension_n`` [N] at ``stamp_s`` [s]."""
        f = np.broadcast_to(np.asarray(tension_n, dtype=float), (self.m,)).copy()
        self._band[:] = f
        self._t = float(stamp_s)
        # commands sent, oldest first: (stamp [s], least [N], most [N]), least and most equal
        # but for a gap of unknown outputs; the first is the one in effect at the latest
        # possible delivery of the window
        self._commands.reset(-math.inf, f)
        self._last_length: FloatArray | None = None  # previous sample's lengths [m]
        self._last_error = np.zeros(self.m)  # previous distance from the band [N]
        self._last_stamp = -math.inf
        self._off_count = np.zeros(self.m, dtype=np.int64)  # consecutive tracking misses
        self._last_sent_s = -math.inf  # stamp of the newest driver output seen [s]
        self._resync = False  # restart the expectation from the next sample's load cells
        self._slack_count = np.zeros(self.m, dtype=np.int64)  # consecutive slack samples
        self._slack_zero = True  # every slack count is 0 (the common case: skip the counting)
        self._off_zero = True  # every tracking-miss count is 0
        self._alpha_dt = math.nan  # the sample interval the lag's factor was computed for [s]
        self._alpha = 0.0
        self._tracked_s = float(stamp_s)  # the last sample on which every tendon tracked [s]
        # the least and most of the band since then: where each module's tension was [N]
        self._since[:] = f
        self._tracked_f = f.copy()  # the load cells then [N]
        self._first_miss_s = -math.inf  # an actuator_lagging miss not yet confirmed [s]
        self._clean_from_s = float(stamp_s)  # every tendon tracking since [s] (inf: not now)
        self._proven = False  # ... for tracking_clean_s since the first miss
        self._last_f = f.copy()  # the previous sample's tensions [N]
        # a watchdog episode stands (actuator_watchdog found, and no tracking since that tells
        # a working link from the modules' hold)
        self._silent = False
        self._heard_from_s = math.inf  # tracking, and telling it, since (episode standing)

    @property
    def expected_tension_n(self) -> tuple[FloatArray, FloatArray]:
        """The band a healthy load cell reads in now: (least, most) [N]."""
        return self._low.copy(), self._high.copy()

    def _advance(self, t: float) -> None:
        """The band at ``t`` [s]: over (previous time, t], the lag of the smallest and of the
        largest command that may be in effect at some instant of it (a sound band, at most
        one sample interval wider than the instant-by-instant one)."""
        dt = t - self._t
        if not (dt > 0.0 and math.isfinite(dt)):
            return
        cfg = self.config
        earliest = cfg.command_delay_s
        latest = earliest + cfg.command_jitter_s
        commands = self._commands
        # the command in effect at (previous time - latest) stays first; older ones are gone
        commands.drop_before(self._t - latest)
        # ... up to the last one that may have arrived by t: elementwise min and max
        target = commands.bounds_upto(t - earliest, self._window)
        if dt != self._alpha_dt:  # samples come at a steady rate: the lag's factor once
            self._alpha_dt = dt
            self._alpha = 1.0 - math.exp(-dt / cfg.actuator_time_constant_s)
        steps = self._steps
        np.subtract(target, self._band, out=steps)
        steps *= self._alpha
        if cfg.rise_rate_n_s is not None:
            # an elastic wire rises no faster than its stiffness times the winch's speed
            np.minimum(steps[0], cfg.rise_rate_n_s * dt, out=steps[0])
        self._band += steps
        self._t = t

    def sent(self, stamp_s: float, tension_n: FloatArray) -> None:
        """The driver sent ``tension_n`` [N] at ``stamp_s`` [s] (always finite, in range)."""
        stamp = float(stamp_s)
        if not stamp > self._last_sent_s:
            return  # not after the newest seen: nothing new
        tension = np.asarray(tension_n, dtype=float)
        # a gap in the outputs seen (a lost or late message on a loaded machine): what the
        # actuators received in it is unknown (the driver may have sent minimum tension)
        if stamp - self._last_sent_s > self.config.tracking_resync_gap_s \
                and math.isfinite(self._last_sent_s):
            self._resync = True
            before = self._commands.newest_most()
            self._commands.append(math.nextafter(self._last_sent_s, math.inf),
                                  np.zeros(self.m), np.maximum(before, tension))
        self._commands.append(stamp, tension, tension)
        self._last_sent_s = stamp

    def check(self, state: TendonState, track: bool = True) -> tuple[Finding, ...]:
        """Check one tendon sample; returns the findings (empty when every tendon is fine).
        ``track`` false: what the driver sent up to this sample is not known (its outputs
        stopped reaching the monitor): slack and runaway only, and the band restarts from the
        load cells when tracking resumes.

        Runs at the sensor rate on ``m`` values, so it is written in as few numpy calls as the
        rules allow (on short arrays each call costs more than its arithmetic); each rule is a
        method of its own: :meth:`_slack`, :meth:`_runaway`, and the tracking rules of
        :meth:`_tracking`."""
        t = state.stamp_s
        # a sample older than the expectation's time (an output after it was handled first)
        # is checked for slack and runaway but not for tracking, and resyncs nothing
        behind = t < self._t
        dt = t - self._last_stamp  # since the previous sample [s] (inf: none yet)
        if not track or (dt > self.config.tracking_resync_gap_s
                         and math.isfinite(self._last_stamp)):
            # outputs unknown, or samples lost: the expectation restarts from the load cells,
            # and a miss before the gap confirms nothing after it
            self._resync = True
            self._forget_misses()
        self._advance(t)
        f, length, rate = state.tension_n, state.length_m, state.velocity_m_s
        # valid: every tendon (None), or the mask of those with finite readings
        valid = None if all_finite(f, length, rate) else (
            np.isfinite(f) & np.isfinite(length) & np.isfinite(rate))
        abs_rate = np.abs(rate)
        slow = self._slow(t, dt, length, abs_rate, valid)
        findings: list[Finding] = []
        slack = self._slack(f, slow, valid)
        if slack is not None:
            findings.append(slack)
        runaway = self._runaway(length, rate, abs_rate, valid)
        if runaway is not None:
            findings.append(runaway)
        if track and not behind:
            tracking = self._tracking(t, dt, f, slow, valid)
            if tracking is not None:
                findings.append(tracking)
        return tuple(findings)

    def _slow(self, t: float, dt: float, length: FloatArray, abs_rate: FloatArray,
              valid: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.bool_]:
        """The tendons (with finite readings) whose winch runs slower than
        ``tracking_max_rate_m_s``: those the slack and tracking rules judge. A winch at its
        speed limit cannot keep its tendon taut (the motor envelope); a snapped tendon's free
        winch runs there too, and the consistency check sees it.

        A winch's speed is the larger of ``abs_rate``, the filtered rate, which lags
        ~1 / (2 pi f_c), and the difference of the last two samples' lengths over ``dt`` [s],
        which does not (the envelope bites within milliseconds). Keeps this sample's lengths
        and stamp ``t`` [s] for the next (when it is newer)."""
        speed = abs_rate
        if self._last_length is not None and dt > 0.0:
            jump = length - self._last_length
            np.abs(jump, out=jump)
            jump /= dt
            speed = np.maximum(abs_rate, jump)
        if dt > 0.0:
            if self._last_length is None:
                self._last_length = np.array(length, dtype=float)
            else:
                np.copyto(self._last_length, length)
            self._last_stamp = t
        slow = speed < self.config.tracking_max_rate_m_s
        if valid is not None:
            slow &= valid
        return slow

    def _slack(self, f: FloatArray, slow: npt.NDArray[np.bool_],
               valid: npt.NDArray[np.bool_] | None) -> Finding | None:
        """Rule ``tendon_slack``: tension ``f`` [N] below ``slack_tension_n`` for
        ``slack_samples`` consecutive samples on a ``slow`` tendon, although the driver never
        sends less than its minimum (see the module docstring)."""
        cfg = self.config
        if valid is None and smallest(f) >= cfg.slack_tension_n:
            # no tendon slack (most samples): every count back to 0, no finding
            if not self._slack_zero:
                self._slack_count.fill(0)
                self._slack_zero = True
            return None
        low = slow & (f < cfg.slack_tension_n)
        # consecutive counts: +1 where the condition holds, back to 0 where it does not
        self._slack_count += 1
        self._slack_count *= low
        self._slack_zero = not any_true(low)
        slack = self._slack_count >= cfg.slack_samples
        if not any_true(slack):
            return None
        return Finding("tendon_slack", f"tendon slack or snapped: {_names(self.names, slack)} "
                       f"read {np.round(f[slack], 2).tolist()} N (< {cfg.slack_tension_n} N)")

    def _runaway(self, length: FloatArray, rate: FloatArray, abs_rate: FloatArray,
                 valid: npt.NDArray[np.bool_] | None) -> Finding | None:
        """Rule ``tendon_runaway``: a length rate ``rate`` [m/s] beyond
        ``max_length_rate_m_s``, or a ``length`` [m] outside [l_min, l_max] +-
        ``length_margin_m`` (see the module docstring)."""
        cfg = self.config
        if valid is None and not largest(abs_rate) > cfg.max_length_rate_m_s \
                and not any_true(length < self._lo) and not any_true(length > self._hi):
            return None  # plausible speeds inside the ranges (most samples)
        racing = abs_rate > cfg.max_length_rate_m_s
        outside = length < self._lo
        outside |= length > self._hi
        if valid is not None:
            racing &= valid
            outside &= valid
        any_racing, any_outside = any_true(racing), any_true(outside)
        if not (any_racing or any_outside):
            return None
        parts = []
        if any_racing:
            parts.append(f"{_names(self.names, racing)} length rate "
                         f"{np.round(rate[racing], 3).tolist()} m/s (limit "
                         f"{cfg.max_length_rate_m_s} m/s)")
        if any_outside:
            parts.append(f"{_names(self.names, outside)} length "
                         f"{np.round(length[outside], 4).tolist()} m outside the range "
                         f"+- {cfg.length_margin_m} m")
        return Finding("tendon_runaway", "tendon running away: " + "; ".join(parts))

    def _tracking(self, t: float, dt: float, f: FloatArray, slow: npt.NDArray[np.bool_],
                  valid: npt.NDArray[np.bool_] | None) -> Finding | None:
        """The tracking rules on a sample at ``t`` [s], ``dt`` [s] after the previous one,
        reading ``f`` [N]: the band restarts where it cannot be trusted
        (:meth:`_restart_band`), the misses are counted (:meth:`_misses`,
        :meth:`_count_misses`) and the clocks of the episodes kept
        (:meth:`_note_tracking`); a confirmed miss is ``actuator_watchdog``
        (:meth:`_watchdog_finding`), ``actuator_lagging`` or ``actuator_tracking``
        (:meth:`_lagging_or_tracking`)."""
        restarted = self._restart_band(t, f, slow, valid)
        off, excess, falling = self._misses(dt, f, slow, valid)
        missed = any_true(off)
        bad = self._count_misses(off, missed)
        self._note_tracking(t, f, missed, restarted)
        if bad is None:
            return None
        held = None if any_true(bad & excess) else self._watchdog(t, f, slow, bad, falling)
        if held is not None:
            return self._watchdog_finding(held, f, bad)
        return self._lagging_or_tracking(t, f, bad)

    def _restart_band(self, t: float, f: FloatArray, slow: npt.NDArray[np.bool_],
                      valid: npt.NDArray[np.bool_] | None) -> bool:
        """Restart the band from the load cells ``f`` [N] where it cannot be trusted: on
        every tendon after a gap in the driver outputs or the samples (then also the record
        of the last sample that tracked, now ``t`` [s]; returns True), and on a fast tendon,
        where the motor envelope may bind."""
        if valid is None:
            fast = None if np.count_nonzero(slow) == self.m else ~slow
        else:
            fast = ~slow
            fast &= valid
        if fast is not None and any_true(fast):
            # where the envelope may bind, the lag model restarts from what the load cell reads
            np.copyto(self._band, f, where=fast)
        if not self._resync:
            return False
        # after a gap in the driver outputs or the samples the band restarts from the load
        # cells
        finite_f = np.isfinite(f)
        np.copyto(self._band, f, where=finite_f)
        self._off_count[:] = 0
        self._resync = False
        self._tracked_s = t
        np.copyto(self._tracked_f, f)
        np.copyto(self._since, self._band)
        return True

    def _misses(self, dt: float, f: FloatArray, slow: npt.NDArray[np.bool_],
                valid: npt.NDArray[np.bool_] | None) -> tuple[npt.NDArray[np.bool_],
                                                              npt.NDArray[np.bool_],
                                                              npt.NDArray[np.bool_]]:
        """The tendons off their band at this sample, ``dt`` [s] after the previous one,
        reading ``f`` [N]: (off, excess, falling). ``off``: short of the band by more than
        ``tracking_tolerance_n`` or above it by more than ``tracking_excess_tolerance_n``
        (``excess``: above it), on a ``slow`` tendon, and the gap not shrinking at half the
        lag's pace. ``falling``: below the previous sample's reading."""
        cfg = self.config
        falling = f < self._last_f
        np.copyto(self._last_f, f)
        below = self._low - f  # > 0: short of the least a healthy actuator delivers [N]
        error = f - self._high  # > 0: beyond the most [N]
        # a reading above the band gets its own, wider tolerance: a load pulling the tendon
        # out back-drives the winch (measured: 51 N above on a recovering arm)
        excess = error > below
        np.maximum(error, below, out=error)
        np.maximum(error, 0.0, out=error)
        # a healthy actuator closes any gap at its lag's rate (both follow the same command
        # through the same lag), so a gap left by a jolt shrinks by exp(-dt / tau) a sample;
        # one that stops shrinking (at half that pace) is an actuator that cannot deliver
        shrink = 1.0 - 0.5 * (1.0 - math.exp(-max(dt, 0.0) / cfg.actuator_time_constant_s)) \
            if math.isfinite(dt) else 1.0
        recovering = error < shrink * self._last_error
        self._last_error = error if valid is None else np.where(valid, error, 0.0)
        tolerance = self._tolerances.take(excess.view(np.uint8))  # excess: the wider one
        off = error > tolerance
        off &= slow
        np.greater(off, recovering, out=off)  # off & ~recovering (booleans: True > False)
        return off, excess, falling

    def _count_misses(self, off: npt.NDArray[np.bool_],
                      missed: bool) -> npt.NDArray[np.bool_] | None:
        """Count each tendon's consecutive misses (``off``; ``missed``: any of them); the
        tendons missing for ``tracking_samples`` samples, or None when none is."""
        if not missed:  # every count back to 0 (most samples)
            if not self._off_zero:
                self._off_count.fill(0)
                self._off_zero = True
            return None
        self._off_count += 1
        self._off_count *= off
        self._off_zero = False
        bad = self._off_count >= self.config.tracking_samples
        return bad if any_true(bad) else None

    def _note_tracking(self, t: float, f: FloatArray, missed: bool, restarted: bool) -> None:
        """Keep the clocks of a sample at ``t`` [s] reading ``f`` [N] (``missed``: some tendon
        off its band; ``restarted``: the band restarted from the load cells at it): since when
        every tendon tracks (``tracking_clean_s`` of it proves a first miss over), whether a
        standing watchdog episode ends, and the band's least and most since the last sample on
        which every tendon tracked (with the load cells then)."""
        cfg = self.config
        if missed:
            self._clean_from_s = math.inf
        elif self._clean_from_s == math.inf:
            self._clean_from_s = t
        elif t - self._clean_from_s >= cfg.tracking_clean_s:
            self._proven = True
        # a standing watchdog episode ends after tracking_clean_s of samples that track and tell
        # a working link from the modules' hold: not the one right after the band restarts
        # from the readings (it tracks them trivially), nor one with every band within the
        # tolerance of the watchdog's tension (minimum tension, where a silent module reads
        # the same)
        if self._silent:
            if missed or restarted or not self._informative():
                self._heard_from_s = math.inf
            elif self._heard_from_s == math.inf:
                self._heard_from_s = t
            elif t - self._heard_from_s >= cfg.tracking_clean_s:
                self._silent = False
        if not missed:
            self._tracked_s = t
            np.copyto(self._tracked_f, f)
            np.copyto(self._since, self._band)
        else:
            np.minimum(self._since_low, self._low, out=self._since_low)
            np.maximum(self._since_high, self._high, out=self._since_high)

    def _watchdog_finding(self, held: str, f: FloatArray,
                          bad: npt.NDArray[np.bool_]) -> Finding:
        """Rule ``actuator_watchdog``: the tendons ``bad`` read ``f`` [N] as the modules'
        watchdog makes them (``held`` says how, :meth:`_watchdog`). Not latched: the band
        restarts from the load cells at the next sample, and an episode stands (see the
        module docstring)."""
        finding = Finding("actuator_watchdog", f"{held} (the actuator modules' watchdog): the "
                          f"driver's commands are not reaching them; "
                          f"{_names(self.names, bad)} measure {np.round(f[bad], 1).tolist()} N, "
                          f"expected {np.round(self._low[bad], 1).tolist()} to "
                          f"{np.round(self._high[bad], 1).tolist()} N")
        self._resync = True  # from the load cells again at the next sample
        self._forget_misses()  # the modules' hold explains the misses so far
        self._silent = True
        self._heard_from_s = math.inf
        self._off_count[:] = 0
        self._off_zero = True
        return finding

    def _forget_misses(self) -> None:
        """No miss so far counts towards ``actuator_tracking``: the next one is a first miss
        (``actuator_lagging``) again. After a gap in the samples or the driver's outputs, or a
        watchdog episode, the misses before say nothing of the actuators since: a whole
        computer that stalled looks like a module that stopped delivering."""
        self._first_miss_s = -math.inf
        self._proven = False

    def _lagging_or_tracking(self, t: float, f: FloatArray,
                             bad: npt.NDArray[np.bool_]) -> Finding:
        """Rules ``actuator_lagging`` and ``actuator_tracking``: the tendons ``bad`` read
        ``f`` [N] off their band for ``tracking_samples`` samples at ``t`` [s]. The first such
        miss is ``actuator_lagging`` (commands that reached the modules late look the same:
        the band restarts); a second within ``tracking_confirm_window_s``, after every tendon
        tracked for ``tracking_clean_s``, is ``actuator_tracking``."""
        cfg = self.config
        what = (f"{_names(self.names, bad)} measure {np.round(f[bad], 1).tolist()} N, "
                f"expected {np.round(self._low[bad], 1).tolist()} to "
                f"{np.round(self._high[bad], 1).tolist()} N (tolerance "
                f"{cfg.tracking_tolerance_n} N below, {cfg.tracking_excess_tolerance_n} N "
                f"above)")
        again = t - self._first_miss_s <= cfg.tracking_confirm_window_s
        if again and self._proven:
            return Finding("actuator_tracking", f"actuator not delivering its command, again "
                           f"after it tracked: {what}")
        # once: commands that reached the modules late look the same; restart
        self._first_miss_s = t
        self._proven = False
        self._resync = True
        self._off_count[:] = 0
        return Finding("actuator_lagging", f"actuator off its command: {what}; a second time "
                       f"within {cfg.tracking_confirm_window_s:g} s after it tracked again is "
                       f"actuator_tracking")

    def _informative(self) -> bool:
        """Some tendon's band is far enough above the watchdog's tension that a module held
        there would miss it."""
        w = self.config.watchdog_tension_n
        return w is None or largest(self._low) - w > self.config.tracking_tolerance_n

    def _watchdog(self, stamp_s: float, f: FloatArray, slow: npt.NDArray[np.bool_],
                  short: npt.NDArray[np.bool_], falling: npt.NDArray[np.bool_]) -> str | None:
        """How the tendons ``short`` of their band (each below it and ``falling`` since the
        previous sample), and every other loaded tendon, read as the modules' watchdog makes
        them, or ``None`` if they do not: ``f - w = e (x - w)`` for one factor ``e``, with
        ``x`` where the band was since the last sample on which every tendon tracked, within
        ``watchdog_tolerance_n``, and ``e`` at least
        the lag's decay since that sample; or, while an episode stands, every tendon at ``w``
        (see the module docstring). A tension that rises, only more slowly than its band, is
        not the watchdog's; nor are tensions held at one cap (the tendons under it do not
        fall)."""
        cfg = self.config
        w = cfg.watchdog_tension_n
        if w is None:
            return None
        tol = cfg.watchdog_tolerance_n
        loaded = slow & (self._low - w > cfg.tracking_tolerance_n) & np.isfinite(f)
        held = falling | (f - w < tol)  # falling, or already where the watchdog holds it
        if not (np.all(loaded[short]) and np.all(held[short])):
            return None
        if self._silent and self.m >= 2 and all_finite(f) and float(np.abs(f - w).max()) <= tol:
            # an episode stands and every module reads the watchdog's tension: still its hold,
            # whatever the bands (on the controller's ramp back up from minimum tension one
            # tendon may be loaded alone, and one factor has nothing to compare; outside an
            # episode that reading is one dead module's too, and is judged as a miss)
            return f"every tendon at {w:g} N while the modules' hold stands"
        if int(loaded.sum()) < 2:
            return None
        above = f[loaded] - w
        # where each module's tension was when its watchdog fired: on its load cell at the last
        # sample on which every tendon tracked, or in its band since (the modules hold their
        # last command while the link is silent, and the band is where that command leads)
        then = self._tracked_f[loaded]
        most = np.maximum(then, self._since_high[loaded]) - w
        was = np.minimum(then, self._since_low[loaded]) - w
        lowest = (above - tol) / most  # the least e each tendon allows
        highest = np.divide(above + tol, was, out=np.full(was.shape, np.inf),
                            where=was > tol)  # the most (none where it was at w already)
        # (one sample interval earlier: the watchdog may have fired just before that sample)
        step = self._alpha_dt if math.isfinite(self._alpha_dt) else 0.0
        since = max(stamp_s - self._tracked_s + step, 0.0)
        least = math.exp(-since / cfg.actuator_time_constant_s)
        # and the fall must show: the most loaded tendon down by more than twice the tolerance
        # (a module that merely holds its command while the band moves away has not fallen)
        fallen = 1.0 - 2.0 * tol / float(most.max())
        if max(float(lowest.max()), least) <= min(float(highest.min()), fallen):
            return f"every loaded tendon falling towards {w:g} N together"
        return None
