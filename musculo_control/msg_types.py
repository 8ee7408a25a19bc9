"""The project's own message types (the ``musculo_control_msgs`` interface package), ROS-free.

``controller/state``, ``controller/timing`` and ``dynamics`` carry messages whose fields have
names, so ``ros2 topic echo``, PlotJuggler and Foxglove show ``hand_error_m``, not ``data[14]``.
Each type mirrors a :class:`~musculo_control.records.RecordLayout` field by field (same names,
same order); this module holds its definition (the ``.msg`` text, written out under
``msgs/musculo_control_msgs/msg`` and checked equal by the tests) and the one conversion between
a record's values and a message, whichever factory built it (rclpy's classes in the nodes,
rosbags' in the bags the runner writes).

A record field ``stamp`` of shape (2,) (seconds, nanoseconds) is the message's
``header.stamp``; matrices are row-major ``float64[]``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.errors import InputError
from musculo_control.records import RecordLayout
from musculo_control.stamps import NS_PER_S

FloatArray = npt.NDArray[np.float64]

PACKAGE = "musculo_control_msgs"
#: the ROS types a record field may take, and how a value becomes one
_CASTS = {"bool": bool, "uint8": int, "uint32": int, "float64": float}


@dataclass(frozen=True)
class MsgField:
    """One field of a message type: its name, ROS type and what it is."""

    name: str
    ros_type: str  # bool, uint8, uint32, float64, float64[N] or float64[]
    doc: str


@dataclass(frozen=True)
class MsgType:
    """A message type of ``musculo_control_msgs`` (a ``std_msgs/Header`` first, then
    ``fields``; ``constants`` are ``uint8`` names)."""

    name: str
    doc: str
    fields: tuple[MsgField, ...]
    constants: tuple[tuple[str, int, str], ...] = ()

    @property
    def type_name(self) -> str:
        """Its full ROS name, ``musculo_control_msgs/msg/<name>``."""
        return f"{PACKAGE}/msg/{self.name}"

    def text(self) -> str:
        """Its ``.msg`` definition."""
        lines = [f"# {line}" if line else "#" for line in self.doc.splitlines()]
        for name, value, doc in self.constants:
            lines.append(f"uint8 {name}={value}  # {doc}")
        lines.append("std_msgs/Header header  # the stamp of the instant it describes")
        lines += [f"{f.ros_type} {f.name}  # {f.doc}" for f in self.fields]
        return "\n".join(lines) + "\n"

    def check(self, layout: RecordLayout) -> None:
        """Raise :class:`InputError` unless the type mirrors ``layout`` field by field (a
        ``stamp`` field is the header's)."""
        record = [f.name for f in layout.fields if f.name != "stamp"]
        mine = [f.name for f in self.fields]
        if record != mine:
            raise InputError(f"message type {self.type_name}",
                             f"the fields of record '{layout.schema}' {record}", mine)


CONTROLLER_STATE = MsgType(
    "ControllerState",
    "One tick of the muscle-activation controller (topic controller/state, at the control\n"
    "rate). The per-muscle activations go out with their names on controller/activations.",
    (
        MsgField("ok", "bool", "the tick sent the controller's tensions (false: a stop's)"),
        MsgField("supervisor_state", "uint8", "RUNNING, FAULT, HOLDING or LATCHED"),
        MsgField("safety_level", "uint8", "the safety report's level: 0 OK, 1 WARN, 2 ERROR"),
        MsgField("iterations", "uint32", "QP solver iterations"),
        MsgField("solve_time_s", "float64", "QP solve time [s]"),
        MsgField("compute_time_s", "float64", "the whole controller tick [s]"),
        MsgField("snapshot_age_s", "float64", "age of the dynamics snapshot used [s]"),
        MsgField("joint_age_s", "float64", "age of the newest joint sample at the tick [s]"),
        MsgField("objective", "float64", "QP cost (paper eq. 9-11, 16)"),
        MsgField("activation_norm", "float64", "||a|| (SPEC section 8 C)"),
        MsgField("tick_period_s", "float64", "time since the previous tick started [s]"),
        MsgField("hand_position_m", "float64[3]", "hand position in the base frame [m]"),
        MsgField("hand_error_m", "float64[3]", "x_des - x [m]"),
        MsgField("tau_null_nm", "float64[]", "nullspace torque per joint [N m] (paper eq. 11)"),
        MsgField("torque_residual_nm", "float64[]",
                 "what the tensions miss of the torque balance, per joint [N m]"),
        MsgField("tau_ref_nm", "float64[]", "reference joint torque [N m] (SPEC section 4)"),
    ),
    (("RUNNING", 0, "the controller's command goes out"),
     ("FAULT", 1, "a fault stands: its stop goes out"),
     ("HOLDING", 2, "no fault for less than recovery_hold_s: the stop goes on"),
     ("LATCHED", 3, "a latched fault waits for controller/acknowledge")),
)

CONTROLLER_TIMING = MsgType(
    "ControllerTiming",
    "The controller's tick timing over one report period (topic controller/timing).",
    (
        MsgField("ticks", "uint32", "ticks in the window"),
        MsgField("period_mean_s", "float64", "mean tick period [s]"),
        MsgField("period_p50_s", "float64", "median tick period [s]"),
        MsgField("period_p99_s", "float64", "99th percentile of the tick period [s]"),
        MsgField("period_max_s", "float64", "longest tick period [s]"),
        MsgField("jitter_p99_s", "float64", "99th percentile of |period - nominal| [s]"),
        MsgField("jitter_max_s", "float64", "largest |period - nominal| [s]"),
        MsgField("compute_p50_s", "float64", "median compute time of a tick [s]"),
        MsgField("compute_p99_s", "float64", "99th percentile of a tick's compute time [s]"),
        MsgField("compute_max_s", "float64", "longest compute time of a tick [s]"),
        MsgField("overruns", "uint32", "periods longer than the overrun factor x nominal"),
        MsgField("gc_collections", "uint32", "garbage collections in the window"),
        MsgField("gc_pause_max_s", "float64", "longest garbage-collection pause [s]"),
    ),
)

DYNAMICS_SNAPSHOT = MsgType(
    "DynamicsSnapshot",
    "The arm's dynamics at one joint sample (topic dynamics, at the dynamics rate): n joints,\n"
    "k task rows, m muscles; matrices row-major.",
    (
        MsgField("q_rad", "float64[]", "joint angles (n) [rad]"),
        MsgField("qd_rad_s", "float64[]", "joint velocities (n) [rad/s]"),
        MsgField("mass_matrix", "float64[]", "M(q) (n x n) [kg m^2]"),
        MsgField("gravity_torque_nm", "float64[]", "g(q) (n) [N m]"),
        MsgField("coriolis_torque_nm", "float64[]", "C(q, qd) qd (n) [N m]"),
        MsgField("hand_position_m", "float64[3]", "hand position [m]"),
        MsgField("hand_rotation", "float64[9]", "hand rotation matrix (3 x 3)"),
        MsgField("hand_jacobian", "float64[]", "hand Jacobian, linear then angular (6 x n)"),
        MsgField("task_jacobian", "float64[]", "task Jacobian J (k x n) (SPEC section 4)"),
        MsgField("task_inertia", "float64[]", "Lambda = (J M^-1 J^T)^-1 (k x k)"),
        MsgField("dyn_consistent_inverse", "float64[]", "Jbar = M^-1 J^T Lambda (n x k)"),
        MsgField("nullspace_projector", "float64[]", "N = I - J^T Jbar^T (n x n)"),
        MsgField("muscle_length_m", "float64[]", "muscle lengths l(q) (m) [m]"),
        MsgField("muscle_jacobian", "float64[]", "muscle Jacobian Jm = dl/dq (m x n)"),
        MsgField("min_task_eigenvalue", "float64", "smallest eigenvalue of J M^-1 J^T"),
        MsgField("damped", "bool", "Lambda was computed with damping near a singularity"),
    ),
)

#: Every type of the interface package, by name.
TYPES: dict[str, MsgType] = {t.name: t for t in (CONTROLLER_STATE, CONTROLLER_TIMING,
                                                   DYNAMICS_SNAPSHOT)}


def write_definitions(folder: str | Path) -> list[Path]:
    """Write every type's ``.msg`` file into ``folder`` (the interface package's ``msg/``)."""
    out = []
    for t in TYPES.values():
        path = Path(folder) / f"{t.name}.msg"
        path.write_text(t.text())
        out.append(path)
    return out


@functools.lru_cache(maxsize=1)
def bag_typestore() -> Any:
    """rosbags' typestore of the ROS 2 Humble types and this package's (registered from the
    definitions above): what the bags are written and read with. Built once."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    for t in TYPES.values():
        store.register(get_types_from_msg(t.text(), t.type_name))
    return store


def _stamp_values(stamp: npt.ArrayLike) -> tuple[int, int]:
    sec, nsec = (float(v) for v in np.asarray(stamp, dtype=float).reshape(2))
    return int(sec), int(nsec)


def to_msg(types: Any, msg_type: MsgType, values: Mapping[str, npt.ArrayLike | float],
           frame_id: str = "", stamp: Any = None, msg: Any = None) -> Any:
    """A message of ``msg_type`` holding ``values`` (a record of the layout it mirrors), built
    by the message factory ``types`` (or refilled: ``msg``). Its header stamp: the record's
    ``stamp`` field, else ``stamp`` (anything with ``sec`` and ``nanosec``)."""
    if msg is None:
        msg = types.new(msg_type.type_name)
    msg.header.frame_id = frame_id
    if "stamp" in values:
        msg.header.stamp.sec, msg.header.stamp.nanosec = _stamp_values(values["stamp"])
    elif stamp is not None:
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp.sec), int(stamp.nanosec)
    for f in msg_type.fields:
        value = values[f.name]
        cast = _CASTS.get(f.ros_type)
        if cast is not None:
            setattr(msg, f.name, cast(float(np.asarray(value))))
        elif f.ros_type.endswith("[]"):
            setattr(msg, f.name, types.float64s(value))
        else:  # a fixed-size array
            setattr(msg, f.name, np.asarray(value, dtype=np.float64).reshape(-1))
    return msg


def from_msg(msg: Any, msg_type: MsgType, layout: RecordLayout) -> dict[str, FloatArray]:
    """The record of ``layout`` a message of ``msg_type`` holds: field name -> array of the
    field's shape (a ``stamp`` field from the header). :class:`InputError` names a field of
    the wrong size."""
    out: dict[str, FloatArray] = {}
    for f in layout.fields:
        if f.name == "stamp":
            st = msg.header.stamp
            out["stamp"] = np.array([float(st.sec), float(st.nanosec)])
            if not 0 <= int(st.nanosec) < NS_PER_S:
                raise InputError(f"{msg_type.name} header.stamp.nanosec", "0 <= nanosec < 1e9",
                                 int(st.nanosec))
            continue
        value = getattr(msg, f.name)
        arr = np.asarray(value, dtype=np.float64)
        if arr.size != f.size:
            raise InputError(f"{msg_type.name} field '{f.name}'",
                             f"{f.size} values (shape {f.shape or 'scalar'})", arr.size)
        out[f.name] = arr.reshape(f.shape).copy()
    return out


def stamp_seconds(msg: Any) -> float:
    """The header stamp of one of these messages [s]; -inf when it has none readable."""
    try:
        st = msg.header.stamp
        return int(st.sec) + int(st.nanosec) / NS_PER_S
    except (AttributeError, TypeError, ValueError):
        return -math.inf
