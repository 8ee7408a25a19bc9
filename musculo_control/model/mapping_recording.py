"""A recording for learning the joint-muscle mapping: joint angles and muscle lengths over time.

What the robot's own sensors said while it moved through its joint range (the joint states and
muscle states of the node graph, paired by stamp), from which
:mod:`musculo_control.model.mapping_fit` learns l(q). One file, NumPy's ``.npz`` (a zip of
``.npy`` arrays, readable with ``numpy.load`` and nothing else), format
``musculo_mapping_recording_v1``:

============== ============ ==============================================================
array          shape        meaning
============== ============ ==============================================================
stamp_s        (N,)         stamp of the joint state (potentiometers) [s]
q_rad          (N, n)       joint angles from the potentiometers, robot order [rad]
length_stamp_s (N,)         stamp of the muscle state paired with it [s]
length_m       (N, m)       muscle lengths from the winch encoders, muscles-file order [m];
                            each session's encoders have an unknown offset per muscle
tension_n      (N, m)       load-cell tensions [N]
session        (N,)         encoder session (int): samples of one session share their
                            encoder offsets (the encoders were not re-zeroed in between)
truth_q_rad    (N, n)       optional, a simulated arm's true joint angles (for the accuracy
                            check against the simulator only; the fit never reads them)
meta           ()           JSON text: ``format``, ``config_dir`` (the robot's config folder),
                            ``joint_names``, ``muscle_names``, ``source`` (how it was
                            recorded), ``record`` (the settings), ``provenance``
============== ============ ==============================================================

Stamps rise strictly within a session. :func:`save_recording` writes atomically (a temporary
file in the same folder, then a rename), so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.errors import InputError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

FORMAT = "musculo_mapping_recording_v1"
ARRAYS = ("stamp_s", "q_rad", "length_stamp_s", "length_m", "tension_n", "session")


@dataclass
class Recording:
    """The arrays of a recording file (see the module docstring) and its metadata."""

    stamp_s: FloatArray  # (N,) [s]
    q_rad: FloatArray  # (N, n) [rad]
    length_stamp_s: FloatArray  # (N,) [s]
    length_m: FloatArray  # (N, m) [m], per-session encoder offsets unknown
    tension_n: FloatArray  # (N, m) [N]
    session: IntArray  # (N,)
    joint_names: tuple[str, ...]
    muscle_names: tuple[str, ...]
    config_dir: str = ""
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)  # anything else (settings, provenance)
    path: str = "<recording>"  # where it was read from, for messages
    truth_q_rad: FloatArray | None = None  # (N, n) a simulator's true angles; evaluation only

    @property
    def n_samples(self) -> int:
        return int(self.stamp_s.shape[0])

    def check(self) -> None:
        """Shapes, finite values, stamp order: :class:`InputError` naming the recording, the
        signal and what was expected."""
        where = f"recording {self.path}"
        n, m = len(self.joint_names), len(self.muscle_names)
        count = self.n_samples
        shapes = {"stamp_s": (count,), "q_rad": (count, n), "length_stamp_s": (count,),
                  "length_m": (count, m), "tension_n": (count, m), "session": (count,)}
        for name, shape in shapes.items():
            got = np.shape(getattr(self, name))
            if got != shape:
                raise InputError(f"{where}: {name}", f"shape {shape} ({n} joints "
                                 f"{list(self.joint_names)}, {m} muscles)", got)
        for name in ("stamp_s", "q_rad", "length_stamp_s", "length_m", "tension_n"):
            values = np.asarray(getattr(self, name), dtype=float)
            bad = ~np.isfinite(values)
            if bad.any():
                rows = np.flatnonzero(bad.reshape(count, -1).any(axis=1))
                cols = np.flatnonzero(bad.reshape(count, -1).any(axis=0))
                labels = {"q_rad": self.joint_names, "length_m": self.muscle_names,
                          "tension_n": self.muscle_names}.get(name)
                which = f" of {[labels[c] for c in cols]}" if labels is not None else ""
                raise InputError(f"{where}: {name}{which}",
                                 "finite values in every sample",
                                 f"{len(rows)} non-finite sample(s), the first at index "
                                 f"{int(rows[0])} (stamp {float(self.stamp_s[rows[0]]):.6f} s)")
        for s in np.unique(self.session):
            idx = np.flatnonzero(self.session == s)
            for name in ("stamp_s", "length_stamp_s"):
                stamps = np.asarray(getattr(self, name))[idx]
                back = np.flatnonzero(np.diff(stamps) <= 0.0)
                if back.size:
                    k = int(idx[back[0] + 1])
                    raise InputError(f"{where}: {name} (session {int(s)})",
                                     "stamps that rise from sample to sample",
                                     f"{float(stamps[back[0] + 1]):.6f} s at index {k} after "
                                     f"{float(stamps[back[0]]):.6f} s "
                                     f"({back.size} such step(s))")


def save_recording(recording: Recording, path: Path) -> Path:
    """Write ``recording`` to ``path`` (``.npz``), atomically; returns the path written."""
    path = Path(path)
    recording.check()
    meta = {**recording.meta, "format": FORMAT, "config_dir": recording.config_dir,
            "joint_names": list(recording.joint_names),
            "muscle_names": list(recording.muscle_names), "source": recording.source}
    arrays = {name: np.asarray(getattr(recording, name)) for name in ARRAYS}
    if recording.truth_q_rad is not None:
        arrays["truth_q_rad"] = np.asarray(recording.truth_q_rad)
    write_npz_atomic(path, arrays, meta)
    return path


def write_npz_atomic(path: Path, arrays: dict[str, Any], meta: dict[str, Any]) -> None:
    """``numpy.savez_compressed`` of ``arrays`` plus ``meta`` as JSON text, written to a
    temporary file beside ``path`` and renamed onto it (never half a file at ``path``)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez_compressed(out, meta=np.array(json.dumps(meta, default=_jsonable)),
                                **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def read_npz(path: Path, expected_format: str | tuple[str, ...],
             what: str) -> tuple[dict[str, Any], dict[str, FloatArray]]:
    """(meta, arrays) of an ``.npz`` written by :func:`write_npz_atomic`; :class:`InputError`
    naming the file when it is not of ``expected_format`` (or one of several)."""
    accepted = (expected_format,) if isinstance(expected_format, str) else expected_format
    expected_format = " or ".join(accepted)
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: np.array(data[k]) for k in data.files}
    except FileNotFoundError:
        raise InputError(f"{what} {path}", "an existing file", "no such file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"{what} {path}", f"a {expected_format} .npz file",
                         f"unreadable ({exc})") from None
    if "meta" not in arrays:
        raise InputError(f"{what} {path}", f"a {expected_format} file with a 'meta' entry",
                         f"arrays {sorted(arrays)}")
    try:
        meta = json.loads(str(arrays.pop("meta")))
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} {path}: meta", "JSON text", str(exc)) from None
    if not isinstance(meta, dict) or meta.get("format") not in accepted:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise InputError(f"{what} {path}: meta.format", expected_format, got)
    return meta, arrays


def load_recording(path: Path) -> Recording:
    """Read and check a recording file (see the module docstring)."""
    meta, arrays = read_npz(path, FORMAT, "recording")
    missing = [a for a in ARRAYS if a not in arrays]
    if missing:
        raise InputError(f"recording {path}", f"the arrays {list(ARRAYS)}",
                         f"missing {missing}")
    for key in ("joint_names", "muscle_names"):
        names = meta.get(key)
        if not isinstance(names, list) or not names or not all(isinstance(x, str) for x in names):
            raise InputError(f"recording {path}: meta.{key}", "a list of names", names)
    rest = {k: v for k, v in meta.items()
            if k not in ("format", "config_dir", "joint_names", "muscle_names", "source")}
    rec = Recording(
        stamp_s=arrays["stamp_s"].astype(float), q_rad=arrays["q_rad"].astype(float),
        length_stamp_s=arrays["length_stamp_s"].astype(float),
        length_m=arrays["length_m"].astype(float), tension_n=arrays["tension_n"].astype(float),
        session=arrays["session"].astype(np.int64),
        joint_names=tuple(meta["joint_names"]), muscle_names=tuple(meta["muscle_names"]),
        config_dir=str(meta.get("config_dir", "")), source=str(meta.get("source", "")),
        meta=rest, path=str(path),
        truth_q_rad=arrays["truth_q_rad"].astype(float) if "truth_q_rad" in arrays else None)
    rec.check()
    return rec
