"""What each experiment is scored on, when the score starts, and what happened before it.

A run is reduced to a :class:`Scored`: the quantities its metrics read, sampled at the control
ticks, and the named times that bound its windows. The metrics below read nothing else, and the
figures (:mod:`musculo_control.sim.plots`) draw exactly these series with the same windows, so
a figure always shows the number it is labelled with.

Rules shared by the experiments:

- **The score starts when the experiment's conditions hold**, never at a fixed second: the
  disturbance from the first sample with the gauge pushing, the trajectory at the start of the
  move, the nullspace run at release (t = 0).
- **What happened before is reported and judged.** The start hold before the gauge touches or
  the move starts must keep the hand and the elbow within ``start_hold``'s tolerances of where
  they started; a run whose start pose was not held is a failed run (it started from another
  pose), not one whose first second was skipped.
- **Contact is checked, not assumed.** The gauge pushes only along its axis; when the elbow
  gets ahead of the gauge tip by more than ``contact_gap_tolerance_m`` the contact is lost, and
  a near-zero force then says nothing about a yielding arm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.errors import ConfigError

FloatArray = npt.NDArray[np.float64]

#: Metric names of each experiment (the keys of ``metrics.json``), with their meaning.
METRICS: dict[str, dict[str, str]] = {
    "disturbance": {
        "start_held": "the start pose was held until the gauge touched (hand and elbow within "
                      "start_hold's tolerances)",
        "settle_hand_deviation_m": "largest hand deviation from its start before the gauge "
                                   "touched [m]",
        "settle_elbow_motion_m": "largest elbow motion from its start before the gauge "
                                 "touched [m]",
        "contact_time_s": "first sample with the gauge pushing: the score starts here [s]",
        "max_hand_deviation_m": "largest hand deviation from the goal from contact on [m]",
        "peak_push_force_N": "largest gauge force from contact on [N]",
        "final_push_force_N": "mean gauge force over the final window [N]",
        "final_force_fraction": "final_push_force_N / peak_push_force_N [-]",
        "elbow_displacement_m": "elbow motion along the push axis from contact to the end [m]",
        "contact_gap_max_m": "how far the elbow got ahead of the gauge tip at most [m] "
                             "(<= 0: always in contact)",
        "contact_lost_s": "time the elbow was ahead of the tip by more than the tolerance [s]",
        "contact_held_final": "in contact throughout the final window",
        "unsafe_ticks": "control ticks in a stop: held, lowered or at minimum tension (a fault)",
    },
    "trajectory": {
        "start_held": "the start pose was held until the move started",
        "settle_hand_deviation_m": "largest hand deviation from the start point before the "
                                   "move [m]",
        "settle_elbow_motion_m": "largest elbow motion from its start before the move [m]",
        "elbow_height_start_m": "elbow height at t = 0, the named start pose [m]",
        "elbow_height_at_move_m": "elbow height when the move started [m]",
        "elbow_height_end_m": "elbow height at the end [m]",
        "mean_tracking_error_m": "mean distance hand - goal from the move's start to the end, "
                                 "over the task's position axes (controller.yaml task.rows) [m]",
        "max_tracking_error_m": "largest distance hand - goal over the same window and axes [m]",
        "final_error_m": "distance hand - goal at the end [m]",
        "tension_limit_fraction": "share of the scored time with a muscle commanded at the "
                               "actuators' limit (hardware.yaml driver.max_tension_n, or the "
                               "mock motor's at rest if lower) [-]",
        "unsafe_ticks": "control ticks in a stop: held, lowered or at minimum tension (a fault)",
    },
    "nullspace": {
        "activation_norm_start": "mean ||a|| over the start window [-]",
        "activation_norm_end": "mean ||a|| over the end window [-]",
        "activation_drop_fraction": "1 - end / start [-]",
        "hand_drift_m": "largest hand deviation from its start over the run [m]",
        "elbow_drop_m": "elbow height at the start minus at the end [m]",
        "drift_joint_change_rad": "change of the drifting joint (experiments.yaml "
                                  "nullspace.drift_joint) over the run [rad]",
        "unsafe_ticks": "control ticks in a stop: held, lowered or at minimum tension (a fault)",
    },
}


@dataclass
class Scored:
    """The scored quantities of one run: control-tick samples and named times [s]."""

    t_s: FloatArray
    series: dict[str, FloatArray]
    events: dict[str, float] = field(default_factory=dict)

    def window(self, t0: float, t1: float, *, right_open: bool = False) -> npt.NDArray[np.bool_]:
        """Samples with ``t0 <= t <= t1`` (``< t1`` if ``right_open``)."""
        t = self.t_s
        return (t >= t0) & ((t < t1) if right_open else (t <= t1))


def _max(values: FloatArray, sel: npt.NDArray[np.bool_]) -> float:
    return float(values[sel].max()) if np.any(sel) else float("nan")


def _mean(values: FloatArray, sel: npt.NDArray[np.bool_]) -> float:
    return float(values[sel].mean()) if np.any(sel) else float("nan")


def _start_hold(sc: Scored, until_s: float, hand: str, hand_tol_m: float,
                elbow_tol_m: float) -> dict[str, Any]:
    before = sc.window(0.0, until_s, right_open=True)
    hand_dev = _max(sc.series[hand], before) if np.any(before) else 0.0
    elbow = _max(sc.series["elbow_motion_m"], before) if np.any(before) else 0.0
    return {"start_held": bool(hand_dev <= hand_tol_m and elbow <= elbow_tol_m),
            "settle_hand_deviation_m": hand_dev, "settle_elbow_motion_m": elbow}


# -- A. disturbance ---------------------------------------------------------------------------
def disturbance_metrics(sc: Scored, *, hand_tolerance_m: float,
                        elbow_tolerance_m: float, contact_gap_tolerance_m: float,
                        unsafe_ticks: int) -> dict[str, Any]:
    """Experiment A. Series: ``hand_deviation_m``, ``gauge_force_n``, ``elbow_progress_m``
    and ``tip_progress_m`` (along the push axis from the touch), ``elbow_motion_m``; events:
    ``touch_s`` (the tip set against the elbow), ``final_from_s`` (start of the final force
    window), ``end_s``."""
    touch, end = sc.events["touch_s"], sc.events["end_s"]
    final_from = sc.events["final_from_s"]
    s = sc.series
    out = _start_hold(sc, touch, "hand_deviation_m", hand_tolerance_m, elbow_tolerance_m)
    force = s["gauge_force_n"]
    pushing = np.flatnonzero((sc.t_s >= touch) & (force > 0.0))
    contact = float(sc.t_s[pushing[0]]) if pushing.size else float("nan")
    scored = sc.window(contact, end) if pushing.size else np.zeros_like(sc.t_s, dtype=bool)
    final = sc.window(final_from, end)
    gap = s["elbow_progress_m"] - s["tip_progress_m"]
    lost = scored & (gap > contact_gap_tolerance_m)
    dt = float(np.median(np.diff(sc.t_s))) if sc.t_s.size > 1 else 0.0
    peak = _max(force, scored)
    final_force = _mean(force, final)
    out.update({
        "contact_time_s": contact,
        "max_hand_deviation_m": _max(s["hand_deviation_m"], scored),
        "peak_push_force_N": peak,
        "final_push_force_N": final_force,
        "final_force_fraction": final_force / peak if peak > 0.0 else float("nan"),
        "elbow_displacement_m": float(s["elbow_progress_m"][-1]) if sc.t_s.size else float("nan"),
        "contact_gap_max_m": _max(gap, scored),
        "contact_lost_s": float(np.count_nonzero(lost)) * dt,
        "contact_held_final": bool(pushing.size) and not bool(np.any(lost & final)),
        "unsafe_ticks": int(unsafe_ticks),
    })
    return out


# -- B. trajectory ----------------------------------------------------------------------------
def trajectory_metrics(sc: Scored, *, hand_tolerance_m: float, elbow_tolerance_m: float,
                       unsafe_ticks: int) -> dict[str, Any]:
    """Experiment B from one start pose. Series: ``tracking_error_m`` (hand - goal; the goal is
    the start point before the move), ``elbow_height_m``, ``elbow_motion_m``,
    ``at_tension_limit`` (1 where a muscle is commanded at the actuators' limit); events:
    ``move_s``, ``end_s``."""
    move, end = sc.events["move_s"], sc.events["end_s"]
    s = sc.series
    out = _start_hold(sc, move, "tracking_error_m", hand_tolerance_m, elbow_tolerance_m)
    scored = sc.window(move, end)
    z = s["elbow_height_m"]
    at_move = np.flatnonzero(scored)
    out.update({
        "elbow_height_start_m": float(z[0]),
        "elbow_height_at_move_m": float(z[at_move[0]]) if at_move.size else float("nan"),
        "elbow_height_end_m": float(z[-1]),
        "mean_tracking_error_m": _mean(s["tracking_error_m"], scored),
        "max_tracking_error_m": _max(s["tracking_error_m"], scored),
        "final_error_m": float(s["tracking_error_m"][-1]),
        "tension_limit_fraction": _mean(s["at_tension_limit"], scored),
        "unsafe_ticks": int(unsafe_ticks),
    })
    return out


# -- C. nullspace -----------------------------------------------------------------------------
def nullspace_metrics(sc: Scored, *, unsafe_ticks: int) -> dict[str, Any]:
    """Experiment C. Series: ``activation_norm``, ``hand_deviation_m``, ``elbow_height_m``,
    ``drift_joint_rad``; events: ``start_window_s`` / ``end_window_s`` (their starts),
    ``window_s`` (their length), ``end_s``."""
    s, ev = sc.series, sc.events
    a = s["activation_norm"]
    start = _mean(a, sc.window(ev["start_window_s"], ev["start_window_s"] + ev["window_s"]))
    end = _mean(a, sc.window(ev["end_window_s"], ev["end_window_s"] + ev["window_s"]))
    q = s["drift_joint_rad"]
    z = s["elbow_height_m"]
    return {
        "activation_norm_start": start,
        "activation_norm_end": end,
        "activation_drop_fraction": float(1.0 - end / start) if start > 0 else float("nan"),
        "hand_drift_m": _max(s["hand_deviation_m"], sc.window(0.0, ev["end_s"])),
        "elbow_drop_m": float(z[0] - z[-1]),
        "drift_joint_change_rad": float(q[-1] - q[0]),
        "unsafe_ticks": int(unsafe_ticks),
    }


# -- targets and verdicts ----------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Target:
    """One bound a result is judged against (``experiments.yaml`` ``targets``)."""

    experiment: str = spec(choices=tuple(METRICS), doc="the experiment")
    controller: str = spec(choices=CONTROLLER_NAMES, doc="the controller")
    metric: str = spec(doc="one of the experiment's metrics (for the trajectory: every pose)")
    below: float | None = spec(None, doc="met when the metric is below this (metric's unit)")
    above: float | None = spec(None, doc="met when the metric is above this (metric's unit)")
    source: str = spec(doc="where the bound comes from (the paper's result or the project's)")

    def check(self, file: str, key: str) -> None:
        if self.metric not in METRICS[self.experiment]:
            raise ConfigError(file, f"{key}.metric",
                              f"a metric of {self.experiment}: {sorted(METRICS[self.experiment])}",
                              self.metric)
        if (self.below is None) == (self.above is None):
            raise ConfigError(file, key, "exactly one of 'below' and 'above'")

    @property
    def bound(self) -> str:
        return f"< {self.below:g}" if self.below is not None else f"> {self.above:g}"

    def met_by(self, value: Any) -> bool:
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        return value < self.below if self.below is not None else value > self.above  # type: ignore[operator]


def _per_run(metrics: Mapping[str, Any], key: str) -> dict[str, Any]:
    """{'': value} for one run, {pose: value} for the trajectory's runs."""
    value = metrics.get(key)
    return dict(value) if isinstance(value, dict) else {"": value}


def problems(experiment: str, metrics: Mapping[str, Any]) -> list[str]:
    """What makes a run not count, whatever its numbers: a start pose not held, a lost
    contact, ticks in a stop."""
    out: list[str] = []
    held = _per_run(metrics, "start_held")
    hand = _per_run(metrics, "settle_hand_deviation_m")
    elbow = _per_run(metrics, "settle_elbow_motion_m")
    before = "the gauge touched" if experiment == "disturbance" else "the move"
    for run, ok in held.items():
        if ok is False:
            name = f"{run}: " if run else ""
            out.append(f"{name}start pose not held (hand moved {100 * hand[run]:.1f} cm, elbow "
                       f"{100 * elbow[run]:.1f} cm before {before})")
    if experiment == "disturbance":
        if not math.isfinite(metrics.get("contact_time_s", float("nan"))):
            out.append("the gauge never pushed")
        elif metrics.get("contact_lost_s", 0.0) > 0.0:
            final = "" if metrics.get("contact_held_final") else ", in the final window too"
            out.append(f"contact lost for {metrics['contact_lost_s']:.2f} s (the elbow got "
                       f"{100 * metrics['contact_gap_max_m']:.1f} cm ahead of the gauge "
                       f"tip{final})")
    episodes = _per_run(metrics, "unsafe_episodes")
    for run, n in _per_run(metrics, "unsafe_ticks").items():
        if n:
            why = episodes.get(run)
            out.append(f"{run + ': ' if run else ''}{n} ticks in a stop (held, lowered or "
                       f"at minimum tension)" + (f" ({'; '.join(why)})" if why else ""))
    return out


def episode_metrics(log: Any) -> dict[str, Any]:
    """``unsafe_episodes``: each stretch in a stop with the rules that caused it,
    when, for how long (:class:`~musculo_control.safety.episodes.EpisodeLog`); none when the
    run never went there (so a nominal run's metrics stay what they were)."""
    episodes = log.all()
    return {"unsafe_episodes": [e.describe() for e in episodes]} if episodes else {}


def judge(experiment: str, controller: str, metrics: Mapping[str, Any],
          targets: Sequence[Target]) -> dict[str, Any]:
    """The verdict of one experiment with one controller.

    ``status``: 'met' (every target met, no problem), 'missed', or 'no target'; ``checks``:
    one per target with the value(s) and whether each is met; ``problems``: see
    :func:`problems` (any problem misses every target of the row).
    """
    mine = [t for t in targets if t.experiment == experiment and t.controller == controller]
    found = problems(experiment, metrics)
    checks = []
    for t in mine:
        values = _per_run(metrics, t.metric)
        met = {run: t.met_by(v) for run, v in values.items()}
        checks.append({"metric": t.metric, "bound": t.bound, "source": t.source,
                       "value": metrics.get(t.metric), "met": all(met.values()),
                       "missed_by": sorted(run for run, ok in met.items() if not ok and run)})
    if not mine:
        status = "no target"
    elif found or not all(c["met"] for c in checks):
        status = "missed"
    else:
        status = "met"
    return {"status": status, "checks": checks, "problems": found}
