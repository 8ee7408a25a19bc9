"""The rigid-body arm: a URDF or an MJCF behind one interface, with named joints and frames.

A config folder names one robot description: a URDF (``arm.urdf``), read by Pinocchio, or a
MuJoCo MJCF (``arm.mjcf``), read and computed by MuJoCo itself
(:mod:`musculo_control.model.rigid_body` says why both, doc/mjcf_models.md measures it). Gravity
comes from the MJCF's ``<option gravity>`` unless robot.yaml sets it. An MJCF may couple joints by
joint equality constraints (MyoSuite's shoulder girdle): the controller's joints are then the
independent ones (:mod:`musculo_control.model.joint_coupling`). Only fixed-base arms of revolute
and prismatic joints are supported; a free or ball joint, or any other equality constraint, is
refused with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError, InputError
from musculo_control.model.rigid_body import Frame, PinocchioBody, RigidBody

if TYPE_CHECKING:
    from musculo_control.model.joint_coupling import JointCoupling

FloatArray = npt.NDArray[np.float64]

#: Gravity of a URDF robot when robot.yaml gives none (a URDF cannot say) [m/s^2].
_URDF_GRAVITY_M_S2 = (0.0, 0.0, -9.81)


@dataclass(frozen=True, kw_only=True)
class ArmConfig:
    """Which robot description, which joints in which order, and the task frame."""

    urdf: str | None = spec(None, doc="URDF file, relative to the config folder")
    mjcf: str | None = spec(None, doc="MuJoCo MJCF file, relative to the config folder "
                                      "(instead of urdf)")
    joints: tuple[str, ...] = spec(min_length=1, doc="actuated joints in controller order")
    task_frame: str = spec(doc="frame whose pose is the task (the hand point): a URDF link or "
                               "joint, or an MJCF body, site or joint (doc/mjcf_models.md, "
                               "'Frame names')")
    task_offset_m: tuple[float, ...] = spec(
        (0.0, 0.0, 0.0), length=3,
        doc="the task point in task_frame's axes [m], three numbers [x, y, z]; zero: "
            "task_frame's origin")
    base_frame: str | None = spec(
        None, doc="name of the frame goals are given in (the ROS frame_id); default: the URDF's "
                  "root link, 'world' for an MJCF")
    gravity_m_s2: tuple[float, ...] | None = spec(
        None, length=3, doc="gravity in the base frame [m/s^2]; default: the MJCF's option "
                            "gravity, (0, 0, -9.81) for a URDF")

    def check(self, file: str, key: str) -> None:
        if (self.urdf is None) == (self.mjcf is None):
            raise ConfigError(file, f"{key}.urdf" if key else "urdf",
                              "exactly one robot description: urdf or mjcf",
                              {"urdf": self.urdf, "mjcf": self.mjcf})

    @property
    def description(self) -> str:
        """The description file named in the config (relative to the config folder)."""
        return str(self.urdf if self.urdf is not None else self.mjcf)

    @property
    def description_key(self) -> str:
        """Dotted robot.yaml key of the description, for error messages."""
        return "arm.urdf" if self.urdf is not None else "arm.mjcf"


class Arm:
    """The arm's rigid bodies (:attr:`body`) plus the name lookups the rest of the code needs.

    Joint order is the description's (MuJoCo's order of the independent joints for an MJCF),
    which the config must repeat (so that a vector ``q`` means the same thing everywhere); the
    constructor checks this.
    """

    def __init__(self, config: ArmConfig, config_dir: Path, file: str) -> None:
        path = Path(config_dir) / config.description
        self.is_mjcf = config.mjcf is not None
        self.kind = "MJCF" if self.is_mjcf else "URDF"
        if not path.is_file():
            raise ConfigError(file, config.description_key, f"an existing {self.kind} file",
                              str(path))
        gravity = config.gravity_m_s2
        self._pinocchio: pin.Model | None = None
        self.coupling: JointCoupling | None = None
        self.body: RigidBody
        if self.is_mjcf:
            mjcf_gravity = self._load_mjcf(path)
            gravity = gravity or mjcf_gravity
        else:
            self._load_urdf(path)
        self.description_path = path
        self.gravity_m_s2: FloatArray = np.asarray(gravity or _URDF_GRAVITY_M_S2, dtype=float)
        self.body.set_gravity(self.gravity_m_s2)
        g = float(np.linalg.norm(self.gravity_m_s2))
        #: (3,) "up": against gravity (base z without gravity); heights are measured along it
        self.up: FloatArray = -self.gravity_m_s2 / g if g > 0.0 else np.array([0.0, 0.0, 1.0])
        self.config = config
        model_joints = list(self.body.joint_names)
        self._check_joint_order(config.joints, model_joints, file)
        self.task_frame = self.frame(config.task_frame, config.task_offset_m, file,
                                     "arm.task_frame")
        self._ws = self.body.workspace()  # for hand_pose
        #: the frame goals and hand positions are expressed in
        self.base_frame: str = config.base_frame or (
            "world" if self.is_mjcf else self.body.body_names()[0])
        self.joint_names: tuple[str, ...] = tuple(model_joints)
        self.n_joints = len(model_joints)
        self.lower_rad: FloatArray = self.body.lower_rad.copy()
        self.upper_rad: FloatArray = self.body.upper_rad.copy()
        if not np.all(self.upper_rad > self.lower_rad):
            raise ConfigError(str(path), "<joint limits>", "lower < upper for every joint",
                              list(zip(self.joint_names, self.lower_rad, self.upper_rad)))

    def _load_mjcf(self, path: Path) -> tuple[float, ...]:
        """Read the MJCF at ``path`` into :attr:`body` (MuJoCo), its joint equality
        constraints into :attr:`coupling`; returns the MJCF's ``<option gravity>`` [m/s^2]."""
        from musculo_control.model.joint_coupling import JointCoupling  # MJCF robots only
        from musculo_control.model.mujoco_body import MujocoBody
        from musculo_control.model.mujoco_tendons import compile_spec, mjcf_spec

        mj = compile_spec(mjcf_spec(path), path)
        self.coupling = JointCoupling(mj, str(path))
        self.body = MujocoBody(mj, self.coupling)
        return tuple(float(v) for v in mj.opt.gravity)

    def _load_urdf(self, path: Path) -> None:
        """Read the URDF at ``path`` into :attr:`body` (Pinocchio), refusing what it cannot
        be: a file Pinocchio cannot parse, a joint other than revolute or prismatic, a moving
        link without mass."""
        try:
            model = pin.buildModelFromUrdf(str(path))
        except (RuntimeError, ValueError) as exc:
            raise ConfigError(str(path), "<file>", "a URDF Pinocchio can parse",
                              str(exc).strip().splitlines()[-1]) from exc
        self._pinocchio = model
        self.body = PinocchioBody(model)
        if model.nq != model.nv or model.nq != len(self.body.joint_names):
            raise ConfigError(str(path), "<joints>", "revolute or prismatic joints only",
                              f"nq={model.nq}, nv={model.nv}")
        for i in range(1, model.njoints):
            if model.inertias[i].mass <= 0.0:
                raise ConfigError(str(path), f"link '{self._link_of_joint(i)}'.inertial.mass",
                                  "a positive mass on every moving link",
                                  model.inertias[i].mass)

    def _check_joint_order(self, joints: tuple[str, ...], model_joints: list[str],
                           file: str) -> None:
        """robot.yaml's ``arm.joints`` must repeat the description's (independent) joints in
        its order; a :class:`ConfigError` names the first unknown one, or the order."""
        if list(joints) == model_joints:
            return
        what = "independent joint" if self.coupling is not None and \
            not self.coupling.trivial else "joint"
        for i, name in enumerate(joints):
            if name not in model_joints:
                raise ConfigError(
                    file, f"arm.joints[{i}]", f"a{'n' if what[0] == 'i' else ''} {what} of "
                    f"the {self.kind} {model_joints}{self._coupled_hint(name)}", name)
        raise ConfigError(file, "arm.joints", f"the {self.kind}'s {what} order {model_joints}",
                          list(joints))

    # -- frames ------------------------------------------------------------------------------------
    def frame(self, name: str, offset_m: npt.ArrayLike, file: str, key: str) -> Frame:
        """The frame called ``name`` (offset in its axes) or a :class:`ConfigError` at ``key``
        listing what the description has (doc/mjcf_models.md, "Frame names")."""
        found = self.body.find_frame(name, np.asarray(offset_m, dtype=float))
        if found is None:
            raise ConfigError(file, key, self.body.frame_names(), name)
        return found

    def _coupled_hint(self, name: str) -> str:
        if self.coupling is None or not isinstance(self.body, _mujoco_body_type()):
            return ""
        model = self.coupling.model
        for c in self.coupling.coupled:
            if model.joint(c).name == name:
                x, e = self.coupling.driver[c]
                by = f"joint '{model.joint(x).name}'" if x >= 0 else "a constant"
                return (f" ('{name}' follows {by} through the equality constraint "
                        f"'{model.equality(e).name}': it is not a coordinate of its own)")
        return ""

    @property
    def model(self) -> pin.Model:
        """Pinocchio's model of a URDF robot (an MJCF robot has none: see :attr:`body`)."""
        if self._pinocchio is None:
            raise TypeError(f"{self.description_path.name}: an MJCF robot computes with MuJoCo "
                            "(Arm.body); it has no Pinocchio model")
        return self._pinocchio

    @property
    def task_frame_id(self) -> int:
        """Pinocchio frame id of the task point (URDF robots)."""
        self.model  # noqa: B018 (raises for an MJCF robot)
        return self.task_frame.handle

    def hand_pose(self, q: FloatArray, data: Any = None) -> tuple[FloatArray, FloatArray]:
        """Forward kinematics of the task point: position [m] (3,) and rotation world_R_hand
        (3, 3) at ``q`` in the base frame; the one hand pose function of the package.

        ``data``: a workspace of :attr:`body` to compute in (default: the arm's own, so not to
        be shared across threads).
        """
        return self.body.poses(self._ws if data is None else data, q, (self.task_frame,))[0]

    def frame_names(self) -> str:
        """What a frame key of the config accepts (for messages)."""
        return self.body.frame_names()

    def link_names(self) -> list[str]:
        """Named bodies of the description (URDF links), the base or world excluded for an
        MJCF."""
        return self.body.body_names()

    def _link_of_joint(self, joint_id: int) -> str:
        for f in self.model.frames:
            if f.type == pin.FrameType.BODY and f.parentJoint == joint_id:
                return str(f.name)
        return str(self.model.names[joint_id])

    def link_placement(self, link: str) -> tuple[int, pin.SE3]:
        """(Pinocchio joint id the link rides on, placement of the link frame in that joint);
        URDF robots."""
        fid = self.model.getFrameId(link, pin.FrameType.BODY)
        frame = self.model.frames[fid]
        return int(frame.parentJoint), frame.placement

    def check_q(self, q: npt.ArrayLike, what: str = "q") -> FloatArray:
        """Return ``q`` as a float array of length n_joints, or raise :class:`InputError`."""
        arr = np.asarray(q, dtype=float)
        if arr.shape != (self.n_joints,):
            raise InputError(what, f"{self.n_joints} joint values {list(self.joint_names)}",
                             arr.shape)
        if not math.isfinite(arr.dot(arr)):  # a NaN or inf (or |q| > 1e154) makes it non-finite
            raise InputError(what, "finite values", arr.tolist())
        return arr

    def support_mask(self, joint_id: int) -> npt.NDArray[np.bool_]:
        """(n,) bool: which velocity columns move a body fixed to Pinocchio joint ``joint_id``
        (URDF robots)."""
        model = self.model
        mask = np.zeros(model.nv, dtype=bool)
        for j in model.supports[joint_id]:
            if j > 0:
                idx = model.joints[j].idx_v
                mask[idx: idx + model.joints[j].nv] = True
        return mask


def _mujoco_body_type() -> type:
    from musculo_control.model.mujoco_body import MujocoBody

    return MujocoBody
