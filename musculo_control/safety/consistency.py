"""Joint angles against muscle lengths: analytical redundancy between two sensor sets.

Eighteen winch encoders measure the muscle lengths; seven potentiometers measure the joint
angles; the model says what the lengths are at those angles (computed exactly at the measured
angles: a first-order step ``l_snap + Jm (q - q_snap)`` from a snapshot up to 50 ms old misses
millimetres when a light joint whips). The mismatch ``r = l_measured - l_model`` is not zero
(via-point and calibration errors of a few millimetres) but changes slowly with the pose, so the
check compares ``r`` with a baseline that follows it through a first-order lag ``tau``
(``baseline_time_constant_s``) and fires when a muscle departs from it by more than
``tolerance_m + relative_tolerance * travel``, with ``travel`` the muscle's recent travel
joint by joint, weighted like the baseline's memory, ``integral sum_j |Jm_ij qd_j(s)|
exp(-(t - s) / tau) ds`` from the measured joint angles and rates: the baseline lags the
mismatch by about that much times the model's relative moment-arm error. Joint by joint,
because the errors of the joints' shares add where the shares cancel in the muscle's net
change (the biceps under a forearm roll and an elbow flexion together: the supervisor passes
``sum_j |Jm_ij qd_j|`` as ``rate_m_s``). A relative allowance alone fails a short lever: a
via-point error moves a lever by millimetres whatever its length (3 mm on the biceps's 9 mm
forearm-roll lever, model error x3, is a third), so ``moment_arm_error_m`` adds an absolute
one, times the recent rotation of the joints the muscle spans (``sum_j |qd_j|`` over them,
weighted the same way; the supervisor passes it as ``angle_rate_rad_s``). A frozen
potentiometer adds no travel or rotation of its own joint, so its whole motion shows as
deviation.

A potentiometer that freezes while its joint moves by ``d`` shifts ``r`` by ``Jm[:, j] d``
(moment arms of 1-3 cm: 0.5 mm is 0.02-0.05 rad); a slipped encoder, or the free winch of a
snapped tendon, shifts its own muscle (:meth:`ConsistencyMonitor.unwound`).

While the check fires the baseline stands still, so a persisting fault keeps firing, and it
clears when the readings agree again. A frozen reading of a joint that does not move is correct
and cannot be detected by any check; the consistency check sees it as soon as the joint moves.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from musculo_control.arrays import any_true, finite
from musculo_control.safety.config import ConsistencyConfig
from musculo_control.safety.rules import Finding

FloatArray = npt.NDArray[np.float64]


class ConsistencyMonitor:
    """Baseline-tracking comparison of measured and modelled muscle lengths."""

    def __init__(self, names: tuple[str, ...], config: ConsistencyConfig) -> None:
        self.names = tuple(names)
        self.config = config
        self.reset()

    def unwound(self) -> npt.NDArray[np.bool_]:
        """(m,) muscles whose winch has wound in past their path at the last comparison.

        The winch of an intact tendon can never take in more than the path gives back; one
        that has is no longer attached. All of a free winch's travel shows as mismatch, while
        model error shows at most ``relative_tolerance`` of it, so the test is
        ``-deviation > snap_margin_m + relative_tolerance * travel`` (with the tendon's load
        cell reading slack, which the caller checks).
        """
        if self.deviation_m is None or self._travel is None:
            return np.zeros(len(self.names), dtype=bool)
        cfg = self.config
        allowance = cfg.relative_tolerance * self._travel
        if self._turn is not None and cfg.moment_arm_error_m > 0.0:
            allowance = allowance + cfg.moment_arm_error_m * self._turn
        return -self.deviation_m > cfg.snap_margin_m + allowance

    @property
    def last_stamp_s(self) -> float:
        """Stamp of the last pair compared [s] (-inf: none since the reset)."""
        return self._t

    def reset(self) -> None:
        """Forget the baseline: the next comparison starts a new one."""
        self._baseline: FloatArray | None = None
        self._travel: FloatArray | None = None  # (m,) recent travel [m]
        self._turn: FloatArray | None = None  # (m,) recent rotation of the joints spanned [rad]
        self._t = -math.inf
        self.deviation_m: FloatArray | None = None  # last r - baseline, for reports

    def update(self, stamp_s: float, measured_m: FloatArray, model_m: FloatArray,
               rate_m_s: FloatArray,
               angle_rate_rad_s: FloatArray | None = None,
               hold_baseline: npt.NDArray[np.bool_] | None = None) -> Finding | None:
        """Compare one pair of samples taken at ``stamp_s`` [s], with each muscle's rate of
        travel ``rate_m_s`` [m/s] (>= 0; the supervisor's joint-by-joint ``sum_j |Jm_ij qd_j|``)
        and the rotation rate of the joints it spans ``angle_rate_rad_s`` [rad/s] (>= 0;
        ``None``: no absolute allowance); ``None`` when they agree. The baseline of the muscles
        ``hold_baseline`` does not follow (a snapped tendon's reading says nothing of the
        path)."""
        r = measured_m - model_m
        if not (finite(r, rate_m_s) and math.isfinite(stamp_s)):
            return None  # non-finite inputs are other rules' business
        if self._baseline is None or self._travel is None or self._turn is None:
            self._baseline = r.copy()
            self._travel = np.zeros_like(r)
            self._turn = np.zeros_like(r)
            self._t = stamp_s
            return None
        cfg = self.config
        dt = stamp_s - self._t
        decay = math.exp(-dt / cfg.baseline_time_constant_s) if dt > 0.0 else 1.0
        if dt > 0.0:
            self._travel *= decay
            self._travel += np.abs(rate_m_s) * dt
            if angle_rate_rad_s is not None:
                self._turn *= decay
                self._turn += np.abs(angle_rate_rad_s) * dt
        dev = r - self._baseline
        self.deviation_m = dev
        tol = cfg.relative_tolerance * self._travel
        tol += cfg.tolerance_m  # (m,) [m]
        if cfg.moment_arm_error_m > 0.0:
            tol += cfg.moment_arm_error_m * self._turn
        bad = np.abs(dev) <= tol
        np.logical_not(bad, out=bad)
        if any_true(bad):
            idx = np.flatnonzero(bad)
            worst = idx[np.argsort(-np.abs(dev[idx]))][:4]
            return Finding("consistency", "joint angles and muscle lengths disagree: "
                           + ", ".join(f"{self.names[i]} {dev[i] * 1e3:+.1f} mm (tolerance "
                                       f"{tol[i] * 1e3:.1f} mm)" for i in worst)
                           + "; stuck or slipped sensor?")
        if dt > 0.0:
            self._baseline += (1.0 - decay) * (dev if hold_baseline is None else
                                               np.where(hold_baseline, 0.0, dev))
            self._t = stamp_s
        return None
