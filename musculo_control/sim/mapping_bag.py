"""A mapping recording from rosbag2 bags of the node graph (``ros2 bag record -s mcap
/joint_states /muscle_states``), read with ``rosbags`` (no ROS installation needed).

Each ``muscle_states`` message (encoder lengths in ``position``, tensions in ``effort``) is
paired with the ``joint_states`` message whose header stamp is nearest, if within
``max_skew_s``; pairs are thinned to ``sample_rate_hz``. Names are matched to the robot's
order by the messages' own ``name`` fields. Each bag is one encoder session (the encoders may
have been re-zeroed between bags; the fit estimates their offsets). Stamps must rise within a
bag: a reordered stream is an error naming the bag and topic, not something to sort away.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.errors import InputError
from musculo_control.model.mapping_recording import Recording

FloatArray = npt.NDArray[np.float64]

JOINT_TOPIC = "/joint_states"
MUSCLE_TOPIC = "/muscle_states"


def _read_topic(bag: Path, topic: str, names: tuple[str, ...],
                fields: tuple[str, ...]) -> tuple[FloatArray, dict[str, FloatArray]]:
    """(header stamps (K,) [s], {field: (K, len(names))}) of one JointState topic, reordered
    to ``names``."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    where = f"bag {bag}: {topic}"
    stamps: list[float] = []
    values: dict[str, list[FloatArray]] = {f: [] for f in fields}
    try:
        reader = AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_HUMBLE))
    except Exception as exc:  # rosbags raises its own error types for unreadable bags
        raise InputError(f"bag {bag}", "a rosbag2 folder (metadata.yaml and .mcap or .db3)",
                         f"{type(exc).__name__}: {exc}") from None
    with reader:
        conns = [c for c in reader.connections if c.topic == topic]
        if not conns:
            raise InputError(f"bag {bag}", f"a topic {topic} (sensor_msgs/msg/JointState)",
                             sorted({c.topic for c in reader.connections}))
        order: npt.NDArray[np.int64] | None = None
        for conn, _, raw in reader.messages(connections=conns):
            msg: Any = reader.deserialize(raw, conn.msgtype)
            got = tuple(msg.name)
            if order is None or len(got) != len(names):
                if sorted(got) != sorted(names):
                    raise InputError(f"{where}: name", f"the robot's names {list(names)}",
                                     list(got))
                order = np.array([got.index(n) for n in names])
            stamps.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
            for f in fields:
                row = np.asarray(getattr(msg, f), dtype=float)
                if row.shape != (len(names),):
                    raise InputError(f"{where}: {f}", f"{len(names)} values per message",
                                     row.shape)
                values[f].append(row[order])
    t = np.array(stamps)
    back = np.flatnonzero(np.diff(t) <= 0.0)
    if back.size:
        raise InputError(f"{where}: header.stamp", "stamps that rise from message to message",
                         f"{t[back[0] + 1]:.6f} s after {t[back[0]]:.6f} s (message "
                         f"{int(back[0]) + 1}; {back.size} such step(s))")
    return t, {f: np.array(v).reshape(len(t), len(names)) for f, v in values.items()}


def recording_from_bags(bags: list[Path], joint_names: tuple[str, ...],
                        muscle_names: tuple[str, ...], *, sample_rate_hz: float,
                        max_skew_s: float, config_dir: str = "") -> Recording:
    """One recording of the bags' paired joint and muscle states (see the module docstring)."""
    if not bags:
        raise InputError("bags", "at least one rosbag2 folder", "none")
    rows: dict[str, list[FloatArray]] = {k: [] for k in
                                         ("stamp", "q", "lstamp", "length", "tension", "session")}
    for session, bag in enumerate(bags):
        bag = Path(bag)
        tq, joints = _read_topic(bag, JOINT_TOPIC, joint_names, ("position",))
        tl, muscles = _read_topic(bag, MUSCLE_TOPIC, muscle_names, ("position", "effort"))
        k = np.clip(np.searchsorted(tq, tl), 1, len(tq) - 1) if len(tq) > 1 else \
            np.zeros(len(tl), dtype=np.int64)
        if len(tq) > 1:
            k = np.where(np.abs(tq[k - 1] - tl) <= np.abs(tq[k] - tl), k - 1, k)
        paired = np.abs(tq[k] - tl) <= max_skew_s
        keep, last = [], -np.inf
        for i in np.flatnonzero(paired):
            if tl[i] - last >= 1.0 / sample_rate_hz - 1e-9:
                keep.append(i)
                last = tl[i]
        if not keep:
            raise InputError(f"bag {bag}", f"{MUSCLE_TOPIC} messages with a {JOINT_TOPIC} "
                                           f"message within {max_skew_s} s",
                             f"none of {len(tl)}")
        idx = np.array(keep)
        rows["stamp"].append(tq[k[idx]])
        rows["q"].append(joints["position"][k[idx]])
        rows["lstamp"].append(tl[idx])
        rows["length"].append(muscles["position"][idx])
        rows["tension"].append(muscles["effort"][idx])
        rows["session"].append(np.full(len(idx), session, dtype=np.int64))
    rec = Recording(
        stamp_s=np.concatenate(rows["stamp"]), q_rad=np.vstack(rows["q"]),
        length_stamp_s=np.concatenate(rows["lstamp"]), length_m=np.vstack(rows["length"]),
        tension_n=np.vstack(rows["tension"]),
        session=np.concatenate(rows["session"]).astype(np.int64),
        joint_names=tuple(joint_names), muscle_names=tuple(muscle_names),
        config_dir=config_dir, source="rosbag2 " + ", ".join(str(b) for b in bags),
        meta={"bags": [str(b) for b in bags], "sample_rate_hz": sample_rate_hz,
              "max_skew_s": max_skew_s},
        path=", ".join(str(b) for b in bags))
    rec.check()
    return rec
