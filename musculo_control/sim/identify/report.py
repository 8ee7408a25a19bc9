"""How well a mock predicts a recording it was not fitted on: the error over horizons.

From windows of the longest horizon started every ``stride_s`` in the held-out recordings, each
mock predicts from the recorded state driven by the recorded commands (:mod:`.windows`); at each
horizon ``h`` the error is the root mean square, over the windows and the joints (muscles), of
the predicted minus the recorded joint angles (tensions) at the sample ``h`` after the window's
start.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.sim.identify.recording import Recording
from musculo_control.sim.identify.windows import Window, make_windows, predict
from musculo_control.sim.mock_arm import MockArm

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class HorizonErrors:
    """RMS prediction errors of one mock at each horizon."""

    horizons_s: tuple[float, ...]
    joint_angle_rad: tuple[float, ...]
    tension_n: tuple[float, ...]
    windows: int

    def as_dict(self) -> dict[str, object]:
        return {"horizons_s": list(self.horizons_s), "joint_angle_rad": list(self.joint_angle_rad),
                "tension_n": list(self.tension_n), "windows": self.windows}


def horizon_windows(recordings: Sequence[Recording], horizons_s: Sequence[float],
                    stride_s: float, skip_start_s: float, lost_periods: float) -> list[Window]:
    """Windows as long as the longest horizon, every ``stride_s`` (none over a lost command,
    :func:`~musculo_control.sim.identify.windows.commands_complete`)."""
    return make_windows(recordings, max(horizons_s), stride_s, skip_start_s,
                        lost_periods=lost_periods)


def horizon_errors(mock: MockArm, recordings: Sequence[Recording], windows: Sequence[Window],
                   horizons_s: Sequence[float], *, delay_s: float,
                   rate_half_width_s: float) -> HorizonErrors:
    """The errors of ``mock`` (module docstring)."""
    got = predict(mock, recordings, windows, delay_s=delay_s, rate_half_width_s=rate_half_width_s)
    q_err: dict[float, list[FloatArray]] = {h: [] for h in horizons_s}
    f_err: dict[float, list[FloatArray]] = {h: [] for h in horizons_s}
    for win, (q, f) in zip(windows, got):
        rec = recordings[win.rec]
        t = rec.t_s[win.start + 1:win.stop] - rec.t_s[win.start]
        for h in horizons_s:
            i = int(np.argmin(np.abs(t - h)))
            q_err[h].append(q[i] - rec.q_rad[win.start + 1 + i])
            f_err[h].append(f[i] - rec.tension_n[win.start + 1 + i])

    def rms(values: list[FloatArray]) -> float:
        return float(np.sqrt(np.mean(np.square(values)))) if values else float("nan")

    return HorizonErrors(tuple(horizons_s), tuple(rms(q_err[h]) for h in horizons_s),
                         tuple(rms(f_err[h]) for h in horizons_s), len(windows))


def plot_horizons(errors: Mapping[str, HorizonErrors], path: Path) -> Path:
    """Joint-angle and tension errors against the horizon, one line per mock; a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for label, e in errors.items():
        axes[0].plot(e.horizons_s, np.degrees(e.joint_angle_rad), marker="o", label=label)
        axes[1].plot(e.horizons_s, e.tension_n, marker="o", label=label)
    axes[0].set_ylabel("joint angle error, RMS [deg]")
    axes[1].set_ylabel("tension error, RMS [N]")
    for ax in axes:
        ax.set_xlabel("prediction horizon [s]")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("held-out recording: the mock predicting from the recorded state and commands")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def angle_ratios(errors: Mapping[str, HorizonErrors]) -> list[float]:
    """At each horizon, how many times the second mock's joint-angle error is smaller than
    the first's (inf where the second's is 0)."""
    a, b = (e.joint_angle_rad for e in errors.values())
    return [x / y if y > 0 else float("inf") for x, y in zip(a, b)]


def table(errors: Mapping[str, HorizonErrors]) -> str:
    """The errors side by side, as text: a header row of the mocks, one of the units, then
    one row per horizon; with two mocks, how many times the second's angle error is smaller."""
    first = next(iter(errors.values()))
    pair = len(errors) == 2
    head = [f"{'':<12}"] + [f"{label:^26}" for label in errors] + (["  angle"] if pair else [])
    unit = [f"{'horizon [s]':<12}"] + [f"{'angle [deg]':>13}{'tension [N]':>13}"
                                       for _ in errors] + (["  ratio"] if pair else [])
    lines = ["".join(head).rstrip(), "".join(unit)]
    ratios = angle_ratios(errors) if pair else []
    for i, h in enumerate(first.horizons_s):
        row = [f"{h:<12.2f}"] + [f"{np.degrees(e.joint_angle_rad[i]):>13.3f}"
                                 f"{e.tension_n[i]:>13.2f}" for e in errors.values()]
        if pair:
            row.append(f"{ratios[i]:>6.2f}x" if math.isfinite(ratios[i]) else "      -")
        lines.append("".join(row))
    return "\n".join(lines)


@dataclass(frozen=True)
class MetricsComparison:
    """One held-out bag's experiment: its metrics as recorded and as each mock's run of the
    same experiment, controller and start pose gives them (``runs``: label -> metrics)."""

    bag: str
    experiment: str
    controller: str
    start_pose: str
    runs: Mapping[str, Mapping[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"bag": self.bag, "experiment": self.experiment, "controller": self.controller,
                "start_pose": self.start_pose, **{k: dict(v) for k, v in self.runs.items()}}

    def table(self) -> str:
        """The numeric metrics, one row each, the runs side by side."""
        first = next(iter(self.runs.values()))
        keys = [k for k, v in first.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)]
        width = max([len(k) for k in keys] + [6]) + 2
        lines = [f"{'metric':<{width}}" + "".join(f"{label:>18}" for label in self.runs)]
        for k in keys:
            lines.append(f"{k:<{width}}" + "".join(
                f"{_number(run.get(k)):>18}" for run in self.runs.values()))
        return "\n".join(lines)


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)
