"""The dynamics snapshot as a record: the ``dynamics`` topic's ``DynamicsSnapshot`` message
(:mod:`musculo_control.msg_types`), or a labelled flat ``Float64MultiArray``.

Layout (see :mod:`musculo_control.records`): schema ``dynamics_snapshot_v1``, then::

    field                                  shape  unit
    -------------------------------------  -----  ----------------------------------------
    stamp                                  2      (sec, nanosec) of the source joint state
    q_rad, qd_rad_s                        n      rad, rad/s
    mass_matrix                            n x n  kg m^2
    gravity_torque_nm, coriolis_torque_nm  n      Nm
    hand_position_m                        3      m
    hand_rotation                          3 x 3  world_R_hand
    hand_jacobian                          6 x n  world-aligned [v; w], unmasked
    task_jacobian                          k x n  masked (paper eq. 13)
    task_inertia                           k x k  Lambda (paper eq. 6)
    dyn_consistent_inverse                 n x k  Jbar (paper eq. 7)
    nullspace_projector                    n x n  N (paper eq. 8)
    muscle_length_m                        m      m
    muscle_jacobian                        m x n  dl/dq, m/rad
    min_task_eigenvalue                    1
    damped                                 1      1.0 if the damped inverse engaged, else 0.0

The stamp travels as two exact integers rather than one float of seconds, so the consumer can
compare it with the source joint state's header to the nanosecond.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control import msg_types
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.records import Dim, Field, RecordLayout
from musculo_control.stamps import NS_PER_S, Stamp

FloatArray = npt.NDArray[np.float64]

SCHEMA = "dynamics_snapshot_v1"


def snapshot_layout(n_joints: int, n_muscles: int, n_task: int) -> RecordLayout:
    """The record layout of a snapshot of an arm with these sizes."""
    n, m, k = n_joints, n_muscles, n_task
    return RecordLayout(SCHEMA, [
        Field("stamp", (2,)),
        Field("q_rad", (n,)),
        Field("qd_rad_s", (n,)),
        Field("mass_matrix", (n, n)),
        Field("gravity_torque_nm", (n,)),
        Field("coriolis_torque_nm", (n,)),
        Field("hand_position_m", (3,)),
        Field("hand_rotation", (3, 3)),
        Field("hand_jacobian", (6, n)),
        Field("task_jacobian", (k, n)),
        Field("task_inertia", (k, k)),
        Field("dyn_consistent_inverse", (n, k)),
        Field("nullspace_projector", (n, n)),
        Field("muscle_length_m", (m,)),
        Field("muscle_jacobian", (m, n)),
        Field("min_task_eigenvalue", ()),
        Field("damped", ()),
    ])


#: DynamicsSnapshot fields that are arrays in the record under the same name.
_ARRAY_FIELDS = tuple(f.name for f in dataclasses.fields(DynamicsSnapshot)
                      if f.name not in ("stamp_s", "min_task_eigenvalue", "damped"))


class SnapshotCodec:
    """Encodes and decodes snapshots of one arm (fixed n joints, m muscles, k task rows)."""

    def __init__(self, n_joints: int, n_muscles: int, n_task: int) -> None:
        self.layout = snapshot_layout(n_joints, n_muscles, n_task)
        self._dims = self.layout.dims()

    def dims(self) -> list[Dim]:
        return list(self._dims)

    def values(self, snapshot: DynamicsSnapshot,
               stamp: Stamp | None = None) -> dict[str, npt.ArrayLike | float]:
        """The record's field values of ``snapshot``; ``stamp`` defaults to
        ``snapshot.stamp_s`` split exactly."""
        st = stamp if stamp is not None else Stamp.from_seconds(snapshot.stamp_s)
        values: dict[str, npt.ArrayLike | float] = {
            name: getattr(snapshot, name) for name in _ARRAY_FIELDS}
        values["stamp"] = (float(st.sec), float(st.nanosec))
        values["min_task_eigenvalue"] = snapshot.min_task_eigenvalue
        values["damped"] = 1.0 if snapshot.damped else 0.0
        return values

    def encode(self, snapshot: DynamicsSnapshot, stamp: Stamp | None = None) -> FloatArray:
        """Flat data of ``snapshot`` (the ``Float64MultiArray`` record); ``stamp`` defaults to
        ``snapshot.stamp_s`` split exactly."""
        return self.layout.pack(self.values(snapshot, stamp))

    def to_msg(self, types: Any, snapshot: DynamicsSnapshot, frame_id: str,
               stamp: Stamp | None = None, msg: Any = None) -> Any:
        """``snapshot`` as a ``musculo_control_msgs/DynamicsSnapshot`` built by the message
        factory ``types`` (or refilled: ``msg``)."""
        return msg_types.to_msg(types, msg_types.DYNAMICS_SNAPSHOT, self.values(snapshot, stamp),
                                frame_id, msg=msg)

    def from_msg(self, msg: Any) -> tuple[DynamicsSnapshot, Stamp]:
        """The snapshot a ``musculo_control_msgs/DynamicsSnapshot`` carries and its source
        stamp; :class:`InputError` on any malformed one."""
        return self._snapshot(msg_types.from_msg(msg, msg_types.DYNAMICS_SNAPSHOT, self.layout))

    def decode(self, dims: list[Dim], data: npt.ArrayLike,
               data_offset: int = 0) -> tuple[DynamicsSnapshot, Stamp]:
        """The snapshot a ``Float64MultiArray`` record carries and its source stamp;
        :class:`InputError` on any malformed record."""
        self.layout.check_dims(dims, data_offset)
        return self._snapshot(self.layout.unpack(data))

    def _snapshot(self, fields: dict[str, FloatArray]) -> tuple[DynamicsSnapshot, Stamp]:
        for name, arr in fields.items():
            if not np.all(np.isfinite(arr)):
                raise InputError(f"dynamics record field '{name}'", "finite values",
                                 "NaN or infinity")
        sec, nsec = (float(v) for v in fields["stamp"])
        if sec != int(sec) or nsec != int(nsec) or not 0 <= nsec < NS_PER_S:
            raise InputError("dynamics record stamp", "integer sec and 0 <= nanosec < 1e9",
                             (sec, nsec))
        stamp = Stamp(int(sec), int(nsec))
        damped = float(fields["damped"])
        if damped not in (0.0, 1.0):
            raise InputError("dynamics record field 'damped'", "0 or 1", damped)
        snapshot = DynamicsSnapshot(
            stamp_s=stamp.seconds,
            **{name: fields[name] for name in _ARRAY_FIELDS},
            min_task_eigenvalue=float(fields["min_task_eigenvalue"]),
            damped=damped == 1.0,
        )
        return snapshot, stamp
