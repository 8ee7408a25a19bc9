"""MuJoCo's own rigid-body dynamics of an MJCF robot, in the reduced coordinates of its couplings.

:class:`MujocoBody` is the :class:`~musculo_control.model.rigid_body.RigidBody` of an MJCF. It
computes on MuJoCo's compiled model of the file, the model the mock arm simulates too, so bodies
with several joints, chains of joint-less bodies, ``ref`` offsets and joint armature mean to the
controller what they mean to MuJoCo. The controller's coordinates ``u`` are the independent
joints of :class:`~musculo_control.model.joint_coupling.JointCoupling`; with ``q = phi(u)``,
``G = dq/du`` and ``Gd ud`` the convective acceleration (doc/mjcf_models.md derives it):

    M_u = G^T M G,   g_u = G^T g,   (C qd)_u = G^T (C qd + M Gd ud),   J_u = J G,

from MuJoCo's ``mj_fullM`` (M, joint armature included), ``mj_rne`` (``qfrc_bias``: gravity at
rest, gravity plus Coriolis and centrifugal terms in motion) and ``mj_jac`` (the frame's point
and rotation Jacobians). ``M_u^-1`` comes from MuJoCo's sparse factor of ``M`` when nothing is
coupled (``G`` then only selects the arm's columns and no product is formed), else from a dense
Cholesky factor of ``M_u`` (MuJoCo's ``mju_cholFactor``).

Frames (:func:`element_frame`): a named body (its origin and axes), site (its position and
axes) or joint (its anchor, in its body's axes) of the MJCF, plus an offset in those axes.
"""

from __future__ import annotations

import mujoco
import numpy as np
import numpy.typing as npt

from musculo_control.errors import InputError
from musculo_control.model.joint_coupling import JointCoupling
from musculo_control.model.rigid_body import DynamicsTerms, Frame

FloatArray = npt.NDArray[np.float64]

#: Names listed per kind in an error message before "and N more".
_LISTED = 40


def element_frame(model: mujoco.MjModel, name: str, offset_m: npt.ArrayLike = (0.0, 0.0, 0.0)
                  ) -> tuple[int, FloatArray, FloatArray] | None:
    """(body id, position [m] and rotation of the frame in the body's frame) of the body, site
    or joint called ``name``, moved by ``offset_m`` in the element's axes; None: no element.

    Bodies are searched first, then sites, then joints (MuJoCo names each kind separately). A
    joint's axes are its body's: a MuJoCo joint has an anchor and an axis, no frame.
    """
    offset = np.asarray(offset_m, dtype=float)
    bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
    if bid >= 0:
        return int(bid), offset.copy(), np.eye(3)
    sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name)
    if sid >= 0:
        flat = np.zeros(9)
        mujoco.mju_quat2Mat(flat, model.site_quat[sid])
        rot = flat.reshape(3, 3)
        return int(model.site_bodyid[sid]), model.site_pos[sid] + rot @ offset, rot
    jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    if jid >= 0:
        return int(model.jnt_bodyid[jid]), model.jnt_pos[jid] + offset, np.eye(3)
    return None


def element_names(model: mujoco.MjModel) -> str:
    """The names :func:`element_frame` accepts, by kind, for error messages."""
    def listed(kind: str, names: list[str]) -> str:
        names = [n for n in names if n]
        more = f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
        return f"{kind} {names[:_LISTED]}{more}"

    return "a frame of the MJCF (a named body, site or joint): " + "; ".join([
        listed("bodies", [model.body(b).name for b in range(1, model.nbody)]),
        listed("sites", [model.site(s).name for s in range(model.nsite)]),
        listed("joints", [model.joint(j).name for j in range(model.njnt)]),
    ]) + " (an unnamed body has no name to use: name it, or use a site or joint on it)"


class MujocoWorkspace:
    """MuJoCo data and scratch arrays of one thread of computation."""

    def __init__(self, model: mujoco.MjModel, n: int) -> None:
        self.data = mujoco.MjData(model)
        nv = model.nv
        self.full = np.zeros((nv, nv))
        self.jacp = np.zeros((3, nv))
        self.jacr = np.zeros((3, nv))
        self.gravity = np.zeros(nv)
        self.bias = np.zeros(nv)
        self.eye = np.eye(n)
        self.eye_full = np.eye(nv)
        self.inverse_full = np.zeros((nv, nv))
        self.factor = np.zeros((n, n))
        self.column = np.zeros(n)


class MujocoBody:
    """MuJoCo's dynamics of an MJCF in reduced coordinates (module docstring)."""

    kind = "MJCF"
    library = "MuJoCo"

    def __init__(self, model: mujoco.MjModel, coupling: JointCoupling) -> None:
        self.model = model
        self.coupling = coupling
        self.joint_names = tuple(model.joint(j).name for j in coupling.independent)
        lo, hi, notes = coupling.limits()
        self.lower_rad: FloatArray = lo
        self.upper_rad: FloatArray = hi
        #: joints whose range the couplings narrowed, one line each
        self.limit_notes: list[str] = notes
        self.dof_adr = coupling.dof_adr
        self._trivial = coupling.trivial

    def set_gravity(self, gravity_m_s2: FloatArray) -> None:
        self.model.opt.gravity[:] = np.asarray(gravity_m_s2, dtype=float)

    def workspace(self) -> MujocoWorkspace:
        return MujocoWorkspace(self.model, self.coupling.n)

    def find_frame(self, name: str, offset_m: FloatArray) -> Frame | None:
        found = element_frame(self.model, name, offset_m)
        if found is None:
            return None
        return Frame(name, found[0], found[1], found[2])

    def frame_names(self) -> str:
        return element_names(self.model)

    def body_names(self) -> list[str]:
        return [self.model.body(b).name for b in range(1, self.model.nbody)
                if self.model.body(b).name]

    # -- passes -----------------------------------------------------------------------------------
    def _kinematics(self, ws: MujocoWorkspace, q: FloatArray) -> mujoco.MjData:
        d = ws.data
        self.coupling.fill_qpos(d.qpos, q)
        mujoco.mj_kinematics(self.model, d)
        return d

    def _frame_pose(self, d: mujoco.MjData, f: Frame) -> tuple[FloatArray, FloatArray]:
        R = d.xmat[f.handle].reshape(3, 3)
        return d.xpos[f.handle] + R @ f.position, R @ f.rotation

    def _reduce_columns(self, ws: MujocoWorkspace, jac: FloatArray, G: FloatArray | None
                        ) -> FloatArray:
        """(k, nv) -> (k, n): J G, or the arm's columns when nothing is coupled."""
        return jac[:, self.dof_adr] if G is None else jac @ G

    def _jacobian(self, ws: MujocoWorkspace, f: Frame, point: FloatArray,
                  G: FloatArray | None) -> FloatArray:
        mujoco.mj_jac(self.model, ws.data, ws.jacp, ws.jacr, point, f.handle)
        return np.vstack([self._reduce_columns(ws, ws.jacp, G),
                          self._reduce_columns(ws, ws.jacr, G)])

    def _basis(self, d: mujoco.MjData) -> FloatArray | None:
        return None if self._trivial else self.coupling.basis(d.qpos)

    def poses(self, ws: MujocoWorkspace, q: FloatArray, frames: tuple[Frame, ...]
              ) -> list[tuple[FloatArray, FloatArray]]:
        d = self._kinematics(ws, q)
        return [self._frame_pose(d, f) for f in frames]

    def jacobians(self, ws: MujocoWorkspace, q: FloatArray, frames: tuple[Frame, ...]
                  ) -> list[FloatArray]:
        d = self._kinematics(ws, q)
        mujoco.mj_comPos(self.model, d)
        G = self._basis(d)
        return [self._jacobian(ws, f, self._frame_pose(d, f)[0], G) for f in frames]

    def twist(self, ws: MujocoWorkspace, q: FloatArray, qd: FloatArray, frame: Frame
              ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        d = self._kinematics(ws, q)
        mujoco.mj_comPos(self.model, d)
        p, R = self._frame_pose(d, frame)
        J = self._jacobian(ws, frame, p, self._basis(d))
        v = J @ qd
        return p, R, v[:3], v[3:]

    def dynamics(self, ws: MujocoWorkspace, q: FloatArray, qd: FloatArray, frame: Frame
                 ) -> DynamicsTerms:
        m, d = self.model, self._kinematics(ws, q)
        mujoco.mj_comPos(m, d)
        mujoco.mj_crb(m, d)
        mujoco.mj_fullM(m, d, ws.full)
        # gravity: the bias force at rest
        d.qvel[:] = 0.0
        mujoco.mj_comVel(m, d)
        mujoco.mj_rne(m, d, 0, ws.gravity)
        G = self._basis(d)
        if G is None:
            d.qvel[self.dof_adr] = qd
        else:
            self.coupling.velocity(d.qpos, qd, d.qvel)
        mujoco.mj_comVel(m, d)
        mujoco.mj_rne(m, d, 0, ws.bias)
        bias = ws.bias - ws.gravity  # (nv,) C qd
        if G is None:
            idx = self.dof_adr
            M = ws.full[np.ix_(idx, idx)]
            g = ws.gravity[idx].copy()
            c = bias[idx]
            # M^-1 from MuJoCo's sparse factor of M (the tree's structure, O(n) fill)
            mujoco.mj_factorM(m, d)
            mujoco.mj_solveM(m, d, ws.inverse_full, ws.eye_full)
            Minv = ws.inverse_full[np.ix_(idx, idx)]
        else:
            M = G.T @ ws.full @ G
            g = G.T @ ws.gravity
            c = G.T @ (bias + ws.full @ self.coupling.convective(d.qpos, d.qvel))
            Minv = self._inverse(ws, M)
        p, R = self._frame_pose(d, frame)
        J6 = self._jacobian(ws, frame, p, G)
        return DynamicsTerms(M, Minv, g, c, p, R, J6)

    def gravity_torque(self, ws: MujocoWorkspace, q: FloatArray) -> FloatArray:
        m, d = self.model, self._kinematics(ws, q)
        mujoco.mj_comPos(m, d)
        d.qvel[:] = 0.0
        mujoco.mj_comVel(m, d)
        mujoco.mj_rne(m, d, 0, ws.gravity)
        G = self._basis(d)
        return ws.gravity[self.dof_adr].copy() if G is None else G.T @ ws.gravity

    @staticmethod
    def _inverse(ws: MujocoWorkspace, M: FloatArray) -> FloatArray:
        """M^-1 of a symmetric positive definite M by MuJoCo's dense Cholesky routines: single
        threaded (a threaded BLAS factorisation of a small matrix stalls for milliseconds on a
        busy machine)."""
        factor = ws.factor
        factor[:] = M
        n = len(M)
        if mujoco.mju_cholFactor(factor, 0.0) != n:
            raise InputError("mass matrix", "a positive definite matrix", np.diag(M).tolist())
        out = np.empty((n, n))
        for k in range(n):
            mujoco.mju_cholSolve(ws.column, factor, ws.eye[k])
            out[k] = ws.column
        return out
