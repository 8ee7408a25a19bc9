"""How well a learned mapping knows the mock arm: errors against the truth the mock knows.

At the true joint angles of a held-out recording (``truth_q_rad``; the poses the arm actually
took, inside the mapping's recorded box), the learned l(q) and Jm are compared with MuJoCo's
own tendon lengths (in the encoder frame of the recording, i.e. shifted as the mock's encoders
report them) and tendon Jacobian ``ten_J`` of the mock arm built with the recording's seed,
model error included. The description's own geometry (the via-points the controller uses
otherwise) is scored the same way, for comparison.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import mujoco
import numpy as np
import numpy.typing as npt

from musculo_control.errors import InputError
from musculo_control.model.geometry import MuscleGeometry
from musculo_control.model.learned_mapping import LearnedMapping
from musculo_control.model.mapping_recording import Recording
from musculo_control.model.robot import Robot
from musculo_control.sim.mock_arm import load_mock_arm

FloatArray = npt.NDArray[np.float64]


class Truth(NamedTuple):
    """The mock's l and Jm at the held-out poses."""

    q_rad: FloatArray  # (P, n)
    length_m: FloatArray  # (P, m) in the recording's encoder frame [m]
    jacobian: FloatArray  # (P, m, n) [m/rad]
    excluded: int  # held-out poses outside the mapping's box, not scored


def mock_truth(robot: Robot, held_out: Recording, mapping: LearnedMapping | None = None,
               stride: int = 1) -> Truth:
    """MuJoCo's lengths and tendon Jacobian of the mock arm at the held-out true poses."""
    if held_out.truth_q_rad is None:
        raise InputError(f"recording {held_out.path}", "a recording of the mock arm with "
                                                       "truth_q_rad (musculo record-mapping)",
                         "no true joint angles")
    seed = int(held_out.meta.get("mock_seed", 0))
    mock = load_mock_arm(robot, seed)
    q = held_out.truth_q_rad[::stride]
    excluded = 0
    if mapping is not None:
        inside = np.all((q >= mapping.lower_rad) & (q <= mapping.upper_rad), axis=1)
        excluded = int((~inside).sum())
        q = q[inside]
    model, data = mock.model, mujoco.MjData(mock.model)
    tids, qadr, vadr = mock.arm.tendon_ids, mock.arm.qpos_adr, mock.arm.dof_adr
    # the mock's encoders report its true length plus this (zeroed at the calibration pose)
    shift = mock.calibration.reference_length_m - mock._lengths_at(
        mock.calibration.calibration_pose_rad)
    dense = np.zeros((model.ntendon, model.nv))
    lengths, jacs = [], []
    for pose in q:
        data.qpos[qadr] = pose
        mujoco.mj_fwdPosition(model, data)
        mujoco.mju_sparse2dense(dense, data.ten_J, model.ten_J_rownnz, model.ten_J_rowadr,
                                model.ten_J_colind)
        lengths.append(data.ten_length[tids] + shift)
        jacs.append(dense[np.ix_(tids, vadr)].copy())
    return Truth(q, np.array(lengths), np.array(jacs), excluded)


def errors(truth: Truth, evaluate: Any) -> dict[str, Any]:
    """RMS and max errors of l [m] and of each moment arm -Jm [m/rad] of ``evaluate(q) ->
    (l, Jm)`` against ``truth``; per muscle and joint, and over all."""
    pairs = [evaluate(q) for q in truth.q_rad]
    dl = np.array([p[0] for p in pairs]) - truth.length_m  # (P, m)
    dj = np.array([p[1] for p in pairs]) - truth.jacobian  # (P, m, n)
    return {
        "poses": int(truth.q_rad.shape[0]),
        "length_rms_m": float(np.sqrt(np.mean(dl**2))),
        "length_max_m": float(np.abs(dl).max()),
        "moment_arm_rms_m": float(np.sqrt(np.mean(dj**2))),
        "moment_arm_max_m": float(np.abs(dj).max()),
        "per_muscle_length_rms_m": np.sqrt(np.mean(dl**2, axis=0)).tolist(),
        "per_muscle_length_max_m": np.abs(dl).max(axis=0).tolist(),
        "moment_arm_rms_by_joint_m": np.sqrt(np.mean(dj**2, axis=0)).tolist(),  # (m, n)
        "moment_arm_max_by_joint_m": np.abs(dj).max(axis=0).tolist(),
    }


def geometry_errors(truth: Truth, geometry: MuscleGeometry) -> dict[str, Any]:
    """:func:`errors` of a geometry backend."""
    def evaluate(q: FloatArray) -> tuple[FloatArray, FloatArray]:
        kin = geometry.kinematics_at(q)
        return kin.length_m, kin.jacobian
    return errors(truth, evaluate)


def prefix(rec: Recording, duration_s: float) -> Recording:
    """The first ``duration_s`` of a recording (its first session's clock)."""
    keep = rec.stamp_s - rec.stamp_s[0] <= duration_s
    fields = {k: getattr(rec, k)[keep] for k in ("stamp_s", "q_rad", "length_stamp_s",
                                                   "length_m", "tension_n", "session")}
    truth = rec.truth_q_rad[keep] if rec.truth_q_rad is not None else None
    return Recording(**fields, joint_names=rec.joint_names, muscle_names=rec.muscle_names,
                     config_dir=rec.config_dir, source=rec.source, meta=rec.meta,
                     path=f"{rec.path} (first {duration_s:.0f} s)", truth_q_rad=truth)
