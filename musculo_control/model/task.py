"""The operational-space task (``controller.yaml`` ``task``): which rows of the hand frame's
world-aligned Jacobian are controlled, the decoupling mask of paper eq. 13, the singularity guard,
and the one check that a robot can follow those rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError
from musculo_control.model.checks import sample_poses
from musculo_control.model.robot import Robot

#: A task row whose largest Jacobian entry stays below this over the range is unmovable
#: [m/rad or rad/rad].
_UNMOVED = 1e-6
#: Random poses (beside home and the joint box's centre) the task rows are checked at.
_TASK_POSES = 64

#: Row names of a frame Jacobian in Pinocchio's [linear; angular] order.
TASK_ROW_NAMES = ("vx", "vy", "vz", "wx", "wy", "wz")


@dataclass(frozen=True, kw_only=True)
class TaskConfig:
    """The operational-space task: which rows, the decoupling mask, the singularity guard."""

    rows: tuple[str, ...] = spec(min_length=1,
                                 doc="task rows of the hand's world-aligned Jacobian (the "
                                     "paper's: [vx, vy, vz, wy, wz])")
    mask: tuple[tuple[bool, ...], ...] = spec(
        doc="rows x joints: which joints each task row may use (paper eq. 13)")
    singular_eigenvalue: float = spec(1e-4, gt=0.0,
                                      doc="smallest eigenvalue of J M^-1 J^T [1/kg or 1/(kg m^2)] "
                                          "below which the damped inverse engages")
    damping: float = spec(1e-3, gt=0.0,
                          doc="damping mu of the inverse w / (w^2 + mu^2), same units")

    def check(self, file: str, key: str) -> None:
        for i, row in enumerate(self.rows):
            if row not in TASK_ROW_NAMES:
                raise ConfigError(file, f"{key}.rows[{i}]", f"one of {list(TASK_ROW_NAMES)}", row)
        if len(set(self.rows)) != len(self.rows):
            raise ConfigError(file, f"{key}.rows", "distinct rows", list(self.rows))
        if len(self.mask) != len(self.rows):
            raise ConfigError(file, f"{key}.mask", f"{len(self.rows)} rows (one per task row)",
                              f"{len(self.mask)} rows")
        widths = {len(r) for r in self.mask}
        if len(widths) != 1:
            raise ConfigError(file, f"{key}.mask", "rows of equal length", sorted(widths))

    def row_indices(self) -> npt.NDArray[np.intp]:
        """(k,) indices of the rows in the 6-D [vx, vy, vz, wx, wy, wz] order."""
        return np.array([TASK_ROW_NAMES.index(r) for r in self.rows], dtype=np.intp)

    def position_axes(self) -> npt.NDArray[np.intp]:
        """Base axes (0, 1, 2 for x, y, z) of the task's position rows; all three when it has
        none. A planar task's error is measured over these: the rest it cannot control."""
        axes = [TASK_ROW_NAMES.index(r) for r in self.rows if r in TASK_ROW_NAMES[:3]]
        return np.array(axes or [0, 1, 2], dtype=np.intp)

    def check_joints(self, n_joints: int, file: str, key: str) -> None:
        """The mask has a column per joint and lets every task row use some joint."""
        if len(self.mask[0]) != n_joints:
            raise ConfigError(file, f"{key}.mask[0]", f"{n_joints} entries (one per joint)",
                              f"{len(self.mask[0])} entries")
        for i, row in enumerate(self.mask):
            if not any(row):
                raise ConfigError(file, f"{key}.mask[{i}]", "at least one joint per task row",
                                  list(row))

    def check_robot(self, robot: Robot, file: str, key: str = "task") -> None:
        """Task rows ``robot`` can follow: a mask column per joint, no more rows than joints,
        each row moved by some joint its mask row allows, somewhere in the joint range."""
        self.check_joints(robot.arm.n_joints, file, key)
        arm = robot.arm
        joints = list(arm.joint_names)
        if len(self.rows) > arm.n_joints:
            raise ConfigError(file, f"{key}.rows",
                              f"at most {arm.n_joints} rows, one per joint {joints} (more rows "
                              f"than joints cannot all be followed)", list(self.rows))
        ws = arm.body.workspace()
        most = np.zeros(len(self.rows))
        mask = np.array(self.mask, dtype=bool)
        idx = self.row_indices()
        for q in sample_poses(robot, _TASK_POSES):
            J = arm.body.jacobians(ws, q, (arm.task_frame,))[0]
            most = np.maximum(most, np.abs(J[idx] * mask).max(axis=1))
        for i, row in enumerate(self.rows):
            if most[i] < _UNMOVED:
                allowed = [j for j, ok in zip(joints, mask[i]) if ok]
                raise ConfigError(file, f"{key}.rows[{i}]",
                                  f"a row some joint moves: no joint its mask row allows {allowed} "
                                  f"moves '{row}' of the task frame '{arm.config.task_frame}' "
                                  f"anywhere in the joint range (largest entry "
                                  f"{most[i]:.1e})", row)
