"""The rigid-body dynamics of the arm behind one interface, with two backends.

Everything the controller asks of the rigid bodies (SPEC sections 2 and 4) goes through
:class:`RigidBody`: frame poses, world-aligned frame Jacobians, twists, and one dynamics pass
with ``M(q)``, ``M^-1``, ``g(q)``, ``C(q, qd) qd``. Which library answers depends on the
description (doc/mjcf_models.md argues the choice with measurements):

- a URDF: :class:`PinocchioBody`, Pinocchio's model of the URDF;
- an MJCF: :class:`~musculo_control.model.mujoco_body.MujocoBody`, MuJoCo's own model of the
  file (MuJoCo is the authority on what an MJCF means: bodies with several joints, chains of
  joint-less bodies, coupled joints), in the reduced coordinates of
  :mod:`~musculo_control.model.joint_coupling`.

A backend keeps no state between calls except in the *workspace* its caller owns
(:meth:`RigidBody.workspace`), so one backend serves the 20 Hz estimator and the 125 Hz tick of a
process, each with its own workspace. A :class:`Frame` is a named point and axes fixed to a body
(:meth:`RigidBody.find_frame`): the one rule for frame names of every config file and command is
written in doc/mjcf_models.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt
import pinocchio as pin

FloatArray = npt.NDArray[np.float64]


class Frame(NamedTuple):
    """A frame fixed to a body: what a config names as task frame, elbow frame, gauge point.

    ``handle`` is the backend's index (Pinocchio frame id; MuJoCo body id); ``position`` and
    ``rotation`` place the frame in that handle's own frame (identity for Pinocchio, whose
    frames carry their placement).
    """

    name: str
    handle: int
    position: FloatArray  # (3,) [m]
    rotation: FloatArray  # (3, 3)


class DynamicsTerms(NamedTuple):
    """One dynamics pass at (q, qd) (SPEC section 2; paper eq. 5-8 take these)."""

    mass_matrix: FloatArray  # (n, n) M [kg m^2]
    mass_matrix_inverse: FloatArray  # (n, n) M^-1
    gravity_torque: FloatArray  # (n,) g(q) [Nm]
    coriolis_torque: FloatArray  # (n,) C(q, qd) qd [Nm]
    position: FloatArray  # (3,) frame origin, base frame [m]
    rotation: FloatArray  # (3, 3) base_R_frame
    jacobian: FloatArray  # (6, n) world-aligned [v; w] of the frame


class RigidBody(Protocol):
    """What each rigid-body backend offers; arrays in the controller's joint order."""

    #: "URDF" or "MJCF"
    kind: str
    #: the library that computes, for reports ("Pinocchio", "MuJoCo")
    library: str
    joint_names: tuple[str, ...]
    lower_rad: FloatArray  # (n,)
    upper_rad: FloatArray  # (n,)

    def set_gravity(self, gravity_m_s2: FloatArray) -> None: ...

    def workspace(self) -> Any:
        """Fresh scratch memory for one thread of computation."""
        ...

    def find_frame(self, name: str, offset_m: FloatArray) -> Frame | None:
        """The frame called ``name`` moved by ``offset_m`` in its own axes; None: no such."""
        ...

    def frame_names(self) -> str:
        """What ``find_frame`` accepts, for error messages."""
        ...

    def body_names(self) -> list[str]:
        """Named bodies (URDF links), the world excluded."""
        ...

    def poses(self, ws: Any, q: FloatArray, frames: tuple[Frame, ...]
              ) -> list[tuple[FloatArray, FloatArray]]:
        """(position (3,), rotation (3, 3)) of each frame at ``q``, one kinematics pass."""
        ...

    def jacobians(self, ws: Any, q: FloatArray, frames: tuple[Frame, ...]) -> list[FloatArray]:
        """(6, n) world-aligned Jacobian [v; w] of each frame's origin at ``q``."""
        ...

    def twist(self, ws: Any, q: FloatArray, qd: FloatArray, frame: Frame
              ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """(position, rotation, linear velocity, angular velocity), world-aligned."""
        ...

    def dynamics(self, ws: Any, q: FloatArray, qd: FloatArray, frame: Frame) -> DynamicsTerms:
        """M, M^-1, g, C qd and the frame's pose and Jacobian at (q, qd), in one pass."""
        ...

    def gravity_torque(self, ws: Any, q: FloatArray) -> FloatArray:
        """(n,) g(q) [Nm]."""
        ...


class PinocchioBody:
    """Pinocchio's model of a URDF (:class:`RigidBody`)."""

    kind = "URDF"
    library = "Pinocchio"

    def __init__(self, model: pin.Model) -> None:
        self.model = model
        self.joint_names = tuple(str(model.names[i]) for i in range(1, model.njoints))
        self.lower_rad: FloatArray = np.array(model.lowerPositionLimit, dtype=float)
        self.upper_rad: FloatArray = np.array(model.upperPositionLimit, dtype=float)
        n = model.nv
        self._zero = np.zeros(n)
        # Pinocchio fills only the upper triangles of M and M^-1: flat indices of the strict
        # upper triangle and of its mirror image (flat indexing is ~4x cheaper than 2-D)
        upper = np.triu_indices(n, 1)
        self._upper = np.ravel_multi_index(upper, (n, n))
        self._lower = np.ravel_multi_index((upper[1], upper[0]), (n, n))

    def set_gravity(self, gravity_m_s2: FloatArray) -> None:
        self.model.gravity.linear = np.asarray(gravity_m_s2, dtype=float)

    def workspace(self) -> pin.Data:
        return self.model.createData()

    def find_frame(self, name: str, offset_m: FloatArray) -> Frame | None:
        """A link or joint of the URDF; an offset adds a Pinocchio frame on its parent joint."""
        if not self.model.existFrame(name):
            return None
        fid = int(self.model.getFrameId(name))
        offset = np.asarray(offset_m, dtype=float)
        if np.any(offset):
            label = f"{name}+offset{np.round(offset, 6).tolist()}"
            if self.model.existFrame(label):
                fid = int(self.model.getFrameId(label))
            else:
                frame = self.model.frames[fid]
                placement = frame.placement * pin.SE3(np.eye(3), offset)
                fid = int(self.model.addFrame(pin.Frame(label, frame.parentJoint, fid, placement,
                                                        pin.FrameType.OP_FRAME)))
        return Frame(name, fid, np.zeros(3), np.eye(3))

    def frame_names(self) -> str:
        names = [str(f.name) for f in self.model.frames if "+offset" not in str(f.name)]
        return f"a frame of the URDF (a link or joint) {names}"

    def body_names(self) -> list[str]:
        return [str(f.name) for f in self.model.frames if f.type == pin.FrameType.BODY]

    def poses(self, ws: pin.Data, q: FloatArray, frames: tuple[Frame, ...]
              ) -> list[tuple[FloatArray, FloatArray]]:
        pin.forwardKinematics(self.model, ws, q)
        out = []
        for f in frames:
            placement = pin.updateFramePlacement(self.model, ws, f.handle)
            out.append((placement.translation.copy(), placement.rotation.copy()))
        return out

    def jacobians(self, ws: pin.Data, q: FloatArray, frames: tuple[Frame, ...]
                  ) -> list[FloatArray]:
        pin.computeJointJacobians(self.model, ws, q)
        pin.updateFramePlacements(self.model, ws)
        return [pin.getFrameJacobian(self.model, ws, f.handle, pin.LOCAL_WORLD_ALIGNED)
                for f in frames]

    def twist(self, ws: pin.Data, q: FloatArray, qd: FloatArray, frame: Frame
              ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        pin.forwardKinematics(self.model, ws, q, qd)
        placement = pin.updateFramePlacement(self.model, ws, frame.handle)
        v = pin.getFrameVelocity(self.model, ws, frame.handle, pin.LOCAL_WORLD_ALIGNED)
        return (placement.translation.copy(), placement.rotation.copy(), v.linear.copy(),
                v.angular.copy())

    def dynamics(self, ws: pin.Data, q: FloatArray, qd: FloatArray, frame: Frame
                 ) -> DynamicsTerms:
        model = self.model
        pin.computeJointJacobians(model, ws, q)  # also runs forward kinematics
        oMf = pin.updateFramePlacement(model, ws, frame.handle)
        lower, upper = self._lower, self._upper
        M = pin.crba(model, ws, q).copy()
        flat = M.reshape(-1)
        flat[lower] = flat[upper]
        # M^-1 by the articulated-body algorithm (O(n)), not by factoring M (SPEC section 9)
        Minv = pin.computeMinverse(model, ws, q).copy()
        flat = Minv.reshape(-1)
        flat[lower] = flat[upper]
        g = pin.computeGeneralizedGravity(model, ws, q).copy()
        c = pin.rnea(model, ws, q, qd, self._zero) - g
        J6 = pin.getFrameJacobian(model, ws, frame.handle, pin.LOCAL_WORLD_ALIGNED)
        return DynamicsTerms(M, Minv, g, c, oMf.translation.copy(), oMf.rotation.copy(), J6)

    def gravity_torque(self, ws: pin.Data, q: FloatArray) -> FloatArray:
        return np.array(pin.computeGeneralizedGravity(self.model, ws, q))
