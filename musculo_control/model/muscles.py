"""The muscles file, and the via-point backend of the muscle geometry.

The muscles file lists every muscle: its actuator, whether the QP controls it, and its route:
either a chain of via-points fixed to links (a URDF robot) or the name of one of the MJCF's
spatial tendons (an MJCF robot; see :mod:`musculo_control.model.mujoco_tendons`).

Via-point routes (:class:`ViaPointGeometry`): a muscle path is a polyline p_0 ... p_K whose
points ride on links. Its length is
``l = sum_k |d_k|`` with ``d_k = p_{k+1} - p_k``; row i of the muscle Jacobian ``Jm = dl/dq``
(m x n) is ``sum_k (d_k/|d_k|)^T (J_{p_{k+1}} - J_{p_k})`` with ``J_p`` the world-frame point
Jacobian (SPEC section 9). A pulling muscle shortens, so its joint torque is ``-Jm^T f``
(SPEC section 2).

Everything is vectorised over all segments of all muscles at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.errors import ConfigError
from musculo_control.model.arm import Arm
from musculo_control.model.config import spec
from musculo_control.model.geometry import MuscleKinematics

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class ViaPoint:
    """One point of a muscle path, fixed to a link."""

    link: str = spec(doc="URDF link the point is fixed to")
    point_m: tuple[float, ...] = spec(length=3, doc="position in the link frame [m]")


@dataclass(frozen=True, kw_only=True)
class MomentArmSign:
    """A sign the model must keep over the whole joint range (checked at load)."""

    joint: str = spec(doc="joint name (robot.yaml arm.joints)")
    sign: int = spec(doc="+1: the muscle turns the joint positive (its length falls as the "
                         "angle grows); -1: negative")

    def check(self, file: str, key: str) -> None:
        if self.sign not in (-1, 1):
            raise ConfigError(file, f"{key}.sign", "+1 or -1", self.sign)


@dataclass(frozen=True, kw_only=True)
class MuscleSpec:
    """One tendon-driven muscle: its route and how the controller treats it."""

    name: str = spec(doc="muscle name, unique")
    actuator_id: int = spec(ge=0, doc="id of the tendon actuator module that drives it")
    path: tuple[ViaPoint, ...] | None = spec(
        None, min_length=2, doc="via-points from origin to insertion (a URDF robot)")
    tendon: str | None = spec(
        None, doc="spatial tendon of the MJCF (an MJCF robot); default: the muscle's name")
    controlled: bool = spec(True, doc="true: the QP sets its tension; false: fixed tension")
    fixed_tension_n: float | None = spec(None, gt=0.0, doc="tension of an uncontrolled muscle [N]")
    length_range_m: tuple[float, ...] | None = spec(
        None, length=2, gt=0.0, doc="measured [l_min, l_max] [m]; sampled over the joint range "
                                    "if absent")
    f1_n: float | None = spec(
        None, gt=0.0, doc="peak active force f1 of this muscle [N]; default: the MJCF muscle "
                          "actuator's force, else robot.yaml hill.f1_n")
    moment_arm_signs: tuple[MomentArmSign, ...] = spec(
        (), doc="signs its moment arms must keep over the joint range; checked at load")

    def check(self, file: str, key: str) -> None:
        if not self.controlled and self.fixed_tension_n is None:
            raise ConfigError(file, f"{key}.fixed_tension_n",
                              "a tension for a muscle with controlled: false", None)
        if self.controlled and self.fixed_tension_n is not None:
            raise ConfigError(file, f"{key}.fixed_tension_n",
                              "no fixed tension on a controlled muscle", self.fixed_tension_n)
        if self.length_range_m is not None and self.length_range_m[0] >= self.length_range_m[1]:
            raise ConfigError(file, f"{key}.length_range_m", "l_min < l_max",
                              list(self.length_range_m))
        if self.path is not None and self.tendon is not None:
            raise ConfigError(file, f"{key}.tendon",
                              "either a via-point path (URDF) or a tendon (MJCF), not both",
                              self.tendon)
        joints = [s.joint for s in self.moment_arm_signs]
        if len(set(joints)) != len(joints):
            raise ConfigError(file, f"{key}.moment_arm_signs", "one entry per joint", joints)


@dataclass(frozen=True, kw_only=True)
class MusclesConfig:
    """The muscles file."""

    muscles: tuple[MuscleSpec, ...] = spec(min_length=1, doc="every muscle of the arm")
    length_range_samples: int = spec(4096, ge=16, doc="random poses sampled for l_min, l_max")
    length_range_seed: int = spec(0, ge=0, doc="seed of that sampling")

    def check(self, file: str, key: str) -> None:
        seen: dict[object, int] = {}
        for i, m in enumerate(self.muscles):
            for label, value in (("name", m.name), ("actuator_id", m.actuator_id)):
                tag = (label, value)
                if tag in seen:
                    raise ConfigError(file, f"muscles[{i}].{label}",
                                      f"a unique {label} (muscles[{seen[tag]}] has it)", value)
                seen[tag] = i


class ViaPointGeometry:
    """The via-point paths of all muscles, prepared for vectorised evaluation.

    Implements :class:`~musculo_control.model.geometry.MuscleGeometry`.
    """

    def __init__(self, arm: Arm, config: MusclesConfig, file: str) -> None:
        self.arm = arm
        self.names: tuple[str, ...] = tuple(m.name for m in config.muscles)
        self.n_muscles = len(self.names)
        self.source = f"via-points of {file} on {arm.description_path.name}"
        links = arm.link_names()
        points: list[FloatArray] = []
        joints: list[int] = []
        seg_a, seg_b, seg_muscle = [], [], []
        paths = []
        for i, m in enumerate(config.muscles):
            if m.path is None:
                raise ConfigError(file, f"muscles[{i}].path",
                                  f"via-points for muscle '{m.name}' (a URDF robot's muscles are "
                                  f"via-point chains)", None)
            paths.append(m.path)
        for i, (m, path) in enumerate(zip(config.muscles, paths)):
            first = len(points)
            for k, vp in enumerate(path):
                if vp.link not in links:
                    raise ConfigError(file, f"muscles[{i}].path[{k}].link",
                                      f"a link of the URDF {links}", vp.link)
                joint_id, placement = arm.link_placement(vp.link)
                points.append(placement.act(np.asarray(vp.point_m, dtype=float)))
                joints.append(joint_id)
            for k in range(first, len(points) - 1):
                if joints[k] != joints[k + 1]:  # same-link segments never change length
                    seg_a.append(k)
                    seg_b.append(k + 1)
                    seg_muscle.append(i)
            if first + 1 == len(points):
                raise ConfigError(file, f"muscles[{i}].path", "at least two via-points", 1)
            if len({joints[k] for k in range(first, len(points))}) < 2:
                raise ConfigError(file, f"muscles[{i}].path",
                                  f"via-points on at least two links so that muscle "
                                  f"'{m.name}' spans a joint", [p.link for p in path])
        self._points_local = np.array(points)  # (P, 3) in the frame of their joint
        self._point_joint = np.array(joints, dtype=int)  # (P,)
        self._seg_a = np.array(seg_a, dtype=int)  # (S,)
        self._seg_b = np.array(seg_b, dtype=int)
        # constant length of segments between points on one link, per muscle [m]
        const = np.zeros(self.n_muscles)
        for i, path in enumerate(paths):
            for a, b in zip(path[:-1], path[1:]):
                if arm.link_placement(a.link)[0] == arm.link_placement(b.link)[0]:
                    pa = arm.link_placement(a.link)[1].act(np.asarray(a.point_m, float))
                    pb = arm.link_placement(b.link)[1].act(np.asarray(b.point_m, float))
                    const[i] += float(np.linalg.norm(pb - pa))
        self._const_length = const
        # (m, S) summation matrix from segments to muscles
        self._sum = np.zeros((self.n_muscles, len(seg_a)))
        self._sum[np.array(seg_muscle, dtype=int), np.arange(len(seg_a))] = 1.0
        # (S, n) support of the segment's end point minus that of its start point: +1, 0, -1
        support = np.array([arm.support_mask(j) for j in joints], dtype=float)  # (P, n)
        self._seg_support = support[self._seg_b] - support[self._seg_a]
        self._used_joints = [int(j) for j in np.unique(self._point_joint)]
        self._splits = np.cumsum([len(p) for p in paths])[:-1]  # muscle boundaries in (P,)
        self._local = threading.local()  # per-thread Pinocchio data and scratch

    def _scratch(self) -> threading.local:
        local = self._local
        if not hasattr(local, "data"):
            local.data = self.arm.model.createData()
            local.rot = np.zeros((self.arm.model.njoints, 3, 3))  # joint rotations
            local.trans = np.zeros((self.arm.model.njoints, 3))  # joint positions
        return local

    def point_positions(self, data: pin.Data) -> FloatArray:
        """(P, 3) world positions of all via-points, from joint placements in ``data``."""
        local = self._scratch()
        rot, trans = local.rot, local.trans
        for j in self._used_joints:
            oMi = data.oMi[j]
            rot[j] = oMi.rotation
            trans[j] = oMi.translation
        pj = self._point_joint
        return np.matmul(rot[pj], self._points_local[:, :, None])[:, :, 0] + trans[pj]

    def kinematics_after_jacobians(self, q: FloatArray, data: pin.Data) -> MuscleKinematics:
        """Lengths and Jacobian from a ``data`` on which ``computeJointJacobians`` has run.

        ``data.J`` holds each joint's motion column [v; w] in the world frame (v taken at the
        world origin), so a point p moves with ``v + w x p`` per column. Projected on the
        segment's unit vector u, both end points share the moment ``p x u`` of the segment's
        line (d is parallel to u), so a segment's row is ``[u; p_b x u]^T data.J`` masked by
        the difference of the two end points' supports.
        """
        p = self.point_positions(data)
        pa, pb = p[self._seg_a], p[self._seg_b]
        d = pb - pa  # (S, 3)
        seg_len = np.sqrt(np.einsum("ij,ij->i", d, d))
        u = d / np.maximum(seg_len, 1e-12)[:, None]  # guard a degenerate segment
        screw = np.empty((len(u), 6))
        screw[:, :3] = u
        # moment of the segment's line about the world origin: p_b x u
        screw[:, 3] = pb[:, 1] * u[:, 2] - pb[:, 2] * u[:, 1]
        screw[:, 4] = pb[:, 2] * u[:, 0] - pb[:, 0] * u[:, 2]
        screw[:, 5] = pb[:, 0] * u[:, 1] - pb[:, 1] * u[:, 0]
        rows = (screw @ data.J) * self._seg_support  # (S, n)
        return MuscleKinematics(self._sum @ seg_len + self._const_length, self._sum @ rows)

    def lengths_at(self, q: FloatArray) -> FloatArray:
        """(m,) muscle lengths at ``q`` (forward kinematics only) [m]."""
        data = self._scratch().data
        pin.forwardKinematics(self.arm.model, data, q)
        p = self.point_positions(data)
        d = p[self._seg_b] - p[self._seg_a]
        return self._sum @ np.sqrt(np.einsum("ij,ij->i", d, d)) + self._const_length

    def kinematics_at(self, q: FloatArray) -> MuscleKinematics:
        """Lengths and Jacobian at ``q``."""
        data = self._scratch().data
        pin.computeJointJacobians(self.arm.model, data, q)
        return self.kinematics_after_jacobians(q, data)

    def paths_at(self, q: FloatArray) -> list[FloatArray]:
        """One (k_i, 3) array of via-point world positions [m] per muscle."""
        data = self._scratch().data
        pin.forwardKinematics(self.arm.model, data, q)
        return [p.copy() for p in np.split(self.point_positions(data), self._splits)]
