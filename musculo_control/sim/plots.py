"""Figures of the experiments, drawn like the paper's: signals against time, one line per run.

Every panel draws a series of the runs' :class:`~musculo_control.sim.scoring.Scored` (the very
numbers the metrics read), with the targets of ``experiments.yaml`` as horizontal lines and the
windows that bound the score shaded: grey for the start hold before the score starts (judged,
not scored), light blue for a window a metric averages over. Labels come from the run itself
(its parameters in ``run_info``, the robot's names), so the figures describe whichever arm ran;
heights are along the robot's up axis (against gravity).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from musculo_control.sim.scoring import Scored, Target


class PlottedRun(Protocol):
    """What a figure reads of a run: a runner's
    :class:`~musculo_control.sim.experiments.RunResult`, or a bag's scored run
    (``musculo experiment --graph``)."""

    @property
    def controller(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def metrics(self) -> dict[str, Any]: ...
    @property
    def scored(self) -> Scored: ...
    @property
    def run_info(self) -> dict[str, Any]: ...

_COLOURS = {"osc": "tab:blue", "osc-no-nullspace": "tab:orange", "joint-stiffness": "tab:green",
            "muscle-stiffness": "tab:red"}
_HOLD = {"color": "0.85", "zorder": 0}
_WINDOW = {"color": "lightblue", "alpha": 0.5, "zorder": 0}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _targets(ax: Any, targets: Sequence[Target], experiment: str, metric: str,
             controllers: Sequence[str], scale: float, what: str = "", unit: str = "cm") -> None:
    """Horizontal lines at the bounds of ``metric`` for the controllers drawn."""
    for t in targets:
        if t.experiment != experiment or t.metric != metric or t.controller not in controllers:
            continue
        bound = scale * float(t.below if t.below is not None else t.above)  # type: ignore[arg-type]
        side = "<" if t.below is not None else ">"
        ax.axhline(bound, color=_COLOURS.get(t.controller, "k"), ls=":", lw=1.2,
                   label=f"{t.controller} target: {what}{side} {bound:g} {unit}")


def _zoom(ax: Any, factor: float = 3.0) -> None:
    """Clip the y axis to ``factor`` times the highest target line, so that one run far off
    does not flatten the others (their maxima are in the legend)."""
    lines = [ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_linestyle() == ":"]
    if lines:
        top = factor * max(lines)
        if ax.get_ylim()[1] > top:
            ax.set_ylim(top=top)
            ax.text(0.99, 0.02, f"clipped at {top:g}: see the legend for the maxima",
                    transform=ax.transAxes, ha="right", fontsize=7, color="0.4")


def _section(runs: Sequence[PlottedRun], experiment: str) -> dict:
    """The experiment's parameters of the first run (empty when unknown)."""
    if not runs:
        return {}
    params = runs[0].run_info.get("parameters", {}).get("experiments", {})
    return params.get(experiment) or {}


def _axis_words(axis: Sequence[float]) -> str:
    """'+z', '-y' for a base axis, else the rounded vector."""
    a = np.asarray(axis, dtype=float)
    a = a / max(float(np.linalg.norm(a)), 1e-12)
    i = int(np.argmax(np.abs(a)))
    if abs(abs(a[i]) - 1.0) < 1e-9:
        return f"{'+' if a[i] > 0 else '-'}{'xyz'[i]}"
    return str(np.round(a, 2).tolist())


def plot_disturbance(runs: Sequence[PlottedRun], path: Path,
                     targets: Sequence[Target] = ()) -> Path:
    """Hand deviation, gauge force, elbow and gauge tip along the push axis (paper exp. A)."""
    plt = _pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(7.5, 9), sharex=True)
    controllers = [r.controller for r in runs]
    for run in runs:
        sc, c = run.scored, _COLOURS.get(run.controller)
        t = sc.t_s
        m = run.metrics
        axes[0].plot(t, 100 * sc.series["hand_deviation_m"], color=c,
                     label=f"{run.label}: max {100 * m['max_hand_deviation_m']:.2f} cm")
        axes[1].plot(t, sc.series["gauge_force_n"], color=c,
                     label=f"{run.label}: peak {m['peak_push_force_N']:.1f} N, final "
                           f"{m['final_push_force_N']:.1f} N")
        axes[2].plot(t, 100 * sc.series["elbow_progress_m"], color=c, label=f"elbow, {run.label}")
    if runs:
        sc = runs[0].scored
        ev = sc.events
        for ax in axes:
            ax.axvspan(0.0, ev["touch_s"], **_HOLD)
        axes[1].axvspan(ev["final_from_s"], ev["end_s"], **_WINDOW, label="final force window")
        axes[2].plot(sc.t_s, 100 * sc.series["tip_progress_m"], "k--", lw=1,
                     label="gauge tip (ahead of it: contact lost)")
    _targets(axes[0], targets, "disturbance", "max_hand_deviation_m", controllers, 100, "max ")
    _zoom(axes[0])
    axes[0].set_ylabel("hand deviation from the goal [cm]")
    axes[1].set_ylabel("gauge force [N]")
    axes[2].set_ylabel("along the push axis from the touch [cm]")
    axes[2].set_xlabel("time [s] (grey: start hold, judged, not scored)")
    for ax in axes:
        ax.legend(fontsize=7)
    cfg = _section(runs, "disturbance")
    push = (f" {100 * cfg['displacement_m']:.0f} cm along {_axis_words(cfg['axis'])}"
            if "displacement_m" in cfg and "axis" in cfg else "")
    axes[0].set_title(f"A. Compliant disturbance: a gauge pushes the elbow{push} and holds")
    return _save(fig, path)


def plot_trajectory(runs: Sequence[PlottedRun], path: Path,
                    targets: Sequence[Target] = ()) -> Path:
    """Hand path against the goal, tracking error and elbow height, per start pose (exp. B)."""
    plt = _pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(7.5, 10))
    for i, run in enumerate(runs):
        sc, colour = run.scored, f"C{i}"
        s, t = sc.series, sc.t_s
        axes[0].plot(100 * s["hand_along_m"], 100 * s["hand_height_m"], color=colour,
                     label=run.label)
        axes[1].plot(t, 100 * s["tracking_error_m"], color=colour,
                     label=f"{run.label}: mean {100 * run.metrics['mean_tracking_error_m']:.2f} cm")
        axes[2].plot(t, 100 * s["elbow_height_m"], color=colour, label=run.label)
    if runs:
        sc = runs[0].scored
        axes[0].plot(100 * sc.series["goal_along_m"], 100 * sc.series["goal_height_m"], "k--",
                     lw=1, label="goal")
        for ax in axes[1:]:
            ax.axvspan(0.0, sc.events["move_s"], **_HOLD)
        _targets(axes[1], targets, "trajectory", "mean_tracking_error_m",
                 [runs[0].controller], 100, "mean ")
    axes[0].set_xlabel("hand along the move [cm]")
    axes[0].set_ylabel("hand height [cm]")
    axes[0].set_aspect("equal", adjustable="datalim")
    title = runs[0].controller if runs else ""
    axes[0].set_title(f"B. Point-to-point move, {title} (orientation feedback off)")
    axes[1].set_ylabel("tracking error [cm]")
    axes[2].set_ylabel("elbow height [cm]")
    for ax in axes[1:]:
        ax.set_xlabel("time [s] (grey: start hold, judged, not scored)")
    for ax in axes:
        ax.legend(fontsize=7)
    return _save(fig, path)


def plot_nullspace(runs: Sequence[PlottedRun], path: Path, joint_name: str,
                   targets: Sequence[Target] = ()) -> Path:
    """||a||, the drifting joint, elbow height and hand drift against time (paper exp. C)."""
    plt = _pyplot()
    fig, axes = plt.subplots(4, 1, figsize=(7.5, 10), sharex=True)
    controllers = [r.controller for r in runs]
    for run in runs:
        sc, c = run.scored, _COLOURS.get(run.controller)
        t, s = sc.t_s, sc.series
        axes[0].plot(t, s["activation_norm"], color=c, label=run.label)
        axes[1].plot(t, s["drift_joint_rad"], color=c)
        axes[2].plot(t, 100 * s["elbow_height_m"], color=c)
        axes[3].plot(t, 100 * s["hand_deviation_m"], color=c,
                     label=f"{run.label}: max {100 * run.metrics['hand_drift_m']:.2f} cm")
    if runs:
        ev = runs[0].scored.events
        axes[0].axvspan(ev["start_window_s"], ev["start_window_s"] + ev["window_s"], **_WINDOW,
                        label="||a|| start and end windows")
        axes[0].axvspan(ev["end_window_s"], ev["end_window_s"] + ev["window_s"], **_WINDOW)
    _targets(axes[3], targets, "nullspace", "hand_drift_m", controllers, 100, "max ")
    _zoom(axes[3])
    axes[0].set_ylabel("||a||")
    axes[1].set_ylabel(f"{joint_name} [rad]")
    axes[2].set_ylabel("elbow height [cm]")
    axes[3].set_ylabel("hand drift from its start [cm]")
    axes[3].set_xlabel("time [s] from the release (all scored)")
    axes[0].legend(fontsize=7)
    axes[3].legend(fontsize=7)
    start = _section(runs, "nullspace").get("start_pose")
    axes[0].set_title(f"C. Released from pose '{start}'" if start else "C. Released")
    return _save(fig, path)


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
