"""The MuJoCo backend of the muscle geometry: an MJCF's own tendons, as MuJoCo computes them.

An MJCF robot's muscles are its tendons: spatial tendons through sites, wrapping over spheres
and cylinders (with side sites), through pulleys, or fixed (joint-coupling) tendons. MuJoCo
computes their lengths ``ten_length`` and Jacobian ``ten_J = dl/dq`` itself, so nothing here
re-implements wrapping: :class:`MujocoTendonGeometry` sets the joint angles (coupled joints
from their drivers) and runs MuJoCo's position stages (``mj_kinematics``, ``mj_comPos``,
``mj_tendon``). Finite differences of the lengths are the tests' independent check of ``ten_J``.

The model is compiled with MuJoCo's actuator length-range computation off
(``compiler.LRopt.mode = none``): it does not converge on some public models (MuJoCo's own
``arm26.xml`` among them), and the controller samples ``l_min, l_max`` over the joint range
itself (:class:`~musculo_control.model.robot.Robot`).

Peak force: where a muscle actuator (``<muscle>`` or a general actuator with muscle gain) pulls
a tendon, its peak active force is that muscle's Hill f1. MuJoCo documents a negative ``force``
as "computed automatically" as ``scale / acc0`` (``actuator_acc0`` being the joint-space
acceleration a unit actuator force causes at ``qpos0``); the same rule is applied here, since
the length-range pass that would store it is off. The tendon tension is the actuator force times
its gear.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import numpy.typing as npt

from musculo_control.errors import ConfigError
from musculo_control.model.geometry import MuscleKinematics
from musculo_control.model.mujoco_body import MujocoBody, MujocoWorkspace

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def mjcf_spec(path: Path) -> mujoco.MjSpec:
    """The MJCF as an editable MuJoCo spec, with the actuator length-range pass switched off."""
    try:
        spec = mujoco.MjSpec.from_file(str(path))
    except ValueError as exc:
        raise ConfigError(str(path), "<file>", "an MJCF MuJoCo can parse", str(exc)) from exc
    spec.compiler.LRopt.mode = mujoco.mjtLRMode.mjLRMODE_NONE
    return spec


def compile_spec(spec: mujoco.MjSpec, path: Path) -> mujoco.MjModel:
    """Compile, turning MuJoCo's compiler errors into :class:`ConfigError` on ``path``."""
    try:
        return spec.compile()
    except ValueError as exc:
        raise ConfigError(str(path), "<model>", "an MJCF MuJoCo can compile", str(exc)) from exc


def tendon_jacobian(model: mujoco.MjModel, data: mujoco.MjData) -> FloatArray:
    """(ntendon, nv) dense tendon Jacobian dl/dq from ``data.ten_J`` (stored sparse)."""
    out = np.zeros((model.ntendon, model.nv))
    mujoco.mju_sparse2dense(out, data.ten_J, model.ten_J_rownnz, model.ten_J_rowadr,
                            model.ten_J_colind)
    return out


def muscle_peak_forces(model: mujoco.MjModel) -> dict[int, float]:
    """Tendon id -> peak active tension [N] of the muscle actuator pulling it (see module doc)."""
    out: dict[int, float] = {}
    for a in range(model.nu):
        if (int(model.actuator_gaintype[a]) != int(mujoco.mjtGain.mjGAIN_MUSCLE)
                or int(model.actuator_trntype[a]) != int(mujoco.mjtTrn.mjTRN_TENDON)):
            continue
        force, scale = float(model.actuator_gainprm[a, 2]), float(model.actuator_gainprm[a, 3])
        acc0 = float(model.actuator_acc0[a])
        if force < 0.0:
            if not acc0 > 0.0:
                continue
            force = scale / acc0
        out[int(model.actuator_trnid[a, 0])] = force * abs(float(model.actuator_gear[a, 0]))
    return out


class MujocoTendonGeometry:
    """Muscle lengths and Jacobian from an MJCF's tendons (see the module docstring).

    Implements :class:`~musculo_control.model.geometry.MuscleGeometry` on the arm's own MuJoCo
    model (``body``, a :class:`~musculo_control.model.mujoco_body.MujocoBody`): lengths at
    ``q = phi(u)`` and the reduced Jacobian ``dl/du = ten_J G`` when joints are coupled.
    ``tendons`` names the tendon of each muscle, in muscle order.
    """

    def __init__(self, body: MujocoBody, path: Path, names: tuple[str, ...],
                 tendons: tuple[str, ...], file: str) -> None:
        self.path = Path(path)
        self.names = names
        self.source = f"MuJoCo tendons of {self.path.name}"
        self.body = body
        self.model = body.model
        m = self.model
        known = [m.tendon(t).name for t in range(m.ntendon)]
        ids = []
        for i, tendon in enumerate(tendons):
            tid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_TENDON, tendon)
            if tid < 0:
                raise ConfigError(file, f"muscles[{i}].tendon",
                                  f"a tendon of {self.path.name} {known}", tendon)
            ids.append(tid)
        self.tendon_ids: IntArray = np.array(ids, dtype=int)  # (m,)
        self.qpos_adr: IntArray = body.coupling.qpos_adr  # (n,)
        self.dof_adr: IntArray = body.coupling.dof_adr  # (n,)
        peaks = muscle_peak_forces(m)
        #: (m,) peak active tension of each muscle's MJCF muscle actuator [N]; NaN: none
        self.peak_force_n: FloatArray = np.array([peaks.get(int(t), np.nan) for t in ids])
        self._local = threading.local()

    def _workspace(self) -> MujocoWorkspace:
        local = self._local
        if not hasattr(local, "ws"):
            local.ws = self.body.workspace()
            local.dense = np.zeros((self.model.ntendon, self.model.nv))
        return local.ws  # type: ignore[no-any-return]

    def _positions(self, q: FloatArray) -> mujoco.MjData:
        """MuJoCo's position stages at ``q``: bodies, sites, wrap points, tendon lengths and J."""
        d = self._workspace().data
        self.body.coupling.fill_qpos(d.qpos, q)
        mujoco.mj_kinematics(self.model, d)
        mujoco.mj_comPos(self.model, d)
        mujoco.mj_tendon(self.model, d)
        return d

    def lengths_at(self, q: FloatArray) -> FloatArray:
        """(m,) tendon lengths at ``q`` [m]."""
        return np.array(self._positions(q).ten_length[self.tendon_ids])

    def _kinematics(self, d: mujoco.MjData) -> MuscleKinematics:
        dense = self._local.dense
        mujoco.mju_sparse2dense(dense, d.ten_J, self.model.ten_J_rownnz,
                                self.model.ten_J_rowadr, self.model.ten_J_colind)
        rows = dense[self.tendon_ids]
        jac = rows[:, self.dof_adr] if self.body.coupling.trivial \
            else rows @ self.body.coupling.basis(d.qpos)
        return MuscleKinematics(np.array(d.ten_length[self.tendon_ids]), jac)

    def kinematics_at(self, q: FloatArray) -> MuscleKinematics:
        """Lengths and Jacobian (MuJoCo's ``ten_J``, times ``G`` if coupled) at ``q``."""
        return self._kinematics(self._positions(q))

    def kinematics_after_jacobians(self, q: FloatArray, data: Any) -> MuscleKinematics:
        """As :meth:`kinematics_at`, reusing the body positions of the dynamics pass when
        ``data`` is a workspace of the same MuJoCo model (only ``mj_tendon`` then runs)."""
        if isinstance(data, MujocoWorkspace) and data.data.model is self.model:
            self._workspace()
            mujoco.mj_tendon(self.model, data.data)
            return self._kinematics(data.data)
        return self.kinematics_at(q)

    def paths_at(self, q: FloatArray) -> list[FloatArray]:
        """Each tendon's path as MuJoCo computes it: sites and wrap tangent points [m]."""
        d = self._positions(q)
        points = d.wrap_xpos.reshape(-1, 3)
        objects = d.wrap_obj.reshape(-1)
        out = []
        for t in self.tendon_ids:
            a, n = int(d.ten_wrapadr[t]), int(d.ten_wrapnum[t])
            keep = objects[a:a + n] != -2  # pulleys split a path; a viewer draws the points
            out.append(np.array(points[a:a + n][keep]))
        return out
