"""The whole robot description, loaded from one config folder.

A config folder holds ``robot.yaml`` (which URDF or MJCF, joint order, task frame, muscles file,
poses) and the files it names. :func:`load_robot` validates everything across files: every
muscle's route exists in the description (via-points on links of a URDF, or a tendon of the
MJCF), every muscle spans a joint, every joint is pulled by controlled muscles in both
directions, moment arms keep the signs the muscles file declares over the whole joint range,
and the Hill ranges ``l_min, l_max`` and peak forces ``f1`` are known.

The muscle geometry is a backend behind :class:`~musculo_control.model.geometry.MuscleGeometry`:
via-points for a URDF, MuJoCo's tendons for an MJCF, or (``muscle_geometry.learned_model``) a
mapping learned from a recording (:mod:`musculo_control.model.learned_mapping`), whose l_min,
l_max and sampled ranges then come from the recording's joint box.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from musculo_control.config.folder import load_checked
from musculo_control.config.parser import load, load_with_overrides, located_in, spec
from musculo_control.errors import ConfigError, ErrorCollector, InputError, raise_collected
from musculo_control.model.arm import Arm, ArmConfig
from musculo_control.model.geometry import MuscleGeometry
from musculo_control.model.hill import ForceLengthCurves, HillParams, MuscleForces
from musculo_control.model.learned_mapping import (
    LearnedGeometry,
    MuscleGeometryConfig,
    load_mapping,
)
from musculo_control.model.muscles import MusclesConfig, ViaPointGeometry
from musculo_control.model.poses import PosesConfig, PoseSolver

FloatArray = npt.NDArray[np.float64]

#: Moment arm below which a muscle is not counted as pulling a joint [m/rad].
_MOMENT_ARM_EPS_M = 1e-4
#: Up to this many joints, the joint box's corners are among the sampled poses (2^n of them).
_MAX_CORNER_JOINTS = 10


@dataclass(frozen=True, kw_only=True)
class RobotConfig:
    """``robot.yaml``: the entry point of a config folder."""

    arm: ArmConfig = spec(doc="the rigid-body arm")
    muscles_file: str = spec("muscles.yaml", doc="muscles file, relative to the config folder")
    hill: HillParams = spec(HillParams(), doc="Hill force-length constants (paper Table I)")
    home_pose_rad: tuple[float, ...] = spec(doc="experiment pose q_des (SPEC section 1) [rad]")
    poses: PosesConfig | None = spec(None, doc="pose solver and named experiment poses")
    muscle_geometry: MuscleGeometryConfig = spec(
        MuscleGeometryConfig(), doc="the description's muscle geometry or a learned mapping")


class MomentArmRange(NamedTuple):
    """Per muscle and joint, the extremes of the moment arm -Jm over the sampled joint range."""

    min_m: FloatArray  # (m, n) [m]
    max_m: FloatArray  # (m, n) [m]
    argmin_q: FloatArray  # (m, n, n) pose of each minimum [rad]
    argmax_q: FloatArray  # (m, n, n) pose of each maximum [rad]


class Robot:
    """Arm, muscle geometry, Hill curves and their ranges: everything the controller models."""

    def __init__(self, config_dir: Path, overrides: dict[str, Any] | None = None) -> None:
        """``overrides``: dotted keys of robot.yaml set on the command line (a relative
        ``muscle_geometry.learned_model`` there is relative to the working folder)."""
        self.config_dir = Path(config_dir)
        robot_file = self.config_dir / "robot.yaml"
        if not robot_file.is_file():
            raise ConfigError(str(robot_file), "<file>", "robot.yaml in the config folder",
                              "no such file")
        self.robot_file = str(robot_file)
        overrides = dict(overrides or {})
        model_key = "muscle_geometry.learned_model"
        if isinstance(overrides.get(model_key), str):
            overrides[model_key] = str(Path(overrides[model_key]).resolve())
        self.config: RobotConfig = load_with_overrides(RobotConfig, robot_file, overrides)
        self.arm = Arm(self.config.arm, self.config_dir, self.robot_file)
        self.hill = self.config.hill
        self.muscles_file = str(self.config_dir / self.config.muscles_file)
        # the checks below need the arm, and each other only where said: each error is kept
        # and all are raised together, with their lines (a folder fixed in one run)
        found = ErrorCollector()
        try:
            self._check(found)
        except ConfigError as exc:
            found.add(exc)
        if found:
            raise_collected(located_in(found.errors, {self.robot_file: set(overrides),
                                                      self.muscles_file: set()}))

    def _check(self, found: ErrorCollector) -> None:
        """The rest of :meth:`__init__`: every check across robot.yaml, the muscles file and the
        arm's description, each error into ``found``; raises where later steps need a value."""
        n = self.arm.n_joints
        home_ok = len(self.config.home_pose_rad) == n
        if not home_ok:
            found.add(ConfigError(self.robot_file, "home_pose_rad", f"{n} joint angles",
                                  f"{len(self.config.home_pose_rad)} values"))
        self.home_pose_rad = np.array(self.config.home_pose_rad)
        lo, hi = self.arm.lower_rad, self.arm.upper_rad
        for i, (name, q) in enumerate(zip(self.arm.joint_names, self.home_pose_rad)):
            if not lo[i] <= q <= hi[i]:
                home_ok = False
                found.add(ConfigError(self.robot_file, f"home_pose_rad[{i}]",
                                      f"an angle of joint '{name}' within its limits "
                                      f"[{lo[i]:+.4f}, {hi[i]:+.4f}] rad ({self.arm.kind})",
                                      float(q)))
        #: places the arm by hand position and elbow height; None without a ``poses`` section
        self.poses: PoseSolver | None = None
        if self.config.poses is not None:
            with found.checking():
                self.poses = PoseSolver(self.arm, self.config.poses, self.robot_file)
        self.muscles_config: MusclesConfig = load(MusclesConfig, Path(self.muscles_file))
        specs = self.muscles_config.muscles
        self.geometry: MuscleGeometry = self._make_geometry()
        self.muscle_names = self.geometry.names
        self.n_muscles = len(specs)
        self.controlled: npt.NDArray[np.bool_] = np.array([m.controlled for m in specs])
        self.controlled_idx = np.flatnonzero(self.controlled)
        self.fixed_idx = np.flatnonzero(~self.controlled)
        self.fixed_tension_n = np.array([m.fixed_tension_n or 0.0 for m in specs])[self.fixed_idx]
        self.actuator_ids = tuple(m.actuator_id for m in specs)
        self.f1_n, self.f1_source = self._peak_forces()
        self._moment_arms: MomentArmRange | None = None
        self.l_min_m, self.l_max_m, self.range_source = self._length_ranges(found)
        self._check_pulled_both_ways(found, with_home=home_ok)
        self._check_moment_arm_signs(found)
        found.raise_any()  # the curves need every range
        self.l_opt_m = 0.5 * (self.l_min_m + self.l_max_m)
        self.l_range_m = self.l_max_m - self.l_min_m
        self._curves = ForceLengthCurves(self.l_opt_m, self.l_range_m, self.hill, self.f1_n)

    def _make_geometry(self) -> MuscleGeometry:
        described = self._described_geometry()
        cfg = self.config.muscle_geometry
        if cfg.learned_model is None:
            return described
        path = self.config_dir / cfg.learned_model
        try:
            mapping = load_mapping(path)
        except InputError as exc:
            raise ConfigError(self.robot_file, "muscle_geometry.learned_model",
                              "a model file of `musculo learn-mapping`", str(exc)) from None
        for label, mine, theirs in (("joint", self.arm.joint_names, mapping.joint_names),
                                    ("muscle", described.names, mapping.muscle_names)):
            if tuple(mine) != tuple(theirs):
                raise ConfigError(self.robot_file, "muscle_geometry.learned_model",
                                  f"a mapping learned on this robot ({label} names "
                                  f"{list(mine)})", f"{path}: {list(theirs)}")
        return LearnedGeometry(mapping, cfg, drawing=described)

    @property
    def learned(self) -> LearnedGeometry | None:
        """The learned geometry when robot.yaml selects one, else ``None``."""
        return self.geometry if isinstance(self.geometry, LearnedGeometry) else None

    def _described_geometry(self) -> MuscleGeometry:
        """The description's own geometry: URDF via-points or MJCF tendons."""
        specs = self.muscles_config.muscles
        found = ErrorCollector()
        if not self.arm.is_mjcf:
            for i, m in enumerate(specs):
                if m.tendon is not None:
                    found.add(ConfigError(self.muscles_file, f"muscles[{i}].tendon",
                                          "via-points (path) for a URDF robot; tendons are "
                                          "MJCF's", m.tendon))
            geometry = None
            with found.checking():
                geometry = ViaPointGeometry(self.arm, self.muscles_config, self.muscles_file)
            found.raise_any()
            assert geometry is not None
            return geometry
        from musculo_control.model.mujoco_body import MujocoBody  # MJCF robots only
        from musculo_control.model.mujoco_tendons import MujocoTendonGeometry

        for i, m in enumerate(specs):
            if m.path is not None:
                found.add(ConfigError(self.muscles_file, f"muscles[{i}].path",
                                      f"no via-points for an MJCF robot: muscle '{m.name}' is "
                                      f"the MJCF tendon named in 'tendon' (default: its own "
                                      f"name)", "a path"))
        found.raise_any()
        return MujocoTendonGeometry(cast(MujocoBody, self.arm.body), self.arm.description_path,
                                    tuple(m.name for m in specs),
                                    tuple(m.tendon or m.name for m in specs), self.muscles_file)

    def _peak_forces(self) -> tuple[FloatArray, tuple[str, ...]]:
        """f1 per muscle: the muscles file's, the MJCF muscle actuator's, else robot.yaml's."""
        from_model = getattr(self.geometry, "peak_force_n", None)
        f1, source = [], []
        for i, m in enumerate(self.muscles_config.muscles):
            if m.f1_n is not None:
                f1.append(m.f1_n)
                source.append("muscles file")
            elif from_model is not None and np.isfinite(from_model[i]):
                f1.append(float(from_model[i]))
                source.append(f"{self.arm.description_path.name} muscle actuator")
            else:
                f1.append(self.hill.f1_n)
                source.append("robot.yaml hill.f1_n")
        return np.array(f1), tuple(source)

    # -- Hill ranges ---------------------------------------------------------------------------
    def sample_poses(self, count: int, seed: int) -> FloatArray:
        """The joint box's corners (up to 10 joints), its centre, ``count`` random poses [rad]."""
        lo, hi = self.joint_box()
        rng = np.random.default_rng(seed)
        rand = lo + (hi - lo) * rng.random((count, self.arm.n_joints))
        if self.arm.n_joints > _MAX_CORNER_JOINTS:
            return np.vstack([0.5 * (lo + hi), rand])
        corners = np.array(list(itertools.product(*zip(lo, hi))))
        return np.vstack([corners, 0.5 * (lo + hi), rand])

    def joint_box(self) -> tuple[FloatArray, FloatArray]:
        """Where l(q) is known: the joint limits, or a learned mapping's recorded box."""
        learned = self.learned
        if learned is not None:
            return learned.lower_rad, learned.upper_rad
        return self.arm.lower_rad, self.arm.upper_rad

    def _range_poses(self) -> FloatArray:
        cfg = self.muscles_config
        return self.sample_poses(cfg.length_range_samples, cfg.length_range_seed)

    def _length_ranges(self, found: ErrorCollector
                       ) -> tuple[FloatArray, FloatArray, tuple[str, ...]]:
        """l_min, l_max per muscle: measured values from the muscles file, else sampled.

        Sampling covers the nominal joint range (the description's limits): all corners of the
        joint box and ``length_range_samples`` seeded uniform poses. Regenerate by editing the
        limits or the sample count; ``musculo model-report`` prints the result.
        """
        cfg = self.muscles_config
        learned = self.learned
        if learned is not None:  # the recording's extremes (paper eq. 2-4's ranges)
            lmin, lmax = learned.mapping.l_min_m.copy(), learned.mapping.l_max_m.copy()
        else:
            lengths = np.array([self.geometry.lengths_at(q) for q in self._range_poses()])
            lmin, lmax = lengths.min(axis=0), lengths.max(axis=0)
        source = []
        for i, m in enumerate(cfg.muscles):
            if m.length_range_m is not None:
                lmin[i], lmax[i] = m.length_range_m
                source.append("config")
            else:
                source.append("recording" if learned is not None else "sampled")
            if lmax[i] - lmin[i] < 1e-4:
                key = "path" if m.path is not None else "tendon"
                found.add(ConfigError(self.muscles_file, f"muscles[{i}].{key}",
                                      f"a route whose length changes over the joint range "
                                      f"(muscle '{m.name}')",
                                      f"range {lmax[i] - lmin[i]:.2e} m"))
        return lmin, lmax, tuple(source)

    def moment_arm_range(self) -> MomentArmRange:
        """Extremes of every moment arm over the same poses as the length ranges (cached)."""
        if self._moment_arms is None:
            poses = self._range_poses()
            arms = np.array([-self.geometry.kinematics_at(q).jacobian for q in poses])  # (S,m,n)
            imin, imax = arms.argmin(axis=0), arms.argmax(axis=0)  # (m, n)
            self._moment_arms = MomentArmRange(arms.min(axis=0), arms.max(axis=0),
                                               poses[imin], poses[imax])
        return self._moment_arms

    def forces(self, length_m: FloatArray) -> MuscleForces:
        """f_a and f_p at the given lengths (paper eq. 3-4), with each muscle's own f1."""
        return self._curves(length_m)

    def _check_pulled_both_ways(self, found: ErrorCollector, with_home: bool) -> None:
        mid = 0.5 * np.add(*self.joint_box())
        poses = [("the middle of the joint range", mid)]
        if with_home:
            poses.append(("home_pose_rad", self.home_pose_rad))
        for label, q in poses:
            jm = self.geometry.kinematics_at(q).jacobian[self.controlled_idx]
            for j, name in enumerate(self.arm.joint_names):
                # torque is -Jm^T f: Jm < 0 pulls the joint positive
                pulls_up = np.any(jm[:, j] < -_MOMENT_ARM_EPS_M)
                pulls_down = np.any(jm[:, j] > _MOMENT_ARM_EPS_M)
                if not (pulls_up and pulls_down):
                    found.add(ConfigError(
                        self.muscles_file, "muscles",
                        f"controlled muscles that pull joint '{name}' both ways at {label}",
                        f"moment arms {np.round(-jm[:, j], 4).tolist()}"))

    def _check_moment_arm_signs(self, found: ErrorCollector) -> None:
        """Every declared ``moment_arm_signs`` entry holds at every sampled pose."""
        specs = self.muscles_config.muscles
        if not any(m.moment_arm_signs for m in specs):
            return
        ranges = self.moment_arm_range()
        joints = self.arm.joint_names
        for i, m in enumerate(specs):
            for k, declared in enumerate(m.moment_arm_signs):
                key = f"muscles[{i}].moment_arm_signs[{k}]"
                if declared.joint not in joints:
                    found.add(ConfigError(self.muscles_file, f"{key}.joint",
                                          f"a joint of the robot {list(joints)}", declared.joint))
                    continue
                j = joints.index(declared.joint)
                worst = ranges.min_m[i, j] if declared.sign > 0 else ranges.max_m[i, j]
                if declared.sign * worst < -_MOMENT_ARM_EPS_M:
                    q = ranges.argmin_q[i, j] if declared.sign > 0 else ranges.argmax_q[i, j]
                    pose = ", ".join(f"{n}={v:+.3f}" for n, v in zip(joints, q))
                    word = "positive" if declared.sign > 0 else "negative"
                    found.add(ConfigError(
                        self.muscles_file, key,
                        f"the moment arm of muscle '{m.name}' about joint '{declared.joint}' "
                        f"to stay {word} over the joint range (as declared)",
                        f"{100 * worst:+.2f} cm at q = [{pose}] rad ({self.geometry.source})"))

    def new_data(self) -> Any:
        """A fresh workspace of the arm's rigid-body backend (Pinocchio data for a URDF)."""
        return self.arm.body.workspace()


#: The files of a config folder that :func:`load_robot` reads (stems).
ROBOT_FILES = ("robot", "muscles")


def check_robot_files(config_dir: str | Path, overrides: dict[str, Any] | None,
                      found: ErrorCollector) -> RobotConfig | None:
    """robot.yaml (with its dotted-key ``overrides``) and the muscles file it names, each
    against its schema, every error added to ``found``; robot.yaml's config when it parsed. A
    missing file is left to the loader (which names it)."""
    folder = Path(config_dir)
    robot = None
    if (folder / "robot.yaml").is_file():
        with found.checking():
            robot = load_with_overrides(RobotConfig, folder / "robot.yaml", dict(overrides or {}))
    muscles = folder / (robot.muscles_file if robot is not None else "muscles.yaml")
    if muscles.is_file():
        with found.checking():
            load(MusclesConfig, muscles)
    return robot


def load_robot(config_dir: str | Path, overrides: dict[str, Any] | None = None) -> Robot:
    """Load and validate the robot description in ``config_dir`` (``overrides``: dotted keys
    of robot.yaml, e.g. ``{"muscle_geometry.learned_model": "out/mapping.npz"}``): every error
    of robot.yaml and the muscles file together, with the checks against the description
    (:func:`musculo_control.config.folder.load_checked`). The loaders of more files check
    those too (:func:`musculo_control.loop.parts.load_parts`,
    :func:`musculo_control.sim.setup.load_setup`)."""
    return load_checked(lambda found: check_robot_files(config_dir, overrides, found),
                        lambda: Robot(Path(config_dir), overrides))
