"""Calibrating a physical arm from its raw sensors (``musculo calibrate``; doc/calibration.md).

A ROS-free state machine fed raw samples (potentiometer, winch-encoder and load-cell counts,
numpy arrays) and asked, at each sample, for the tensions to command [N]. The ``--sim`` path
(:mod:`musculo_control.sim.calibration_run`) drives it from the mock arm directly, the graph
path from the raw topics; the same object decides what to record, the statistics, the checks
and the fit.

Phases, in order (``hardware.yaml`` ``calibration_procedure`` gives every duration and tension):

1. **slack** -- the arm held at ``calibration.calibration_pose_rad`` (a jig or an operator),
   every tendon commanded 0 N: the load cells' zeros ``loadcell_offset_counts``, every
   channel's noise, and the potentiometers' readings at the known pose:
   ``offset_counts = counts - sign counts_per_rad q_cal`` (calibration.py's model inverted).
2. **taut** -- still held, every tendon at ``taut_tension_n``: the winch encoders' readings at
   the calibration pose ``encoder_offset_counts`` (a slack wire's winch says nothing about its
   path), and the load cells' counts per commanded newton, checked against the configured gain.
3. **release** -- the arm let go (the jig removed), tendons taut, waiting for it to settle.
4. **pulls** -- one tendon at a time pulled by ``pull_tension_n`` more, until it has moved
   ``stop_shortening_m`` or a joint ``stop_motion_rad`` (at most ``pull_s``): the
   pulled muscle must shorten (a stable equilibrium moves so that ``l_i`` falls when ``f_i``
   grows), which checks the encoder's sign; the joint motions the potentiometers see, through
   the model's muscle Jacobian ``dl = Jm dq``, must explain the length changes the encoders
   see, which checks each potentiometer's sign (least squares over every pull). Each change
   is taken less the drift its rest showed (the arm is free and its taut tendons need not
   balance). A pull that
   moves a joint further than ``max_motion_rad`` stops the procedure.

No command ever exceeds ``max_tension_n``. Load-cell gains are not identified: that needs a
known load (doc/calibration.md says why the arm's own weight is not one).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError, InputError, MusculoError
from musculo_control.hardware.calibration import Calibration

if TYPE_CHECKING:  # only a type here: the driver nodes load no rigid-body model
    from musculo_control.model.robot import Robot

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class CalibrationProcedureConfig:
    """``hardware.yaml`` key ``calibration_procedure``: how ``musculo calibrate`` measures."""

    settle_s: float = spec(0.5, gt=0.0, doc="wait after the commands change, before recording "
                                            "[s]")
    record_s: float = spec(1.0, gt=0.0, doc="length of the slack and taut recordings [s]")
    release_s: float = spec(1.0, gt=0.0, doc="wait after the arm is let go, tendons taut [s]")
    taut_tension_n: float = spec(5.0, gt=0.0, doc="tension that keeps every wire taut for the "
                                                  "encoder readings [N]")
    pull_tension_n: float = spec(20.0, gt=0.0, doc="extra tension of a sign-check pull [N]")
    pull_s: float = spec(0.2, gt=0.0, doc="duration of each pull [s]")
    rest_s: float = spec(0.4, gt=0.0, doc="taut rest before each pull [s]")
    average_s: float = spec(0.02, gt=0.0, doc="readings in the middle and at the end of a "
                                              "rest are averaged over this long [s]")
    max_tension_n: float = spec(30.0, gt=0.0, doc="no calibration command ever exceeds this "
                                                  "[N]")
    stop_shortening_m: float = spec(0.002, gt=0.0, doc="a pull ends once its tendon has "
                                                       "moved this far [m]")
    stop_motion_rad: float = spec(0.05, gt=0.0, doc="... or once a joint has moved this far "
                                                    "[rad]")
    max_motion_rad: float = spec(0.2, gt=0.0, doc="a pull that moves a joint further stops "
                                                   "the procedure [rad]")
    pose_tolerance_rad: float = spec(0.15, gt=0.0, doc="at the calibration pose every joint "
                                                       "must read within this of it under the "
                                                       "present calibration [rad]")
    max_potentiometer_noise_counts: float = spec(3.0, gt=0.0, doc="standard deviation above "
                                                                  "which a pot is refused "
                                                                  "[counts]")
    max_encoder_noise_counts: float = spec(3.0, gt=0.0, doc="the same for an encoder, arm "
                                                            "held [counts]")
    max_loadcell_noise_counts: float = spec(10.0, gt=0.0, doc="the same for a load cell "
                                                              "[counts]")
    rail_margin_counts: float = spec(2.0, ge=0.0, doc="a pot this close to 0 or full scale "
                                                      "is refused [counts]")
    loadcell_zero_tolerance_counts: float = spec(200.0, gt=0.0, doc="a slack load cell further "
                                                                    "than this from its "
                                                                    "configured zero is "
                                                                    "refused [counts]")
    loadcell_gain_tolerance: float = spec(0.3, gt=0.0, lt=1.0, doc="relative: measured counts "
                                                                   "per commanded newton this "
                                                                   "far from the configured "
                                                                   "gain are refused [-]")
    min_shortening_m: float = spec(2e-5, gt=0.0, doc="a pulled tendon that moves less is not "
                                                     "sign-checked [m]")
    min_joint_motion_rad: float = spec(0.01, gt=0.0, doc="a joint whose pulls move it less in "
                                                         "total is not sign-checked [rad]")


class Phase(enum.Enum):
    SLACK_SETTLE = "slack (settling)"
    SLACK = "slack"
    TAUT_SETTLE = "taut (settling)"
    TAUT = "taut"
    RELEASE = "release"
    PULLS = "pulls"
    DONE = "done"
    STOPPED = "stopped"


class CalibrationRefused(MusculoError):
    """The arm is not where it should be or a sensor misbehaves: ``problems`` holds one line
    per joint or tendon, each naming it, what was expected and what was measured."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        lines = "\n  ".join(problems)
        super().__init__(f"calibration refused ({len(problems)} problems):\n  {lines}")


@dataclass(frozen=True)
class ChannelStats:
    """Mean and standard deviation of each channel over a recording [counts]."""

    mean: FloatArray
    std: FloatArray


@dataclass(frozen=True)
class CalibrationResult:
    """What was measured, in robot order (joints (n,), tendons (m,)); counts unless said."""

    pot_offset_counts: FloatArray
    pot_sign: FloatArray
    pot_sign_checked: npt.NDArray[np.bool_]
    pot_sign_fit: FloatArray  # fitted factor on each pot's configured sign [-]; NaN: not fitted
    pot_noise_counts: FloatArray
    encoder_offset_counts: FloatArray
    encoder_sign: FloatArray
    encoder_sign_checked: npt.NDArray[np.bool_]
    shortening_m: FloatArray  # each pulled tendon's length change (negative: shortened) [m]
    encoder_noise_counts: FloatArray
    loadcell_offset_counts: FloatArray
    loadcell_counts_per_n: FloatArray  # measured, for the check only (not written)
    loadcell_noise_counts: FloatArray
    warnings: tuple[str, ...] = field(default=())


@dataclass
class _Pull:
    """Readings (time [s], pot counts, encoder counts) around one pull: in the middle and at
    the end of its rest (the drift), and where it ended."""

    mid: list[tuple[float, FloatArray, FloatArray]] = field(default_factory=list)
    before: list[tuple[float, FloatArray, FloatArray]] = field(default_factory=list)
    after: list[tuple[float, FloatArray, FloatArray]] = field(default_factory=list)

    def change(self, k: int) -> FloatArray:
        """Change of readings ``k`` (1: pots, 2: encoders) over the pull, less the drift the
        rest showed (extrapolated over the pull's duration)."""
        def mean(rows: list[tuple[float, FloatArray, FloatArray]]) -> tuple[float, FloatArray]:
            values = np.array([r[k] for r in rows], dtype=float)
            return float(np.mean([r[0] for r in rows])), values.mean(axis=0)
        t0, x0 = mean(self.before)
        t1, x1 = mean(self.after)
        tm, xm = mean(self.mid)
        rate = (x0 - xm) / (t0 - tm) if t0 > tm else np.zeros_like(x0)
        return x1 - x0 - rate * (t1 - t0)


class Calibrator:
    """The procedure of the module docstring, one sample at a time.

    ``calibration`` is the present one (``hardware.yaml``): its ADC resolutions, gains and
    configured signs are used; its offsets serve only to say how far the arm is from the
    calibration pose.
    """

    def __init__(self, robot: Robot, calibration: Calibration,
                 config: CalibrationProcedureConfig, file: str = "hardware.yaml",
                 key: str = "calibration_procedure", driver_max_tension_n: float = math.inf
                 ) -> None:
        top = config.taut_tension_n + config.pull_tension_n
        if top > config.max_tension_n:
            raise ConfigError(file, f"{key}.pull_tension_n",
                              f"taut_tension_n + pull_tension_n at most max_tension_n = "
                              f"{config.max_tension_n} N", f"{top} N")
        if not config.average_s < min(config.rest_s / 2, config.pull_s):
            raise ConfigError(file, f"{key}.average_s", "less than rest_s / 2 and pull_s",
                              config.average_s)
        if config.max_tension_n > driver_max_tension_n:
            raise ConfigError(file, f"{key}.max_tension_n",
                              f"at most the driver's max_tension_n = {driver_max_tension_n} N",
                              config.max_tension_n)
        self.robot = robot
        self.cal = calibration
        self.config = config
        self.n = robot.arm.n_joints
        self.m = robot.n_muscles
        self.phase = Phase.SLACK_SETTLE
        self.stop_reason = ""
        self._phase_start_s: float | None = None
        self._slack: list[tuple[FloatArray, FloatArray, FloatArray]] = []
        self._taut: list[tuple[FloatArray, FloatArray, FloatArray]] = []
        self._pulls = [_Pull() for _ in range(self.m)]
        self._pull = 0  # the tendon being pulled
        self._q_start: FloatArray | None = None  # where the pulls began (present signs) [rad]
        self._pot_offset: FloatArray | None = None  # from the slack and taut recordings
        self._command = np.zeros(self.m)
        self._static: tuple[list[str], list[str]] | None = None  # (problems, warnings)

    # -- the loop ---------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.phase in (Phase.DONE, Phase.STOPPED)

    @property
    def held(self) -> bool:
        """True while the arm must be held at the calibration pose (slack and taut phases)."""
        return self.phase in (Phase.SLACK_SETTLE, Phase.SLACK, Phase.TAUT_SETTLE, Phase.TAUT)

    def command_n(self) -> FloatArray:
        """(m,) tensions to command now [N], never above ``max_tension_n``."""
        return np.minimum(self._command, self.config.max_tension_n)

    def duration_s(self) -> float:
        """How long the whole procedure takes [s]."""
        c = self.config
        return (2 * (c.settle_s + c.record_s) + c.release_s
                + self.m * (c.rest_s + c.pull_s) + c.rest_s)

    def offer(self, t_s: float, pot_counts: npt.ArrayLike, encoder_counts: npt.ArrayLike,
              loadcell_counts: npt.ArrayLike) -> None:
        """One raw sample at time ``t_s`` [s]: pots (n,), encoders (m,), load cells (m,)."""
        pot = self._check(pot_counts, self.n, "potentiometer counts")
        enc = self._check(encoder_counts, self.m, "encoder counts")
        cell = self._check(loadcell_counts, self.m, "load-cell counts")
        if self.finished:
            return
        if self._phase_start_s is None:
            self._phase_start_s = t_s
        elapsed = t_s - self._phase_start_s  # in the present phase [s]
        c = self.config
        if self.phase is Phase.SLACK_SETTLE:
            self._command[:] = 0.0
            if elapsed >= c.settle_s:
                self._next(Phase.SLACK, t_s)
        elif self.phase is Phase.SLACK:
            self._slack.append((pot, enc, cell))
            if elapsed >= c.record_s:
                self._command[:] = c.taut_tension_n
                self._next(Phase.TAUT_SETTLE, t_s)
        elif self.phase is Phase.TAUT_SETTLE:
            if elapsed >= c.settle_s:
                self._next(Phase.TAUT, t_s)
        elif self.phase is Phase.TAUT:
            self._taut.append((pot, enc, cell))
            if elapsed >= c.record_s:
                self._pot_offset = self._pose_offsets()
                self._static = self._static_checks()
                if self._static[0]:  # never move an arm that is not where it should be
                    self._command[:] = 0.0
                    self._next(Phase.STOPPED, t_s)
                    self.stop_reason = "the static checks failed"
                else:  # timed from the first sample offered once the arm is let go
                    self._next(Phase.RELEASE, t_s)
                    self._phase_start_s = None
        elif self.phase is Phase.RELEASE:
            if elapsed >= c.release_s:
                self._next(Phase.PULLS, t_s)
        elif self.phase is Phase.PULLS:
            self._pulls_sample(elapsed, t_s, pot, enc)

    def _check(self, values: npt.ArrayLike, size: int, what: str) -> FloatArray:
        a = np.asarray(values, dtype=float)
        if a.shape != (size,) or not np.all(np.isfinite(a)):
            raise InputError(f"Calibrator.offer {what}", f"{size} finite values", a.tolist())
        return a.copy()

    def _next(self, phase: Phase, t_s: float) -> None:
        self.phase = phase
        self._phase_start_s = t_s

    def _angles(self, pot: FloatArray) -> FloatArray:
        """Joint angles with the measured offsets and the present signs [rad]."""
        assert self._pot_offset is not None
        return self.cal.pot_sign * (pot - self._pot_offset) / self.cal.pot_counts_per_rad

    def _pulls_sample(self, elapsed: float, t_s: float, pot: FloatArray,
                      enc: FloatArray) -> None:
        c = self.config
        pull = self._pulls[self._pull]
        period = c.rest_s + c.pull_s
        if elapsed < c.rest_s:
            self._command[:] = c.taut_tension_n
            if elapsed >= c.rest_s - c.average_s:
                pull.before.append((t_s, pot, enc))
                self._q_start = self._angles(pot)
            elif c.rest_s / 2 <= elapsed < c.rest_s / 2 + c.average_s:
                pull.mid.append((t_s, pot, enc))
            return
        assert self._q_start is not None
        moved = np.abs(self._angles(pot) - self._q_start)
        if np.any(moved > c.max_motion_rad):
            j = int(np.argmax(moved))
            self._stop(f"joint '{self.cal.joint_names[j]}' moved {moved[j]:.3f} rad (allowed "
                       f"{c.max_motion_rad} rad) while tendon {self._pull_label(self._pull)} "
                       f"was pulled", t_s)
            return
        i = self._pull
        base_enc = np.mean([b[2][i] for b in pull.before])
        moved_m = abs(enc[i] - base_enc) / self.cal.encoder_counts_per_m[i]
        enough = moved_m >= c.stop_shortening_m or float(moved.max()) >= c.stop_motion_rad
        if elapsed < period and not enough:
            self._command[:] = c.taut_tension_n
            self._command[i] = c.taut_tension_n + c.pull_tension_n
        else:  # the pull ends here (enough motion, or its time is up): the next tendon's rest
            pull.after.append((t_s, pot, enc))
            self._command[:] = c.taut_tension_n
            self._pull += 1
            if self._pull == self.m:
                self._next(Phase.DONE, t_s)
                self._command[:] = c.taut_tension_n
                return
            self._phase_start_s = t_s

    def _stop(self, why: str, t_s: float) -> None:
        self.stop_reason = why
        self._command[:] = self.config.taut_tension_n
        self._next(Phase.STOPPED, t_s)

    def _pull_label(self, i: int) -> str:
        return f"{self.cal.actuator_ids[i]} ('{self.cal.muscle_names[i]}')"

    # -- the fit ----------------------------------------------------------------------------------
    def _stats(self, rows: list[tuple[FloatArray, FloatArray, FloatArray]],
               k: int) -> ChannelStats:
        a = np.array([r[k] for r in rows])
        return ChannelStats(a.mean(axis=0), a.std(axis=0))

    def _pose_offsets(self) -> FloatArray:
        pots = np.array([r[0] for r in self._slack + self._taut])
        q_cal = self.cal.calibration_pose_rad
        return pots.mean(axis=0) - self.cal.pot_sign * self.cal.pot_counts_per_rad * q_cal

    def result(self) -> CalibrationResult:
        """The measured calibration, or :class:`CalibrationRefused` listing every problem."""
        if self._static is not None and self._static[0]:
            raise CalibrationRefused(self._static[0])
        if self.phase is Phase.STOPPED:
            raise CalibrationRefused([f"stopped: {self.stop_reason}"])
        if self.phase is not Phase.DONE or self._static is None:
            raise CalibrationRefused([f"the procedure did not finish (phase {self.phase.value})"])
        problems, warnings = list(self._static[0]), list(self._static[1])
        cal = self.cal
        slack_pot, slack_enc, slack_cell = (self._stats(self._slack, k) for k in range(3))
        taut_pot, taut_enc, taut_cell = (self._stats(self._taut, k) for k in range(3))
        pot_mean = np.array([r[0] for r in self._slack + self._taut]).mean(axis=0)
        pot_noise = np.maximum(slack_pot.std, taut_pot.std)
        cell_noise = np.maximum(slack_cell.std, taut_cell.std)
        enc_noise = np.maximum(slack_enc.std, taut_enc.std)
        gain = (taut_cell.mean - slack_cell.mean) / self.config.taut_tension_n
        enc_sign, enc_checked, short = self._encoder_signs(problems, warnings)
        pot_sign, pot_checked, fit = self._pot_signs(enc_sign, enc_checked, problems, warnings)
        if problems:
            raise CalibrationRefused(problems)
        offsets = pot_mean - pot_sign * cal.pot_counts_per_rad * cal.calibration_pose_rad
        return CalibrationResult(
            pot_offset_counts=offsets, pot_sign=pot_sign, pot_sign_checked=pot_checked,
            pot_sign_fit=fit, pot_noise_counts=pot_noise,
            encoder_offset_counts=taut_enc.mean, encoder_sign=enc_sign,
            encoder_sign_checked=enc_checked, shortening_m=short,
            encoder_noise_counts=enc_noise, loadcell_offset_counts=slack_cell.mean,
            loadcell_counts_per_n=gain, loadcell_noise_counts=cell_noise,
            warnings=tuple(warnings))

    def _static_checks(self) -> tuple[list[str], list[str]]:
        """Problems and warnings of the slack and taut recordings (arm held): the pose, the
        pots' range and noise, the load cells' zeros, gains and noise, the encoders' noise."""
        c, cal = self.config, self.cal
        problems: list[str] = []
        warnings: list[str] = []
        joints, n, m = cal.joint_names, self.n, self.m
        slack_pot, slack_enc, slack_cell = (self._stats(self._slack, k) for k in range(3))
        taut_pot, taut_enc, taut_cell = (self._stats(self._taut, k) for k in range(3))
        pots = np.array([r[0] for r in self._slack + self._taut])
        pot_mean = pots.mean(axis=0)
        pot_noise = np.maximum(slack_pot.std, taut_pot.std)
        # -- the pose and the potentiometers' range and noise -------------------------------------
        q_cal = cal.calibration_pose_rad
        q_now = cal.counts_to_rad(pot_mean)
        for j in range(n):
            expected = cal.rad_to_counts(q_cal)[j]
            tol = c.pose_tolerance_rad * cal.pot_counts_per_rad[j]
            name = joints[j]
            if abs(q_now[j] - q_cal[j]) > c.pose_tolerance_rad:
                problems.append(
                    f"joint '{name}': at the calibration pose {q_cal[j]:.3f} rad expected "
                    f"{expected:.0f} +- {tol:.0f} counts (present calibration, "
                    f"+-{c.pose_tolerance_rad} rad), measured {pot_mean[j]:.0f} counts = "
                    f"{q_now[j]:.3f} rad: is the arm at the calibration pose?")
            lo, hi = c.rail_margin_counts, cal.pot_full_scale_counts[j] - c.rail_margin_counts
            if pots[:, j].min() < lo or pots[:, j].max() > hi:
                problems.append(f"joint '{name}': potentiometer counts inside [{lo:.0f}, "
                                f"{hi:.0f}] expected, measured {pots[:, j].min():.0f}..."
                                f"{pots[:, j].max():.0f} (at a rail: unplugged or saturated)")
            if pot_noise[j] > c.max_potentiometer_noise_counts:
                problems.append(f"joint '{name}': potentiometer noise at most "
                                f"{c.max_potentiometer_noise_counts} counts (std) expected, "
                                f"measured {pot_noise[j]:.2f}")
        # -- load cells: zero (slack), counts per commanded newton (taut), noise ------------------
        cell_noise = np.maximum(slack_cell.std, taut_cell.std)
        gain = (taut_cell.mean - slack_cell.mean) / c.taut_tension_n
        enc_noise = np.maximum(slack_enc.std, taut_enc.std)
        for i in range(m):
            label = f"tendon {self._pull_label(i)}"
            zero, conf = slack_cell.mean[i], cal.loadcell_offset_counts[i]
            if abs(zero - conf) > c.loadcell_zero_tolerance_counts:
                problems.append(f"{label}: slack load cell expected {conf:.0f} +- "
                                f"{c.loadcell_zero_tolerance_counts:.0f} counts (configured "
                                f"zero), measured {zero:.0f}: is the tendon slack?")
            conf_gain = cal.loadcell_counts_per_n[i]
            if abs(gain[i] / conf_gain - 1.0) > c.loadcell_gain_tolerance:
                problems.append(f"{label}: load cell expected {conf_gain:g} counts/N "
                                f"+-{c.loadcell_gain_tolerance:.0%} between slack and "
                                f"{c.taut_tension_n:g} N, measured {gain[i]:.2f} counts/N"
                                + (" (reversed: wired backwards?)" if gain[i] < 0 else ""))
            if cell_noise[i] > c.max_loadcell_noise_counts:
                problems.append(f"{label}: load-cell noise at most {c.max_loadcell_noise_counts}"
                                f" counts (std) expected, measured {cell_noise[i]:.2f}")
            if enc_noise[i] > c.max_encoder_noise_counts:
                problems.append(f"{label}: encoder noise at most {c.max_encoder_noise_counts} "
                                f"counts (std, arm held) expected, measured {enc_noise[i]:.2f}")
        return problems, warnings

    def _deltas(self) -> tuple[FloatArray, FloatArray]:
        """Per pull: pot count changes (m, n) and encoder count changes (m, m)."""
        dpot = np.zeros((self.m, self.n))
        denc = np.zeros((self.m, self.m))
        for i, p in enumerate(self._pulls):
            if not p.mid or not p.before or not p.after:
                raise CalibrationRefused([f"tendon {self._pull_label(i)}: no samples around "
                                          f"its pull (sensor rate too low for average_s?)"])
            dpot[i] = p.change(1)
            denc[i] = p.change(2)
        return dpot, denc

    def _encoder_signs(self, problems: list[str], warnings: list[str]
                       ) -> tuple[FloatArray, npt.NDArray[np.bool_], FloatArray]:
        """A pulled tendon shortens: its length change, with the configured sign, is < 0."""
        cal = self.cal
        _, denc = self._deltas()
        own = np.diag(denc)
        short = -cal.encoder_sign * own / cal.encoder_counts_per_m  # (m,) [m]
        sign = cal.encoder_sign.copy()
        checked = np.abs(short) >= self.config.min_shortening_m
        for i in range(self.m):
            label = f"tendon {self._pull_label(i)}"
            if not checked[i]:
                warnings.append(f"{label}: encoder sign not checked: its pull moved it "
                                f"{short[i] * 1e3:+.2f} mm (less than "
                                f"{self.config.min_shortening_m * 1e3:g} mm)")
            elif short[i] > 0.0:
                sign[i] = -sign[i]
                warnings.append(f"{label}: encoder_sign {int(cal.encoder_sign[i]):+d} configured"
                                f", but the pulled tendon lengthened by {short[i] * 1e3:.2f} mm "
                                f"with it: measured encoder_sign {int(sign[i]):+d}")
        return sign, checked, short

    def _pot_signs(self, enc_sign: FloatArray, enc_checked: npt.NDArray[np.bool_],
                   problems: list[str], warnings: list[str]
                   ) -> tuple[FloatArray, npt.NDArray[np.bool_], FloatArray]:
        """Least squares ``dl_enc = Jm (s * dq_pot)`` over every pull (rows: each pull's
        length changes of every tendon whose encoder sign is known); ``s_j`` near +1 confirms
        joint j's sign, near -1 flips it."""
        cal, c = self.cal, self.config
        dpot, denc = self._deltas()
        dq = cal.pot_sign * dpot / cal.pot_counts_per_rad  # (pulls, n) [rad]
        dl = -enc_sign * denc / cal.encoder_counts_per_m  # (pulls, m) [m]
        jm = self.robot.geometry.kinematics_at(cal.calibration_pose_rad).jacobian  # (m, n)
        moved = np.abs(dq).sum(axis=0) >= c.min_joint_motion_rad
        rows = np.flatnonzero(enc_checked) if np.any(enc_checked) else np.arange(self.m)
        # A (pulls x rows, joints that moved): column j is Jm[rows, j] * dq[pull, j]
        cols = np.flatnonzero(moved)
        fit = np.full(self.n, np.nan)
        sign = cal.pot_sign.copy()
        if cols.size:
            a = np.concatenate([jm[np.ix_(rows, cols)] * dq[p, cols] for p in range(self.m)])
            b = np.concatenate([dl[p, rows] for p in range(self.m)])
            fit[cols] = np.linalg.lstsq(a, b, rcond=None)[0]
        for j, name in enumerate(cal.joint_names):
            if not moved[j]:
                warnings.append(f"joint '{name}': potentiometer sign not checked: the pulls "
                                f"moved it {np.abs(dq[:, j]).sum():.4f} rad in total (less "
                                f"than {c.min_joint_motion_rad} rad)")
            elif fit[j] < -0.5:
                sign[j] = -sign[j]
                warnings.append(f"joint '{name}': sign {int(cal.pot_sign[j]):+d} configured, "
                                f"but the encoders see the joint move the other way (fit "
                                f"{fit[j]:+.2f}): measured sign {int(sign[j]):+d}")
            elif not fit[j] > 0.5:
                warnings.append(f"joint '{name}': potentiometer sign not checked: the encoders'"
                                f" length changes should follow its motion through the model "
                                f"(fit factor near +1 or -1), measured {fit[j]:+.2f} (is "
                                f"counts_per_rad right?)")
        checked = moved & (np.abs(fit) > 0.5)
        return sign, checked, fit
