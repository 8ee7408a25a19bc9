"""Experiment poses: the arm placed by hand position and elbow height (SPEC sections 1 and 8).

The paper's experiments start from poses described by where the hand is and how high the elbow
is (experiment C: "released from a high-elbow pose"; experiment B: start poses A, B, C with the
hand at the trajectory start and rising elbow height). :class:`PoseSolver` turns such a
description into joint angles by damped least squares on up to four equations,

    x_hand(q) = x_target  (3 rows)      h_elbow(q) = h_target  (1 row, when a height is given),

where the height h is measured along the up direction, against gravity (``-g / |g|``; world z
for an arm whose gravity is (0, 0, -9.81)). An arm with few joints (two, in a vertical plane)
places its hand alone: the elbow then follows from the hand and the branch of the start pose.
Only the configured joints move (``ik_joints``; on the stand-in, the three shoulder joints and
the elbow flexion, so the forearm and wrist keep their start values), within the joint limits:
a joint at a limit whose step would push it further out is frozen for that step. The step is

    dq = J^T (J J^T + mu^2 I)^-1 e      (Levenberg-Marquardt / damped least squares),

with ``e`` the stacked error [m] and ``J`` the matching rows of the frame Jacobians [m/rad].
Hand and elbow are frames of the description named in config, so another arm only changes
YAML.

Named poses are stored as (hand position, elbow height), not as joint vectors, so that they stay
true to their description when the model changes (a stored joint vector would silently stop
putting the hand at the trajectory start). Each is solved from the home pose (``home_pose_rad``),
which fixes the solution branch; the solve is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError, InputError, MusculoError
from musculo_control.model.arm import Arm

FloatArray = npt.NDArray[np.float64]


class PoseError(MusculoError):
    """The pose solver found no joint angles that meet the hand and elbow targets."""

    def __init__(self, what: str, hand_m: FloatArray, elbow_z_m: float | None,
                 hand_error_m: float, elbow_error_m: float, iterations: int,
                 at_limit: list[str]) -> None:
        self.hand_m = hand_m
        self.elbow_z_m = elbow_z_m
        self.hand_error_m = hand_error_m
        self.elbow_error_m = elbow_error_m
        self.iterations = iterations
        self.at_limit = at_limit
        limits = f"; joints at a limit: {', '.join(at_limit)}" if at_limit else ""
        elbow = "" if elbow_z_m is None else f" with the elbow at height {elbow_z_m:.4f} m"
        elbow_miss = "" if elbow_z_m is None else \
            f" and the elbow {elbow_error_m * 1e3:.2f} mm"
        super().__init__(
            f"{what}: no pose puts the hand at {np.round(hand_m, 4).tolist()} m{elbow}: after "
            f"{iterations} iterations the hand is {hand_error_m * 1e3:.2f} mm{elbow_miss} "
            f"away{limits}"
        )


@dataclass(frozen=True, kw_only=True)
class NamedPose:
    """One experiment pose, described by hand position and elbow height."""

    name: str = spec(doc="pose name, unique")
    elbow_z_m: float | None = spec(
        None, doc="height of the elbow frame above the base origin, along -gravity [m]; absent: "
                  "the hand alone places the arm (an arm without redundancy)")
    hand_m: tuple[float, ...] | None = spec(
        None, length=3, doc="task-frame position in the base frame [m]; default: the home pose's")
    doc: str = spec("", doc="what the pose is for")


@dataclass(frozen=True, kw_only=True)
class OperatingPointConfig:
    """``poses.operating_point``: what ``musculo operating-point`` checks (SPEC sections 1, 8C).
    The holds use the controller's own weights k and r (controller.yaml ``qp``)."""

    pose: str = spec(doc="named pose (poses.named) whose hold is the operating point")
    sweep_step_m: float = spec(gt=0.0, doc="elbow height step of the sweep [m]")
    sweep_drop_m: float = spec(gt=0.0,
                               doc="the sweep lowers the elbow by at most this much [m]")
    target_activation_norm: tuple[float, ...] = spec(
        length=2, gt=0.0,
        doc="[low, high] band the eq. 10 ||a|| at the pose should fall in (paper: about 10)")
    target_fall_ratio: float = spec(
        gt=0.0, le=1.0,
        doc="the sweep's last eq. 10 ||a|| is at most this fraction of its first (paper: 10 -> <5)")

    def check(self, file: str, key: str) -> None:
        lo, hi = self.target_activation_norm
        if lo >= hi:
            raise ConfigError(file, f"{key}.target_activation_norm", "low < high", [lo, hi])


@dataclass(frozen=True, kw_only=True)
class PosesConfig:
    """``robot.yaml`` section ``poses``: the pose solver and the experiments' named poses."""

    elbow_frame: str = spec(doc="frame whose origin is the elbow centre: a URDF link or joint, an "
                                "MJCF body, site or joint (doc/mjcf_models.md, 'Frame names')")
    ik_joints: tuple[str, ...] = spec(
        min_length=1, doc="joints the solver may move; the others keep their start values")
    hand_axes: tuple[str, ...] = spec(
        ("x", "y", "z"), min_length=1,
        doc="the base-frame axes of the hand position a pose must meet, a list of distinct "
            "names among x, y, z (e.g. [x, z]); an arm that moves in a plane not aligned with "
            "the base axes meets only the in-plane ones and the third follows "
            "(doc/mjcf_models.md, 'Planar arms')")
    tolerance_m: float = spec(1e-6, gt=0.0, doc="hand and elbow error at convergence [m]")
    damping_m: float = spec(1e-3, gt=0.0, doc="damping mu of the least-squares step [m]")
    max_step_rad: float = spec(0.2, gt=0.0, doc="largest joint change per iteration [rad]")
    max_iterations: int = spec(200, ge=1, doc="iterations before the solver gives up")
    named: tuple[NamedPose, ...] = spec((), doc="experiment poses")
    operating_point: OperatingPointConfig | None = spec(
        None, doc="the calibration check: ||a|| to hold a named pose and along an elbow sweep")

    def check(self, file: str, key: str) -> None:
        seen: set[str] = set()
        for i, pose in enumerate(self.named):
            if pose.name in seen:
                raise ConfigError(file, f"{key}.named[{i}].name", "a unique pose name", pose.name)
            seen.add(pose.name)
        if self.operating_point is not None and self.operating_point.pose not in seen:
            raise ConfigError(file, f"{key}.operating_point.pose",
                              f"a name of {key}.named {sorted(seen)}", self.operating_point.pose)
        if len(set(self.ik_joints)) != len(self.ik_joints):
            raise ConfigError(file, f"{key}.ik_joints", "distinct joints", list(self.ik_joints))
        for i, axis in enumerate(self.hand_axes):
            if axis not in ("x", "y", "z") or self.hand_axes.count(axis) > 1:
                raise ConfigError(file, f"{key}.hand_axes[{i}]", "distinct axes among x, y, z",
                                  axis)


class PoseSolution(NamedTuple):
    """Result of one solve."""

    q_rad: FloatArray  # (n,) joint angles within limits [rad]
    hand_m: FloatArray  # (3,) reached hand position [m]
    elbow_z_m: float  # reached elbow height, along -gravity [m]
    iterations: int


class PoseSolver:
    """Damped least-squares placement of hand and elbow over configured joints within limits."""

    def __init__(self, arm: Arm, config: PosesConfig, file: str, key: str = "poses") -> None:
        self.arm = arm
        self.config = config
        self._where = (file, key)  # where the named poses are written, for their errors
        self.elbow_frame = arm.frame(config.elbow_frame, (0.0, 0.0, 0.0), file,
                                     f"{key}.elbow_frame")
        self._frames = (arm.task_frame, self.elbow_frame)
        #: backend index of the elbow frame (Pinocchio frame id for a URDF robot)
        self.elbow_frame_id = self.elbow_frame.handle
        cols = []
        for i, name in enumerate(config.ik_joints):
            if name not in arm.joint_names:
                raise ConfigError(file, f"{key}.ik_joints[{i}]",
                                  f"a joint of the arm {list(arm.joint_names)}", name)
            cols.append(arm.joint_names.index(name))
        self.ik_idx = np.array(sorted(cols), dtype=int)  # (p,) columns the solver moves
        #: hand coordinates the solver meets (indices into x, y, z)
        self.hand_idx = np.array(["xyz".index(a) for a in config.hand_axes], dtype=int)
        self.up: FloatArray = arm.up  # (3,) heights are measured along it
        self._ws = arm.body.workspace()

    # -- kinematics ----------------------------------------------------------------------------
    def targets_at(self, q: FloatArray) -> tuple[FloatArray, float]:
        """(hand position [m], elbow height along -gravity [m]) at ``q``."""
        q = self.arm.check_q(q)
        (hand, _), (elbow, _) = self.arm.body.poses(self._ws, q, self._frames)
        return hand, float(self.up @ elbow)

    def elbow_position(self, q: FloatArray) -> FloatArray:
        """(3,) position of the elbow frame at ``q`` in the base frame [m]."""
        q = self.arm.check_q(q)
        return self.arm.body.poses(self._ws, q, (self.elbow_frame,))[0][0]

    def constraint_jacobian(self, q: FloatArray) -> FloatArray:
        """(4, n) d[x_hand; h_elbow]/dq in the base frame [m/rad], all joints."""
        q = self.arm.check_q(q)
        jh, je = self.arm.body.jacobians(self._ws, q, self._frames)
        return np.vstack([jh[:3], self.up @ je[:3]])

    # -- solving -------------------------------------------------------------------------------
    def solve(self, q_start: npt.ArrayLike, hand_m: npt.ArrayLike, elbow_z_m: float | None,
              what: str = "pose") -> PoseSolution:
        """Joint angles near ``q_start`` with the hand at ``hand_m`` and the elbow at height
        ``elbow_z_m`` (None: the hand alone).

        Raises :class:`InputError` for a start outside the joint limits or a malformed target and
        :class:`PoseError` when the targets are not met within the configured iterations.
        """
        q = self.arm.check_q(q_start, f"{what}: q_start").copy()
        lo, hi = self.arm.lower_rad, self.arm.upper_rad
        if np.any(q < lo) or np.any(q > hi):
            bad = [n for n, v, a, b in zip(self.arm.joint_names, q, lo, hi) if not a <= v <= b]
            raise InputError(f"{what}: q_start", "joint angles within the joint limits", bad)
        target = np.asarray(hand_m, dtype=float)
        if target.shape != (3,) or not np.all(np.isfinite(target)):
            raise InputError(f"{what}: hand_m", "a finite 3-vector [m]", target.tolist())
        if elbow_z_m is not None and not np.isfinite(elbow_z_m):
            raise InputError(f"{what}: elbow_z_m", "a finite height [m]", elbow_z_m)
        cfg = self.config
        mu2 = cfg.damping_m**2
        hand_rows = self.hand_idx
        rows = hand_rows if elbow_z_m is None else np.r_[hand_rows, 3]
        eye = np.eye(len(rows))
        err = np.zeros(len(rows))
        for it in range(cfg.max_iterations + 1):
            hand, ez = self.targets_at(q)
            err = np.r_[target - hand, 0.0 if elbow_z_m is None else elbow_z_m - ez][rows]
            if np.abs(err).max() < cfg.tolerance_m:
                return PoseSolution(q, hand, ez, it)
            if it == cfg.max_iterations:
                break
            J = self.constraint_jacobian(q)[rows]
            free = self.ik_idx.copy()
            # Active set: a joint at a limit whose step points outward is frozen for this step.
            for _ in range(len(free) + 1):
                Jf = J[:, free]
                dq_free = Jf.T @ np.linalg.solve(Jf @ Jf.T + mu2 * eye, err)
                outward = ((q[free] <= lo[free]) & (dq_free < 0.0)) | (
                    (q[free] >= hi[free]) & (dq_free > 0.0))
                if not outward.any():
                    break
                free = free[~outward]
                if free.size == 0:
                    dq_free = np.zeros(0)
                    break
            if free.size == 0:
                break
            biggest = np.abs(dq_free).max()
            if biggest > cfg.max_step_rad:
                dq_free *= cfg.max_step_rad / biggest
            q[free] = np.clip(q[free] + dq_free, lo[free], hi[free])
        at_limit = [self.arm.joint_names[j] for j in self.ik_idx if q[j] <= lo[j] or q[j] >= hi[j]]
        n_hand = len(hand_rows)
        raise PoseError(what, target, elbow_z_m, float(np.linalg.norm(err[:n_hand])),
                        float(abs(err[n_hand])) if elbow_z_m is not None else 0.0,
                        cfg.max_iterations, at_limit)

    def named(self, name: str) -> NamedPose:
        """The configured pose called ``name``; :class:`InputError` lists the known ones."""
        for pose in self.config.named:
            if pose.name == name:
                return pose
        raise InputError("pose name", f"one of {[p.name for p in self.config.named]}", name)

    def solve_named(self, name: str, home_q: FloatArray) -> PoseSolution:
        """Solve the configured pose ``name`` from the home pose (which fixes the branch).

        A pose the arm cannot take is a configuration error, named by its key.
        """
        pose = self.named(name)
        hand = pose.hand_m if pose.hand_m is not None else self.targets_at(home_q)[0]
        try:
            return self.solve(home_q, hand, pose.elbow_z_m, what=f"pose '{name}'")
        except PoseError as exc:
            file, key = self._where
            i = [p.name for p in self.config.named].index(name)
            raise ConfigError(file, f"{key}.named[{i}]", "a pose the arm can take (hand_axes "
                              f"{list(self.config.hand_axes)})", str(exc)) from exc

    def elbow_path(self, q_start: npt.ArrayLike, elbow_z_m: npt.ArrayLike,
                   hand_m: npt.ArrayLike | None = None) -> list[PoseSolution]:
        """Poses along a list of elbow heights with the hand fixed, each seeded by the previous.

        Continuation keeps every pose on the start pose's branch. The hand stays where it is at
        ``q_start`` unless ``hand_m`` is given. Stops at the first height it cannot reach and
        returns the poses reached so far (possibly none).
        """
        q = self.arm.check_q(q_start, "q_start")
        hand = self.targets_at(q)[0] if hand_m is None else np.asarray(hand_m, dtype=float)
        out: list[PoseSolution] = []
        for z in np.asarray(elbow_z_m, dtype=float).ravel():
            try:
                sol = self.solve(q, hand, float(z), what="elbow path")
            except PoseError:
                break
            out.append(sol)
            q = sol.q_rad
        return out
