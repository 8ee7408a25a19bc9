"""Sampled signals of a run, saved with the run's parameters and initial state.

Every run writes (SimSect's rule: one parameter set in, parameters + initial state + signals out):

- ``run.yaml``: parameters, initial state, what the seeds drew, provenance and metrics;
- ``signals.csv``: one row per sample, one column per signal component (``q.shoulder_p`` ...);

and the experiments add the same samples as a ROS 2 bag (:mod:`musculo_control.sim.rosbag_log`).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

FloatArray = npt.NDArray[np.float64]


class Recorder:
    """Accumulates samples of named vector signals with fixed component labels.

    The samples go into one growing (samples, components) buffer, a row per sample: a run
    records tens of signals at the control rate, and one copy per signal and sample into a row
    costs a fraction of keeping each as its own array.
    """

    def __init__(self, signals: dict[str, tuple[str, ...]]) -> None:
        self.labels = {name: tuple(labels) for name, labels in signals.items()}
        self._time: list[float] = []
        self._slices: dict[str, tuple[int, int]] = {}  # name -> its columns [start, stop)
        width = 0
        for name, labels in self.labels.items():
            self._slices[name] = (width, width + len(labels))
            width += len(labels)
        self._rows = np.empty((256, width))

    def add(self, t_s: float, values: dict[str, Any]) -> None:
        """One sample; ``values`` must hold every signal, each with its declared length."""
        n = len(self._time)
        if n == len(self._rows):
            self._rows = np.concatenate([self._rows, np.empty_like(self._rows)])
        row = self._rows[n]
        for name, (start, stop) in self._slices.items():
            value = values[name]
            # (an array's own shape: np.asarray per signal and sample cost a third of the run's
            # recording)
            shape = value.shape if type(value) is np.ndarray else np.shape(value)
            if not (shape == (stop - start,) or (shape == () and stop - start == 1)):
                raise ValueError(f"signal '{name}': expected {stop - start} values, got "
                                 f"{np.atleast_1d(np.asarray(value)).shape}")
            row[start:stop] = value
        self._time.append(float(t_s))

    def __len__(self) -> int:
        return len(self._time)

    @property
    def time_s(self) -> FloatArray:
        return np.array(self._time)

    def array(self, name: str) -> FloatArray:
        """(samples, components) array of one signal."""
        start, stop = self._slices[name]
        return self._rows[:len(self._time), start:stop].copy()

    def save(self, out_dir: Path, run_info: dict[str, Any]) -> list[Path]:
        """Write run.yaml and signals.csv into ``out_dir``; returns the paths."""
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = [out_dir / "run.yaml", out_dir / "signals.csv"]
        paths[0].write_text(yaml.safe_dump(_plain(run_info), sort_keys=False,
                                                default_flow_style=None))
        self._write_csv(paths[1])
        return paths

    def _write_csv(self, path: Path) -> None:
        header = ["t_s"] + [f"{n}.{lab}" for n, labs in self.labels.items() for lab in labs]
        arrays = [self.array(n) for n in self.labels]
        with open(path, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(header)
            for i, t in enumerate(self._time):
                row = [f"{t:.6f}"]
                for arr in arrays:
                    row.extend(f"{v:.9g}" for v in arr[i])
                writer.writerow(row)


def _plain(obj: Any) -> Any:
    """numpy and tuples -> plain YAML-safe Python."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, (np.floating, np.integer, np.bool_)):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    return obj
