"""The rigid-body arm: a Pinocchio model built from the URDF, with named joints and frames."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.errors import ConfigError, InputError
from musculo_control.model.config import spec

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class ArmConfig:
    """Which URDF, which joints in which order, and the task frame."""

    urdf: str = spec(doc="URDF file, relative to the config folder")
    joints: tuple[str, ...] = spec(min_length=1, doc="actuated joints in controller order")
    task_frame: str = spec(doc="frame whose pose is the task (the hand point)")
    gravity_m_s2: tuple[float, ...] = spec((0.0, 0.0, -9.81), length=3, doc="gravity [m/s^2]")


class Arm:
    """Pinocchio model of the arm plus the name lookups the rest of the code needs.

    Joint order is the URDF's kinematic order, which the config must repeat (so that a vector
    ``q`` means the same thing everywhere); the constructor checks this.
    """

    def __init__(self, config: ArmConfig, config_dir: Path, file: str) -> None:
        urdf_path = Path(config_dir) / config.urdf
        if not urdf_path.is_file():
            raise ConfigError(file, "arm.urdf", "an existing URDF file", str(urdf_path))
        try:
            self.model = pin.buildModelFromUrdf(str(urdf_path))
        except (RuntimeError, ValueError) as exc:
            raise ConfigError(str(urdf_path), "<file>", "a URDF Pinocchio can parse",
                              str(exc)) from exc
        self.urdf_path = urdf_path
        self.model.gravity.linear = np.asarray(config.gravity_m_s2, dtype=float)
        self.config = config
        urdf_joints = [str(self.model.names[i]) for i in range(1, self.model.njoints)]
        if list(config.joints) != urdf_joints:
            for i, name in enumerate(config.joints):
                if name not in urdf_joints:
                    raise ConfigError(
                        file, f"arm.joints[{i}]", f"a joint of the URDF {urdf_joints}", name
                    )
            raise ConfigError(file, "arm.joints", f"the URDF's joint order {urdf_joints}",
                              list(config.joints))
        if self.model.nq != self.model.nv or self.model.nq != len(urdf_joints):
            raise ConfigError(str(urdf_path), "<joints>", "revolute or prismatic joints only",
                              f"nq={self.model.nq}, nv={self.model.nv}")
        for i in range(1, self.model.njoints):
            if self.model.inertias[i].mass <= 0.0:
                child = self._body_name_of_joint(i)
                raise ConfigError(str(urdf_path), f"link '{child}'.inertial.mass",
                                  "a positive mass on every moving link",
                                  self.model.inertias[i].mass)
        if not self.model.existFrame(config.task_frame):
            raise ConfigError(file, "arm.task_frame", f"a frame of the URDF {self.frame_names()}",
                              config.task_frame)
        self.task_frame_id = self.model.getFrameId(config.task_frame)
        self.joint_names: tuple[str, ...] = tuple(urdf_joints)
        self.n_joints = len(urdf_joints)
        self.lower_rad: FloatArray = np.array(self.model.lowerPositionLimit, dtype=float)
        self.upper_rad: FloatArray = np.array(self.model.upperPositionLimit, dtype=float)
        if not np.all(self.upper_rad > self.lower_rad):
            raise ConfigError(str(urdf_path), "<joint limits>", "lower < upper for every joint",
                              list(zip(self.lower_rad, self.upper_rad)))

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
