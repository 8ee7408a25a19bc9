"""Sampled signals of a run, saved with the run's parameters and initial state.

Every run writes (SimSect's rule: one parameter set in, parameters + initial state + signals out):

- ``run.yaml``: parameters, initial state and metrics;
- ``signals.csv``: one row per sample, one column per signal component (``q.shoulder_p`` ...);
- ``signals.mcap``: the same samples as JSON messages, one topic per signal, readable by
  Foxglove Studio, PlotJuggler's MCAP plugin or ``mcap`` tools.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

FloatArray = npt.NDArray[np.float64]


class Recorder:
    """Accumulates samples of named vector signals with fixed component labels."""

    def __init__(self, signals: dict[str, tuple[str, ...]]) -> None:
        self.labels = {name: tuple(labels) for name, labels in signals.items()}
        self._time: list[float] = []
        self._data: dict[str, list[FloatArray]] = {name: [] for name in signals}

    def add(self, t_s: float, values: dict[str, Any]) -> None:
        """One sample; ``values`` must hold every signal, each with its declared length."""
        self._time.append(float(t_s))
        for name, labels in self.labels.items():
            arr = np.atleast_1d(np.asarray(values[name], dtype=float))
            if arr.shape != (len(labels),):
                raise ValueError(f"signal '{name}': expected {len(labels)} values, got {arr.shape}")
            self._data[name].append(arr.copy())

    def __len__(self) -> int:
        return len(self._time)

    @property
    def time_s(self) -> FloatArray:
        return np.array(self._time)

    def array(self, name: str) -> FloatArray:
        """(samples, components) array of one signal."""
        rows = self._data[name]
        return np.array(rows) if rows else np.zeros((0, len(self.labels[name])))

    def save(self, out_dir: Path, run_info: dict[str, Any]) -> list[Path]:
        """Write run.yaml, signals.csv and signals.mcap into ``out_dir``; returns the paths."""
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = [out_dir / "run.yaml", out_dir / "signals.csv", out_dir / "signals.mcap"]
        paths[0].write_text(yaml.safe_dump(_plain(run_info), sort_keys=False))
        self._write_csv(paths[1])
        self._write_mcap(paths[2])
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

    def _write_mcap(self, path: Path) -> None:
        from mcap.writer import CompressionType, Writer

        with open(path, "wb") as fh:
            writer = Writer(fh, compression=CompressionType.NONE)
            writer.start(profile="", library="musculo_control")
            channels = {}
            for name, labels in self.labels.items():
                schema = {"type": "object", "properties": {
                    "t_s": {"type": "number"},
                    **{lab: {"type": "number"} for lab in labels}}}
                sid = writer.register_schema(name=name, encoding="jsonschema",
                                             data=json.dumps(schema).encode())
                channels[name] = writer.register_channel(topic=f"/{name}",
                                                         message_encoding="json", schema_id=sid)
            for i, t in enumerate(self._time):
                stamp = int(round(t * 1e9))
                for name, labels in self.labels.items():
                    values = self._data[name][i]
                    msg = {"t_s": t, **{lab: _num(v) for lab, v in zip(labels, values)}}
                    writer.add_message(channels[name], log_time=stamp, publish_time=stamp,
                                       data=json.dumps(msg).encode(), sequence=i)
            writer.finish()


def _num(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None


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
