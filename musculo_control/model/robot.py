"""The whole robot description, loaded from one config folder.

A config folder holds ``robot.yaml`` (which URDF, joint order, task frame, muscles file, poses)
and the files it names. :func:`load_robot` validates everything across files: every muscle
point rides on a link of the URDF, every muscle spans a joint, every joint is pulled by
controlled muscles in both directions, and the Hill ranges ``l_min, l_max`` are known.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.errors import ConfigError
from musculo_control.model.arm import Arm, ArmConfig
from musculo_control.model.config import load, parse, read_yaml, spec
from musculo_control.model.hill import ForceLengthCurves, HillParams, MuscleForces
from musculo_control.model.muscles import MuscleGeometry, MusclesConfig
from musculo_control.model.poses import PosesConfig, PoseSolver

FloatArray = npt.NDArray[np.float64]

#: Moment arm below which a muscle is not counted as pulling a joint [m/rad].
_MOMENT_ARM_EPS_M = 1e-4


@dataclass(frozen=True, kw_only=True)
class RobotConfig:
    """``robot.yaml``: the entry point of a config folder."""

    arm: ArmConfig = spec(doc="the rigid-body arm")
    muscles_file: str = spec("muscles.yaml", doc="muscles file, relative to the config folder")
    hill: HillParams = spec(HillParams(), doc="Hill force-length constants (paper Table I)")
    home_pose_rad: tuple[float, ...] = spec(doc="experiment pose q_des (SPEC section 1) [rad]")
    poses: PosesConfig | None = spec(None, doc="pose solver and named experiment poses")


class Robot:
    """Arm, muscle paths, Hill curves and their ranges: everything the controller models."""

    def __init__(self, config_dir: Path) -> None:
        self.config_dir = Path(config_dir)
        robot_file = self.config_dir / "robot.yaml"
        if not robot_file.is_file():
            raise ConfigError(str(robot_file), "<file>", "robot.yaml in the config folder",
                              "no such file")
        self.robot_file = str(robot_file)
        self.config: RobotConfig = load(RobotConfig, robot_file)
        self.arm = Arm(self.config.arm, self.config_dir, self.robot_file)
        self.hill = self.config.hill
        n = self.arm.n_joints
        if len(self.config.home_pose_rad) != n:
            raise ConfigError(self.robot_file, "home_pose_rad", f"{n} joint angles",
                              f"{len(self.config.home_pose_rad)} values")
        self.home_pose_rad = np.array(self.config.home_pose_rad)
        #: places the arm by hand position and elbow height; None without a ``poses`` section
        self.poses: PoseSolver | None = (
            PoseSolver(self.arm, self.config.poses, self.robot_file)
            if self.config.poses is not None else None)
        self.muscles_file = str(self.config_dir / self.config.muscles_file)
        self.muscles_config: MusclesConfig = parse(
            MusclesConfig, read_yaml(Path(self.muscles_file)), self.muscles_file
        )
        self.geometry = MuscleGeometry(self.arm, self.muscles_config, self.muscles_file)
        specs = self.muscles_config.muscles
        self.muscle_names = self.geometry.names
        self.n_muscles = len(specs)
        self.controlled: npt.NDArray[np.bool_] = np.array([m.controlled for m in specs])
        self.controlled_idx = np.flatnonzero(self.controlled)
        self.fixed_idx = np.flatnonzero(~self.controlled)
        self.fixed_tension_n = np.array([m.fixed_tension_n or 0.0 for m in specs])[self.fixed_idx]
        self.actuator_ids = tuple(m.actuator_id for m in specs)
        self.l_min_m, self.l_max_m, self.range_source = self._length_ranges()
        self.l_opt_m = 0.5 * (self.l_min_m + self.l_max_m)
        self.l_range_m = self.l_max_m - self.l_min_m
        self._curves = ForceLengthCurves(self.l_opt_m, self.l_range_m, self.hill)
        self._check_pulled_both_ways()

    # -- Hill ranges ---------------------------------------------------------------------------
    def sample_poses(self, count: int, seed: int) -> FloatArray:
        """Corners of the joint box, its centre and ``count`` uniform random poses [rad]."""
        lo, hi = self.arm.lower_rad, self.arm.upper_rad
        corners = np.array(list(itertools.product(*zip(lo, hi))))
        rng = np.random.default_rng(seed)
        rand = lo + (hi - lo) * rng.random((count, self.arm.n_joints))
        return np.vstack([corners, 0.5 * (lo + hi), rand])

    def _length_ranges(self) -> tuple[FloatArray, FloatArray, tuple[str, ...]]:
        """l_min, l_max per muscle: measured values from the muscles file, else sampled.

        Sampling covers the nominal joint range (URDF limits): all corners of the joint box and
        ``length_range_samples`` seeded uniform poses. Regenerate by editing the limits or the
        sample count; ``musculo model-report`` prints the result.
        """
        cfg = self.muscles_config
        data = self.arm.model.createData()
        lengths = np.array([
            self.geometry.lengths_at(q, data)
            for q in self.sample_poses(cfg.length_range_samples, cfg.length_range_seed)
        ])
        lmin, lmax = lengths.min(axis=0), lengths.max(axis=0)
        source = []
        for i, m in enumerate(cfg.muscles):
            if m.length_range_m is not None:
                lmin[i], lmax[i] = m.length_range_m
                source.append("config")
            else:
                source.append("sampled")
            if lmax[i] - lmin[i] < 1e-4:
                raise ConfigError(self.muscles_file, f"muscles[{i}].path",
                                  f"a route whose length changes over the joint range "
                                  f"(muscle '{m.name}')", f"range {lmax[i] - lmin[i]:.2e} m")
        return lmin, lmax, tuple(source)

    def forces(self, length_m: FloatArray) -> MuscleForces:
        """f_a and f_p at the given lengths (paper eq. 3-4)."""
        return self._curves(length_m)

    def _check_pulled_both_ways(self) -> None:
        data = self.arm.model.createData()
        mid = 0.5 * (self.arm.lower_rad + self.arm.upper_rad)
        poses = (("the middle of the joint range", mid), ("home_pose_rad", self.home_pose_rad))
        for label, q in poses:
            jm = self.geometry.kinematics_at(q, data).jacobian[self.controlled_idx]
            for j, name in enumerate(self.arm.joint_names):
                # torque is -Jm^T f: Jm < 0 pulls the joint positive
                pulls_up = np.any(jm[:, j] < -_MOMENT_ARM_EPS_M)
                pulls_down = np.any(jm[:, j] > _MOMENT_ARM_EPS_M)
                if not (pulls_up and pulls_down):
                    raise ConfigError(self.muscles_file, "muscles",
                                      f"controlled muscles that pull joint '{name}' both ways at "
                                      f"{label}", f"moment arms {np.round(-jm[:, j], 4).tolist()}")

    def new_data(self) -> pin.Data:
        return self.arm.model.createData()


def load_robot(config_dir: str | Path) -> Robot:
    """Load and validate the robot description in ``config_dir``."""
    return Robot(Path(config_dir))
