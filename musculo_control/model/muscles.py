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

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError, ErrorCollector
from musculo_control.model.arm import Arm
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
        paths = _checked_paths(arm, config, file)
        points, joints, seg_a, seg_b, seg_muscle = _chains(arm, paths)
        self._points_local = np.array(points)  # (P, 3) in the frame of their joint
        self._point_joint = np.array(joints, dtype=int)  # (P,)
        self._seg_a = np.array(seg_a, dtype=int)  # (S,)
        self._seg_b = np.array(seg_b, dtype=int)
        # constant length of segments between points on one link, per muscle [m]
        self._const_length = _constant_lengths(arm, paths, self.n_muscles)
        # (m, S) summation matrix from segments to muscles
        self._sum = np.zeros((self.n_muscles, len(seg_a)))
        self._sum[np.array(seg_muscle, dtype=int), np.arange(len(seg_a))] = 1.0
        # (S, n) support of the segment's end point minus that of its start point: +1, 0, -1
        support = np.array([arm.support_mask(j) for j in joints], dtype=float)  # (P, n)
        self._seg_support = support[self._seg_b] - support[self._seg_a]
        self._used_joints = [int(j) for j in np.unique(self._point_joint)]
        self._splits = np.cumsum([len(p) for p in paths])[:-1]  # muscle boundaries in (P,)
        self._index_positions(joints)
        self._n_segments = len(seg_a)
        # the universe (joint 0) never moves: its identity placement is written once
        self._moving = [(k, j) for k, j in enumerate(self._used_joints) if j != 0]
        self._half = np.full(6, 0.5)  # |d|^2 from the doubled [d d] rows
        self._tiny = np.full(len(seg_a), 1e-12)  # guards a degenerate segment [m]
        self._local = threading.local()  # per-thread Pinocchio data and scratch

    def _index_positions(self, joints: list[int]) -> None:
        """Prepare the via-points' world positions as one product: the stacked [R | t] rows
        of the joints that carry points (3K x 4) times all points in homogeneous form (4 x P).
        Entry (3 k + i, p) is coordinate i of point p moved by joint k; flat indices pick each
        point's own joint (``joints``, (P,)). The segments' two ends are picked as (S, 6) rows
        [x y z x y z], so that the cross product of the Jacobian needs only slices of them."""
        n_points = len(joints)
        slot = {j: k for k, j in enumerate(self._used_joints)}
        k_of_point = np.array([slot[j] for j in joints])
        self._points_h = np.vstack([self._points_local.T, np.ones(n_points)])  # (4, P)
        take = (3 * k_of_point[:, None] + np.arange(3)) * n_points \
            + np.arange(n_points)[:, None]  # (P, 3)
        self._take_all = take.ravel()
        self._take_ends = np.hstack([take, take])[np.r_[self._seg_a, self._seg_b]]  # (2S, 6)

    def _scratch(self) -> threading.local:
        local = self._local
        if not hasattr(local, "data"):
            local.data = self.arm.model.createData()
            local.placements = np.zeros((len(self._used_joints), 4, 4))  # oMi
            local.placements[:] = np.eye(4)
            local.screw = np.zeros((self._n_segments, 6))  # [u; p_b x u] per segment
        return local

    def _moved_points(self, data: pin.Data) -> FloatArray:
        """(3K P,) every via-point moved by every joint that carries points (see __init__)."""
        placements = self._scratch().placements
        oMi = data.oMi
        for k, j in self._moving:
            placements[k] = oMi[j].homogeneous
        return placements[:, :3, :].reshape(-1, 4).dot(self._points_h).reshape(-1)

    def point_positions(self, data: pin.Data) -> FloatArray:
        """(P, 3) world positions of all via-points, from joint placements in ``data``."""
        return self._moved_points(data).take(self._take_all).reshape(-1, 3)

    def _segment_ends(self, data: pin.Data) -> tuple[FloatArray, FloatArray]:
        """(S, 6) world positions [x y z x y z] of the start and end points of the segments."""
        ends = self._moved_points(data).take(self._take_ends)
        return ends[: self._n_segments], ends[self._n_segments:]

    def kinematics_after_jacobians(self, q: FloatArray, data: pin.Data) -> MuscleKinematics:
        """Lengths and Jacobian from a ``data`` on which ``computeJointJacobians`` has run.

        ``data.J`` holds each joint's motion column [v; w] in the world frame (v taken at the
        world origin), so a point p moves with ``v + w x p`` per column. Projected on the
        segment's unit vector u, both end points share the moment ``p x u`` of the segment's
        line (d is parallel to u), so a segment's row is ``[u; p_b x u]^T data.J`` masked by
        the difference of the two end points' supports.
        """
        pa, pb = self._segment_ends(data)  # (S, 6) each, [x y z x y z]
        d = pb - pa
        seg_len = np.sqrt((d * d).dot(self._half))
        u = d / np.maximum(seg_len, self._tiny)[:, None]  # [ux uy uz ux uy uz]
        screw = self._scratch().screw
        screw[:, :3] = u[:, :3]
        # moment of the segment's line about the world origin: p_b x u, from shifted slices
        moment = screw[:, 3:]
        np.multiply(pb[:, 1:4], u[:, 2:5], out=moment)
        moment -= pb[:, 2:5] * u[:, 1:4]
        rows = screw.dot(data.J)  # (S, n)
        rows *= self._seg_support
        length = self._sum.dot(seg_len)
        length += self._const_length
        return MuscleKinematics(length, self._sum.dot(rows))

    def lengths_at(self, q: FloatArray) -> FloatArray:
        """(m,) muscle lengths at ``q`` (forward kinematics only) [m]."""
        data = self._scratch().data
        pin.forwardKinematics(self.arm.model, data, q)
        pa, pb = self._segment_ends(data)
        d = pb - pa
        return self._sum.dot(np.sqrt((d * d).dot(self._half))) + self._const_length

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


def _checked_paths(arm: Arm, config: MusclesConfig, file: str) -> list[tuple[ViaPoint, ...]]:
    """Every muscle's via-points, refused with every mistake at once (an
    :class:`ErrorCollector`): a link the URDF lacks, no path, fewer than two points, or
    points all on one link (a muscle that spans no joint)."""
    links = arm.link_names()
    paths: list[tuple[ViaPoint, ...]] = []
    found = ErrorCollector()  # every muscle's mistakes in one run
    for i, m in enumerate(config.muscles):
        path = m.path or ()
        bad = [k for k, vp in enumerate(path) if vp.link not in links]
        for k in bad:
            found.add(ConfigError(file, f"muscles[{i}].path[{k}].link",
                                  f"a link of the URDF {links}", path[k].link))
        if m.path is None:
            found.add(ConfigError(file, f"muscles[{i}].path",
                                  f"via-points for muscle '{m.name}' (a URDF robot's muscles "
                                  f"are via-point chains)", None))
        elif len(path) < 2:
            found.add(ConfigError(file, f"muscles[{i}].path", "at least two via-points",
                                  len(path)))
        elif not bad and len({arm.link_placement(vp.link)[0] for vp in path}) < 2:
            found.add(ConfigError(file, f"muscles[{i}].path",
                                  f"via-points on at least two links so that muscle "
                                  f"'{m.name}' spans a joint", [p.link for p in path]))
        paths.append(path)
    found.raise_any()
    return paths


def _chains(arm: Arm, paths: list[tuple[ViaPoint, ...]]) -> tuple[
        list[FloatArray], list[int], list[int], list[int], list[int]]:
    """The muscles' via-points in their joints' frames and the segments that change length:
    (points (P of (3,)) [m], each point's Pinocchio joint (P), each segment's start and end
    point (S each), each segment's muscle (S)). A segment between two points on one link
    never changes length (:func:`_constant_lengths`)."""
    points: list[FloatArray] = []
    joints: list[int] = []
    seg_a: list[int] = []
    seg_b: list[int] = []
    seg_muscle: list[int] = []
    for i, path in enumerate(paths):
        first = len(points)
        for vp in path:
            joint_id, placement = arm.link_placement(vp.link)
            points.append(placement.act(np.asarray(vp.point_m, dtype=float)))
            joints.append(joint_id)
        for k in range(first, len(points) - 1):
            if joints[k] != joints[k + 1]:  # same-link segments never change length
                seg_a.append(k)
                seg_b.append(k + 1)
                seg_muscle.append(i)
    return points, joints, seg_a, seg_b, seg_muscle


def _constant_lengths(arm: Arm, paths: list[tuple[ViaPoint, ...]], m: int) -> FloatArray:
    """(m,) the summed length of each muscle's segments between two points on one link [m]."""
    const = np.zeros(m)
    for i, path in enumerate(paths):
        for a, b in zip(path[:-1], path[1:]):
            if arm.link_placement(a.link)[0] == arm.link_placement(b.link)[0]:
                pa = arm.link_placement(a.link)[1].act(np.asarray(a.point_m, float))
                pb = arm.link_placement(b.link)[1].act(np.asarray(b.point_m, float))
                const[i] += float(np.linalg.norm(pb - pa))
    return const
