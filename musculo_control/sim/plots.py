"""Figures of the experiments, drawn like the paper's: signals against time, one line per run.

Labels come from the run itself (its parameters in ``run_info``, the robot's names), so the
figures describe whichever arm ran; nothing here assumes the paper's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from musculo_control.sim.experiments import RunResult

_COLOURS = {"osc": "tab:blue", "osc-no-nullspace": "tab:orange", "joint-stiffness": "tab:green",
            "muscle-stiffness": "tab:red"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _label(run: RunResult) -> str:
    return f"{run.controller} {run.variant}".strip()


def _section(runs: list[RunResult], experiment: str) -> dict:
    """The experiment's parameters of the first run (empty when unknown)."""
    if not runs:
        return {}
    params = runs[0].run_info.get("parameters", {}).get("experiments", {})
    return params.get(experiment) or {}


def _axis_words(axis) -> str:
    """'+z', '-y' for a base axis, else the rounded vector."""
    a = np.asarray(axis, dtype=float)
    a = a / max(float(np.linalg.norm(a)), 1e-12)
    i = int(np.argmax(np.abs(a)))
    if abs(abs(a[i]) - 1.0) < 1e-9:
        return f"{'+' if a[i] > 0 else '-'}{'xyz'[i]}"
    return str(np.round(a, 2).tolist())


def plot_disturbance(runs: list[RunResult], path: Path) -> Path:
    """Hand deviation, gauge force and elbow displacement against time (paper Fig. of exp. A)."""
    plt = _pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(7, 8), sharex=True)
    for run in runs:
        rec, c = run.recorder, _COLOURS.get(run.controller)
        t = rec.time_s
        hand = rec.array("hand_m")
        axes[0].plot(t, 100 * np.linalg.norm(hand - hand[0], axis=1), color=c, label=_label(run))
        axes[1].plot(t, rec.array("gauge_force_n")[:, 0], color=c)
        elbow = rec.array("elbow_m")
        axes[2].plot(t, 100 * np.linalg.norm(elbow - elbow[0], axis=1), color=c)
    axes[0].axhline(2.0, color="grey", ls=":", lw=1)
    axes[0].set_ylabel("hand deviation [cm]")
    axes[1].set_ylabel("gauge force [N]")
    axes[2].set_ylabel("elbow displacement [cm]")
    axes[2].set_xlabel("time [s]")
    axes[0].legend(fontsize=8)
    cfg = _section(runs, "disturbance")
    push = (f" {100 * cfg['displacement_m']:.0f} cm along {_axis_words(cfg['axis'])}"
            if "displacement_m" in cfg and "axis" in cfg else "")
    axes[0].set_title(f"A. Compliant disturbance: a gauge pushes the elbow{push}")
    return _save(fig, path)


def plot_trajectory(runs: list[RunResult], path: Path) -> Path:
    """Hand path against the goal and the tracking error, per start pose."""
    plt = _pyplot()
    fig, axes = plt.subplots(2, 1, figsize=(7, 7))
    # the plane of the picture: the two base axes along which the hand moved most
    spans = np.zeros(3)
    for run in runs:
        hand = run.recorder.array("hand_m")
        spans = np.maximum(spans, hand.max(axis=0) - hand.min(axis=0))
    u, v = sorted(np.argsort(spans)[-2:])
    for i, run in enumerate(runs):
        rec = run.recorder
        t = rec.time_s
        hand, goal = rec.array("hand_m"), rec.array("hand_goal_m")
        colour = f"C{i}"
        axes[0].plot(100 * hand[:, u], 100 * hand[:, v], color=colour, label=_label(run))
        axes[1].plot(t, 100 * rec.array("hand_error_m")[:, 0], color=colour,
                     label=f"{_label(run)}: mean "
                           f"{100 * run.metrics['mean_tracking_error_m']:.2f} cm")
    if runs:
        goal = runs[0].recorder.array("hand_goal_m")
        axes[0].plot(100 * goal[:, u], 100 * goal[:, v], "k--", lw=1, label="goal")
    axes[0].set_xlabel(f"hand {'xyz'[u]} [cm]")
    axes[0].set_ylabel(f"hand {'xyz'[v]} [cm]")
    axes[0].set_aspect("equal", adjustable="datalim")
    axes[0].legend(fontsize=8)
    axes[0].set_title("B. Point-to-point trajectory (orientation feedback off)")
    axes[1].set_xlabel("time [s]")
    axes[1].set_ylabel("tracking error [cm]")
    axes[1].legend(fontsize=8)
    return _save(fig, path)


def plot_nullspace(runs: list[RunResult], path: Path, joint_index: int,
                   joint_name: str, up: np.ndarray | None = None) -> Path:
    """||a||, the drifting joint, elbow height (along ``up``, against gravity; default base z)
    and hand drift against time (paper exp. C)."""
    up = np.array([0.0, 0.0, 1.0]) if up is None else np.asarray(up, dtype=float)
    plt = _pyplot()
    fig, axes = plt.subplots(4, 1, figsize=(7, 9), sharex=True)
    for run in runs:
        rec, c = run.recorder, _COLOURS.get(run.controller)
        t = rec.time_s
        axes[0].plot(t, rec.array("activation_norm")[:, 0], color=c, label=_label(run))
        axes[1].plot(t, rec.array("q_rad")[:, joint_index], color=c)
        axes[2].plot(t, 100 * (rec.array("elbow_m") @ up), color=c)
        hand = rec.array("hand_m")
        axes[3].plot(t, 100 * np.linalg.norm(hand - hand[0], axis=1), color=c)
    axes[0].set_ylabel("||a||")
    axes[1].set_ylabel(f"{joint_name} [rad]")
    axes[2].set_ylabel("elbow height [cm]")
    axes[3].set_ylabel("hand drift [cm]")
    axes[3].set_xlabel("time [s]")
    axes[0].legend(fontsize=8)
    start = _section(runs, "nullspace").get("start_pose")
    axes[0].set_title(f"C. Released from pose '{start}'" if start else "C. Released")
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
