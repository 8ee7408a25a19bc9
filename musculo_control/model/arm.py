"""The rigid-body arm: a Pinocchio model built from a URDF or an MJCF, with named joints and frames.

A config folder names one robot description: a URDF (``arm.urdf``) or a MuJoCo MJCF
(``arm.mjcf``), each read by Pinocchio's own parser. An MJCF's reading is checked against
MuJoCo's at load (:mod:`musculo_control.model.mjcf_reader`), and gravity comes from the file's
``<option gravity>`` unless robot.yaml sets it. Only fixed-base arms of revolute and prismatic
joints are supported: an MJCF with a free or ball joint, or with equality constraints that
couple joints, is refused with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError, InputError

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
    task_frame: str = spec(doc="frame whose pose is the task (the hand point): a URDF link, or "
                               "an MJCF body, site or joint")
    task_offset_m: tuple[float, ...] = spec(
        (0.0, 0.0, 0.0), length=3,
        doc="the task point in task_frame's axes [m]; zero: task_frame's origin")
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
    """Pinocchio model of the arm plus the name lookups the rest of the code needs.

    Joint order is the description's kinematic order, which the config must repeat (so that a
    vector ``q`` means the same thing everywhere); the constructor checks this.
    """

    def __init__(self, config: ArmConfig, config_dir: Path, file: str) -> None:
        path = Path(config_dir) / config.description
        self.is_mjcf = config.mjcf is not None
        self.kind = "MJCF" if self.is_mjcf else "URDF"
        kind = self.kind
        if not path.is_file():
            raise ConfigError(file, config.description_key, f"an existing {kind} file", str(path))
        #: how Pinocchio read the description, when not directly (see model/mjcf_reader.py)
        self.read_note = ""
        gravity = config.gravity_m_s2
        if self.is_mjcf:
            from musculo_control.model.mjcf_reader import read_mjcf  # MuJoCo: MJCF robots only

            reading = read_mjcf(path)
            self.model = reading.model
            self.read_note = reading.note
            gravity = gravity or reading.gravity_m_s2
        else:
            try:
                self.model = pin.buildModelFromUrdf(str(path))
            except (RuntimeError, ValueError) as exc:
                raise ConfigError(str(path), "<file>", "a URDF Pinocchio can parse",
                                  str(exc).strip().splitlines()[-1]) from exc
        self.description_path = path
        self.gravity_m_s2: FloatArray = np.asarray(gravity or _URDF_GRAVITY_M_S2, dtype=float)
        self.model.gravity.linear = self.gravity_m_s2
        g = float(np.linalg.norm(self.gravity_m_s2))
        #: (3,) "up": against gravity (base z without gravity); heights are measured along it
        self.up: FloatArray = -self.gravity_m_s2 / g if g > 0.0 else np.array([0.0, 0.0, 1.0])
        self.config = config
        model_joints = [str(self.model.names[i]) for i in range(1, self.model.njoints)]
        if list(config.joints) != model_joints:
            for i, name in enumerate(config.joints):
                if name not in model_joints:
                    raise ConfigError(
                        file, f"arm.joints[{i}]", f"a joint of the {kind} {model_joints}", name
                    )
            raise ConfigError(file, "arm.joints", f"the {kind}'s joint order {model_joints}",
                              list(config.joints))
        if self.model.nq != self.model.nv or self.model.nq != len(model_joints):
            raise ConfigError(str(path), "<joints>", "revolute or prismatic joints only",
                              f"nq={self.model.nq}, nv={self.model.nv}")
        for i in range(1, self.model.njoints):
            if self.model.inertias[i].mass <= 0.0:
                child = self._body_name_of_joint(i)
                where = f"body '{child}' mass" if self.is_mjcf \
                    else f"link '{child}'.inertial.mass"
                raise ConfigError(str(path), where, "a positive mass on every moving link",
                                  self.model.inertias[i].mass)
        if not self.model.existFrame(config.task_frame):
            raise ConfigError(file, "arm.task_frame", f"a frame of the {kind} "
                              f"{self.frame_names()}", config.task_frame)
        self.task_frame_id = self._add_task_point(config)
        self._data = self.model.createData()  # for hand_pose (after the task point is added)
        #: the frame goals and hand positions are expressed in (Pinocchio's world)
        self.base_frame: str = config.base_frame or (
            "world" if self.is_mjcf else str(self.model.frames[1].name))
        self.joint_names: tuple[str, ...] = tuple(model_joints)
        self.n_joints = len(model_joints)
        self.lower_rad: FloatArray = np.array(self.model.lowerPositionLimit, dtype=float)
        self.upper_rad: FloatArray = np.array(self.model.upperPositionLimit, dtype=float)
        if not np.all(self.upper_rad > self.lower_rad):
            raise ConfigError(str(path), "<joint limits>", "lower < upper for every joint",
                              list(zip(self.joint_names, self.lower_rad, self.upper_rad)))

    def _add_task_point(self, config: ArmConfig) -> int:
        """Frame id of the task point: ``task_frame`` itself, or a frame added at the offset."""
        fid = self.model.getFrameId(config.task_frame)
        offset = np.asarray(config.task_offset_m, dtype=float)
        if not np.any(offset):
            return int(fid)
        frame = self.model.frames[fid]
        placement = frame.placement * pin.SE3(np.eye(3), offset)
        return int(self.model.addFrame(pin.Frame(f"{config.task_frame}+task_offset",
                                                 frame.parentJoint, fid, placement,
                                                 pin.FrameType.OP_FRAME)))

    def hand_pose(self, q: FloatArray, data: pin.Data | None = None
                  ) -> tuple[FloatArray, FloatArray]:
        """Forward kinematics of the task point: position [m] (3,) and rotation world_R_hand
        (3, 3) at ``q`` in the base frame; the one hand pose function of the package.

        ``data``: Pinocchio data to compute in (default: the arm's own, so not to be shared
        across threads).
        """
        if data is None:
            data = self._data
        pin.forwardKinematics(self.model, data, q)
        placement = pin.updateFramePlacement(self.model, data, self.task_frame_id)
        return placement.translation.copy(), placement.rotation.copy()

    def frame_names(self) -> list[str]:
        return [str(f.name) for f in self.model.frames]

    def link_names(self) -> list[str]:
        return [str(f.name) for f in self.model.frames if f.type == pin.FrameType.BODY]

    def _body_name_of_joint(self, joint_id: int) -> str:
        for f in self.model.frames:
            if f.type == pin.FrameType.BODY and f.parentJoint == joint_id:
                return str(f.name)
        return str(self.model.names[joint_id])

    def link_placement(self, link: str) -> tuple[int, pin.SE3]:
        """(Pinocchio joint id the link rides on, placement of the link frame in that joint)."""
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
        """(n,) bool: which velocity columns move a body fixed to ``joint_id``."""
        mask = np.zeros(self.model.nv, dtype=bool)
        for j in self.model.supports[joint_id]:
            if j > 0:
                idx = self.model.joints[j].idx_v
                mask[idx: idx + self.model.joints[j].nv] = True
        return mask
