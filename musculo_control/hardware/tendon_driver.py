"""The tendon driver: the last line of defence between the controller and the actuators.

Commands (tension [N] per tendon, in muscles-file order) go through :meth:`TendonDriver.command`;
the tensions actually sent come from :meth:`TendonDriver.output` at each driver tick:

- any bad command (wrong length, non-numeric, NaN or inf, bad stamp) calls the stop of
  ``command_invalid`` (a cut: every tendon at the minimum tension at once), with the reason,
  until a good command arrives;
- commands late (older than safety.yaml ``inputs.muscle_commands.late_s``: the controller is
  late): the last command is held and the output says so (:attr:`DriverOutput.late`); none for
  longer than ``inputs.muscle_commands.hold_s`` (the watchdog): the stop of
  ``command_watchdog`` (a hold, then a descend to the minimum tension;
  :mod:`musculo_control.stopping`), on the driver's own clock;
- the same for the measured tendon states (``inputs.tendon_state``: the actuators' bus or the
  arm is gone);
- a tick that comes ``inputs.own_pause_s`` or more after the previous one is the driver's own
  pause (its process was not scheduled): the inputs aged with it, so their ages count from that
  tick until fresh ones arrive (:class:`~musculo_control.streams.OwnPause`);
- otherwise each tension is clamped to [min_tension_n, max_tension_n] and its change rate
  limited to ``rate_limit_n_s`` (both ways);
- after a stop a good command ramps up again from the tensions the stop left.

Without :meth:`TendonDriver.use_stops` every stop is a cut.

Whatever goes in, what comes out is finite and inside [min_tension_n, max_tension_n]. The
reverse direction, :meth:`TendonDriver.read`, turns winch encoder and load-cell counts into
muscle length [m], lengthening speed [m/s] and tension [N].

Pure logic with explicit time arguments; nothing here reads a clock, so the ROS-free runner
drives it in simulated time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.arrays import finite
from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError
from musculo_control.hardware.calibration import Calibration
from musculo_control.hardware.filters import FilteredDifferentiator
from musculo_control.stopping import Stop, StopSequence
from musculo_control.streams import LATE, ON_TIME, InputBounds, OwnPause

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, kw_only=True)
class TendonDriverConfig:
    """``hardware.yaml`` key ``driver``: limits of the tendon actuator modules."""

    min_tension_n: float = spec(gt=0.0, doc="minimum tension, also the fault fallback [N]: "
                                            "robot.yaml hill.f_min_n, filled in by load_drivers "
                                            "(hardware.yaml does not set it)")
    max_tension_n: float = spec(gt=0.0, doc="maximum commanded tension [N]")
    rate_limit_n_s: float = spec(gt=0.0, doc="largest change of a commanded tension [N/s]")
    velocity_cutoff_hz: float = spec(20.0, gt=0.0,
                                     doc="low-pass cutoff of the measured muscle velocity [Hz]")

    def check(self, file: str, key: str) -> None:
        if self.max_tension_n <= self.min_tension_n:
            raise ConfigError(file, f"{key}.max_tension_n" if key else "max_tension_n",
                              f"more than the minimum tension {self.min_tension_n} N "
                              f"(robot.yaml hill.f_min_n)",
                              self.max_tension_n)


class DriverOutput(NamedTuple):
    """What the driver sends at one tick."""

    stamp_s: float  # tick time [s]
    tension_n: FloatArray  # (m,) tension sent, inside [min, max] [N]
    units: FloatArray  # (m,) the same in driver command units
    limited: BoolArray  # (m,) True where clamping or the rate limit changed the command
    faults: tuple[str, ...]  # why every tendon is at minimum tension (empty: normal)
    clamped: BoolArray  # (m,) True where the command lay outside [min, max] and was clamped
    late: tuple[str, ...] = ()  # inputs late but within their hold bound (the last command held)

    @property
    def ok(self) -> bool:
        return not self.faults


class TendonState(NamedTuple):
    """Muscle state measured by the actuator modules."""

    stamp_s: float  # [s]
    length_m: FloatArray  # (m,) [m]
    velocity_m_s: FloatArray  # (m,) lengthening speed, filtered [m/s]
    tension_n: FloatArray  # (m,) load-cell tension [N]
    faults: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.faults


class TendonDriver:
    """Safety rules and unit conversions of all tendon actuators (see the module docstring)."""

    def __init__(self, calibration: Calibration, config: TendonDriverConfig,
                 commands: InputBounds, states: InputBounds | None = None) -> None:
        """``commands``: how old the newest command may be (safety.yaml
        ``inputs.muscle_commands``); ``states``: the same for the measured tendon states
        (``inputs.tendon_state``; ``None``: not checked)."""
        self.calibration = calibration
        self.config = config
        self.commands = commands
        self.states = states
        self.names = calibration.muscle_names
        self.m = len(self.names)
        self._f_min = config.min_tension_n
        self._f_max = config.max_tension_n
        self._diff = FilteredDifferentiator(self.m, config.velocity_cutoff_hz)
        self.stopping = StopSequence(self._f_min, 0.0, 0.0)  # every stop a cut until use_stops
        self.silent_stop = self.bad_stop = Stop.CUT
        #: the driver's own pauses (safety.yaml ``inputs.own_pause_s``; default: none seen)
        self.pause = OwnPause()
        self.reset()

    def use_stops(self, stopping: StopSequence, silent: Stop, bad: Stop) -> None:
        """Stop as safety.yaml ``stops`` says: ``stopping`` unfolds the stops; ``silent`` is
        the stop when commands or tendon states stop coming (rule ``command_watchdog``),
        ``bad`` the stop for a bad command (rule ``command_invalid``)."""
        self.stopping = stopping
        self.silent_stop = silent
        self.bad_stop = bad
        self.stopping.clear()

    def reset(self) -> None:
        """Forget commands and state: the next output is minimum tension."""
        self._target = np.full(self.m, self._f_min)  # clamped target [N]
        self._clamped = np.zeros(self.m, dtype=bool)
        self._cmd_stamp: float | None = None
        self._cmd_fault = ""
        self._out = np.full(self.m, self._f_min)  # last output [N]
        self._out_stamp: float | None = None
        self._diff.reset()
        self._length = np.full(self.m, np.nan)
        self._tension = np.full(self.m, np.nan)
        self._read_stamp = -math.inf
        self.stopping.clear()
        self.pause.reset()

    @property
    def min_tension_n(self) -> FloatArray:
        return np.full(self.m, self._f_min)

    # -- commands ---------------------------------------------------------------------------------
    def command(self, tension_n: npt.ArrayLike, stamp_s: float) -> tuple[str, ...]:
        """Latch a tension command [N] (muscles-file order) received at ``stamp_s`` [s].

        Returns the faults found (empty if the command was accepted).
        """
        try:
            stamp = float(stamp_s)
        except (TypeError, ValueError):
            stamp = math.nan
        try:
            f = np.asarray(tension_n, dtype=float).reshape(-1)
        except (TypeError, ValueError) as exc:
            return self._bad(stamp, f"tendon command: not numeric ({exc})")
        if f.shape != (self.m,):
            return self._bad(stamp, f"tendon command: expected {self.m} tensions "
                                    f"{list(self.names)}, received shape {f.shape}")
        if not finite(f):
            bad = ~np.isfinite(f)
            names = [self.names[i] for i in np.flatnonzero(bad)]
            return self._bad(stamp, f"tendon command: non-finite tension for {names}")
        if not math.isfinite(stamp):
            return self._bad(stamp, f"tendon command: stamp {stamp_s!r} is not a finite time")
        np.maximum(np.minimum(f, self._f_max), self._f_min, out=self._target)
        self._clamped = self._target != f
        self._cmd_stamp = stamp
        self._cmd_fault = ""
        return ()

    def prime(self, tension_n: npt.ArrayLike, stamp_s: float) -> tuple[str, ...]:
        """Start as if already sending ``tension_n`` at ``stamp_s`` (an arm that was holding).

        The command goes through the same checks and clamp as :meth:`command`; the output then
        starts at it instead of ramping up from the minimum tension. Returns the faults found.
        """
        faults = self.command(tension_n, stamp_s)
        if not faults:
            self._out = self._target.copy()
            self._out_stamp = float(stamp_s)
        return faults

    def _bad(self, stamp: float, reason: str) -> tuple[str, ...]:
        self._cmd_fault = reason
        self._cmd_stamp = stamp if math.isfinite(stamp) else self._cmd_stamp
        return (reason,)

    def output(self, now_s: float,
               stops: tuple[str | tuple[str, Stop], ...] = ()) -> DriverOutput:
        """The tensions to send at ``now_s`` [s] (see the module docstring for the rules);
        ``stops``: reasons from outside the driver (an operator stop, a foreign commander) to
        stop now, as for a fault of its own: a reason alone is a cut, a pair names its stop.
        Any fault (:meth:`_check_tick`, :meth:`_check_inputs`) engages the severest stop
        called; without one the output steps towards the command (:meth:`_ramp`)."""
        try:
            now = float(now_s)
        except (TypeError, ValueError):
            now = math.nan
        faults: list[str] = []
        called: list[Stop] = []
        self._check_tick(now, now_s, stops, faults, called)
        late: list[str] = []
        self._check_inputs(now, faults, called, late)
        if faults:
            limited = clamped = np.zeros(self.m, dtype=bool)
            if math.isfinite(now):
                self.stopping.engage(now, max(called), self._out)
                self.stopping.tension(now, self._out)
            else:
                self._out = np.full(self.m, self._f_min)
        else:
            clamped = self._clamped
            limited = self._ramp(now, clamped)
        if math.isfinite(now) and (self._out_stamp is None or now >= self._out_stamp):
            self._out_stamp = now
        tension = self._out.copy()
        return DriverOutput(now, tension, self.calibration.n_to_driver(tension), limited,
                            tuple(faults), clamped, tuple(late) if not faults else ())

    def _check_tick(self, now: float, now_s: object, stops: tuple[str | tuple[str, Stop], ...],
                    faults: list[str], called: list[Stop]) -> None:
        """Append to ``faults`` and ``called`` the outside ``stops`` (a reason alone: a cut)
        and a tick time ``now`` [s] (as given: ``now_s``) that is not finite or runs backwards
        (a cut); a good tick ticks the driver's own pause."""
        for item in stops:
            reason, stop = (item, Stop.CUT) if isinstance(item, str) else item
            faults.append(reason)
            called.append(stop)
        if not math.isfinite(now):
            faults.append(f"tendon driver: tick time {now_s!r} is not finite")
            called.append(Stop.CUT)
        elif self._out_stamp is not None and now < self._out_stamp:
            faults.append(f"tendon driver: tick time {now} before the previous {self._out_stamp}")
            called.append(Stop.CUT)
        else:
            self.pause.tick(now)  # its own pause: what aged with it is not late

    def _check_inputs(self, now: float, faults: list[str], called: list[Stop],
                      late: list[str]) -> None:
        """The inputs at ``now`` [s]: a refused command (its ``bad_stop``), a command and
        tendon state that are late (to ``late``: the last command is held) or stale or missing
        (to ``faults``, calling ``silent_stop``)."""
        silent: list[str] = []
        if self._cmd_fault:
            faults.append(self._cmd_fault)
            called.append(self.bad_stop)
        elif self._cmd_stamp is None:
            silent.append("tendon driver: no command yet")
        else:
            self._grade(self.pause.age_s(now, self._cmd_stamp, self.commands), self.commands,
                        "last command", silent, late)
        if self.states is not None:
            if self._read_stamp == -math.inf:
                silent.append("tendon driver: no tendon state received yet")
            else:
                self._grade(self.pause.age_s(now, self._read_stamp, self.states), self.states,
                            "newest tendon state", silent, late)
        if silent:
            faults += silent
            called.append(self.silent_stop)

    def _ramp(self, now: float, clamped: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """Step the output towards the command at ``now`` [s] by at most ``rate_limit_n_s``
        times the time since the last output, inside [min, max] tension; returns the tendons
        held back (by the rate limit, or the command's clamp ``clamped``)."""
        self.stopping.clear()
        dt = 0.0 if self._out_stamp is None else now - self._out_stamp
        step = self.config.rate_limit_n_s * dt  # largest change this tick [N]
        delta = self._target - self._out
        limited = clamped | (np.abs(delta) > step)
        np.minimum(delta, step, out=delta)
        np.maximum(delta, -step, out=delta)
        out = self._out + delta
        # the previous output and the target are inside the limits, so this only guards
        # rounding (np.minimum/np.maximum: np.clip costs twice as much on short arrays)
        np.minimum(out, self._f_max, out=out)
        self._out = np.maximum(out, self._f_min, out=out)
        return limited

    @staticmethod
    def _grade(age_s: float, bounds: InputBounds, what: str, faults: list[str],
               late: list[str]) -> None:
        """A late input goes to ``late`` (the last command is held), a stale one to
        ``faults`` (minimum tension); NaN ages are stale."""
        grade = bounds.grade(age_s)
        if grade == ON_TIME:
            return
        text = (f"tendon driver: {what} {age_s * 1e3:.1f} ms old (late beyond "
                f"{bounds.late_s * 1e3:.0f} ms, stopping at {bounds.hold_s * 1e3:.0f} ms)")
        (late if grade == LATE else faults).append(text)

    # -- measurements -----------------------------------------------------------------------------
    def read(self, encoder_counts: npt.ArrayLike, loadcell_counts: npt.ArrayLike,
             stamp_s: float) -> TendonState:
        """Encoder and load-cell counts sampled at ``stamp_s`` [s] -> muscle state.

        A tendon with a non-finite count keeps its last good value (NaN until it has one).
        """
        faults: list[str] = []
        try:
            enc = np.asarray(encoder_counts, dtype=float).reshape(-1)
            cell = np.asarray(loadcell_counts, dtype=float).reshape(-1)
        except (TypeError, ValueError) as exc:
            return self._stale_state(stamp_s, f"tendon state: not numeric ({exc})")
        if enc.shape != (self.m,) or cell.shape != (self.m,):
            return self._stale_state(stamp_s, f"tendon state: expected {self.m} encoder and "
                                              f"load-cell counts, received {enc.shape} and "
                                              f"{cell.shape}")
        if not (math.isfinite(stamp_s) and stamp_s > self._read_stamp):
            return self._stale_state(stamp_s, f"tendon state: stamp {stamp_s} not after the "
                                              f"previous {self._read_stamp}")
        self._read_stamp = stamp_s
        length = self.calibration.encoder_to_length(enc)
        tension = self.calibration.loadcell_to_n(cell)
        if finite(length, tension):
            # fast path: every tendon read
            self._length[:] = length
            self._tension[:] = tension
            return TendonState(stamp_s, length, self._diff.update(length, stamp_s),
                               tension.copy(), ())
        good_enc, good_cell = np.isfinite(enc), np.isfinite(cell)
        for i in np.flatnonzero(~good_enc):
            faults.append(f"{self.names[i]}: encoder count is not finite ({enc[i]})")
        for i in np.flatnonzero(~good_cell):
            faults.append(f"{self.names[i]}: load-cell count is not finite ({cell[i]})")
        length = self.calibration.encoder_to_length(np.where(good_enc, enc, 0.0))
        self._length[good_enc] = length[good_enc]
        tension = self.calibration.loadcell_to_n(np.where(good_cell, cell, 0.0))
        self._tension[good_cell] = tension[good_cell]
        velocity = self._diff.update(self._length, stamp_s, good_enc)
        return TendonState(stamp_s, self._length.copy(), velocity, self._tension.copy(),
                           tuple(faults))

    def _stale_state(self, stamp_s: float, reason: str) -> TendonState:
        return TendonState(self._read_stamp, self._length.copy(), self._diff.velocity.copy(),
                           self._tension.copy(), (reason,))
