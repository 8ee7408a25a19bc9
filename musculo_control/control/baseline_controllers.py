"""The controllers of the paper's baselines (paper eq. 16-17; their math in
:mod:`musculo_control.control.baselines`): both hold a joint target ``q_des`` and ignore the hand
goal but for reporting the hand error."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from musculo_control.control.activation_qp import ActivationQP
from musculo_control.control.baselines import (
    joint_stiffness_balance,
    joint_stiffness_torque,
    muscle_stiffness_tension,
)
from musculo_control.control.controller_config import ControllerConfig
from musculo_control.control.fresh_state import FreshState
from musculo_control.control.goal import HandGoal
from musculo_control.control.output import ControlOutput
from musculo_control.control.tick_base import SnapshotTerms, TickBase, with_solver_info
from musculo_control.errors import ConfigError
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.model.robot import Robot

FloatArray = npt.NDArray[np.float64]


class _JointTargetMixin:
    """The joint target q_des of the baselines (``robot.home_pose_rad`` by default)."""

    robot: Robot

    def _init_target(self) -> None:
        self.joint_target_rad = self.robot.home_pose_rad.copy()

    def set_joint_target(self, q_des_rad: npt.ArrayLike) -> None:
        """Hold another joint pose from now on."""
        self.joint_target_rad = self.robot.arm.check_q(q_des_rad, "q_des_rad").copy()
        self._target_changed()

    def _target_changed(self) -> None:
        return None


def _equivalent_activation(tension: FloatArray, forces_active: FloatArray,
                           forces_passive: FloatArray) -> FloatArray:
    """max(f - f_p, 0) / f_a where f_a > 0, else 0: the activation a tension amounts to."""
    out = np.zeros_like(tension)
    np.divide(np.maximum(tension - forces_passive, 0.0), forces_active, out=out,
              where=forces_active > 0.0)
    return out


class JointStiffnessController(_JointTargetMixin, TickBase):
    """Baseline of paper eq. 16: a joint-space spring K (q_des - q) plus gravity, as a QP."""

    name = "joint-stiffness"

    def __init__(self, robot: Robot, config: ControllerConfig, file: str = "controller.yaml",
                 tension_max_n: float | None = None) -> None:
        super().__init__(robot, config, file, tension_max_n)
        js = config.baselines.joint_stiffness
        n = robot.arm.n_joints
        if len(js.stiffness_nm_rad) != n:
            raise ConfigError(file, "baselines.joint_stiffness.stiffness_nm_rad",
                              f"{n} values (one per joint)", len(js.stiffness_nm_rad))
        self._stiffness = np.array(js.stiffness_nm_rad)
        mc = len(robot.controlled_idx)
        # eq. 16 is eq. 10 in the tensions: same QP structure, variables f >= f_min
        self.qp = ActivationQP("eq10", mc, n, k=js.k, r=config.qp.r, solver=config.qp.solver,
                               osqp_config=config.osqp, daqp_config=config.daqp,
                               dual_newton_config=config.dual_newton,
                               solver_choice=config.solver_choice,
                               accept_inaccurate=config.qp.accept_inaccurate)
        self._lower = np.full(mc, robot.hill.f_min_n)
        self._upper = np.full(mc, np.inf if tension_max_n is None else tension_max_n)
        self._init_target()

    def reset(self) -> None:
        """Forget the previous tick's state and the QP's warm start."""
        super().reset()
        self.qp.reset()

    def _control(self, snapshot: DynamicsSnapshot, terms: SnapshotTerms, q: FloatArray,
                 qd: FloatArray, fresh: FreshState, goal: HandGoal, age: float,
                 t0: float) -> ControlOutput:
        target = joint_stiffness_torque(self._stiffness, self.joint_target_rad, q,
                                        snapshot.gravity_torque_nm)
        balance = joint_stiffness_balance(terms.jm_controlled, target, terms.fixed_torque_nm)
        res = self.qp.solve(balance, self._lower, self._upper)
        if not res.found:
            return with_solver_info(self._fail(f"QP eq16 not solved: {res.status}", age, t0,
                                                res.status), res)
        ci = self._ci
        act = _equivalent_activation(res.tension_n, fresh.forces.active_n[ci],
                                     fresh.forces.passive_n[ci])
        return self._output(res.tension_n, act, np.zeros(self.robot.arm.n_joints),
                            res.torque_residual_nm, target, fresh, goal, res.status,
                            res.iterations, res.solve_time_s, res.objective, age, t0)


class MuscleStiffnessController(_JointTargetMixin, TickBase):
    """Baseline of paper eq. 17: each muscle a spring towards its length at q_des."""

    name = "muscle-stiffness"

    def __init__(self, robot: Robot, config: ControllerConfig, file: str = "controller.yaml",
                 tension_max_n: float | None = None) -> None:
        super().__init__(robot, config, file, tension_max_n)
        self._k_m = config.baselines.muscle_stiffness.stiffness_n_m
        self._init_target()
        self._target_changed()

    def _target_changed(self) -> None:
        lengths = self.robot.geometry.lengths_at(self.joint_target_rad)
        self._length_des = lengths[self._ci]

    def _control(self, snapshot: DynamicsSnapshot, terms: SnapshotTerms, q: FloatArray,
                 qd: FloatArray, fresh: FreshState, goal: HandGoal, age: float,
                 t0: float) -> ControlOutput:
        ci = self._ci
        tension = muscle_stiffness_tension(fresh.muscle_length_m[ci], self._length_des,
                                           self._k_m, self._f_min)
        if self.tension_max_n is not None:
            np.minimum(tension, self.tension_max_n, out=tension)
        # the torque the tensions fall short of holding gravity, in the Jm^T f + tau = 0 sign
        residual = terms.jm_controlled.T @ tension + terms.fixed_torque_nm \
            + snapshot.gravity_torque_nm
        act = _equivalent_activation(tension, fresh.forces.active_n[ci],
                                     fresh.forces.passive_n[ci])
        n = self.robot.arm.n_joints
        return self._output(tension, act, np.zeros(n), residual, snapshot.gravity_torque_nm,
                            fresh, goal, "none", 0, 0.0, 0.0, age, t0)
