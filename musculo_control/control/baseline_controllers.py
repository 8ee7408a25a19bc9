"""The controllers of the paper's baselines (paper eq. 16-17; their math and the rules for what
the paper leaves open in :mod:`musculo_control.control.baselines`): both hold a joint target
``q_des`` and ignore the hand goal but for reporting the hand error."""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from musculo_control.control.activation_qp import ActivationQP
from musculo_control.control.baselines import (
    joint_stiffness_balance,
    joint_stiffness_scale,
    joint_stiffness_torque,
    muscle_stiffness_matching_k,
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

_log = logging.getLogger(__name__)
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
    """Baseline of paper eq. 16: a joint-space spring K (q_des - q) plus gravity, as a QP.

    :attr:`tension_weight` is the weight of each tension's square in the cost [Nm^2/N^2]
    (controller.yaml ``baselines.joint_stiffness.k``, or its rule).
    """

    name = "joint-stiffness"

    def __init__(self, robot: Robot, config: ControllerConfig, file: str = "controller.yaml",
                 tension_max_n: float | None = None) -> None:
        super().__init__(robot, config, file, tension_max_n)
        js = config.baselines.joint_stiffness
        n = robot.arm.n_joints
        if len(js.stiffness_nm_rad) != n:
            raise ConfigError(file, "baselines.joint_stiffness.stiffness_nm_rad",
                              f"{n} values (one per joint)", len(js.stiffness_nm_rad))
        if js.k is None and not config.qp.k > 0.0:
            raise ConfigError(file, "baselines.joint_stiffness.k",
                              "a number: its rule, qp.k / f1^2, needs qp.k > 0", None)
        self._stiffness = np.array(js.stiffness_nm_rad)
        mc = len(robot.controlled_idx)
        # eq. 16 is eq. 10 in a = f / scale: same QP structure, weight k on ||a||^2
        k, self._scale = joint_stiffness_scale(js.k, config.qp.k,
                                               robot.f1_n[robot.controlled_idx])
        self.tension_weight = k / self._scale**2
        self.qp = ActivationQP("eq10", mc, n, k=k, r=config.qp.r, solver=config.qp.solver,
                               osqp_config=config.osqp, daqp_config=config.daqp,
                               dual_newton_config=config.dual_newton,
                               solver_choice=config.solver_choice,
                               accept_inaccurate=config.qp.accept_inaccurate)
        self._lower = robot.hill.f_min_n / self._scale
        self._upper = (np.full(mc, np.inf) if tension_max_n is None
                       else tension_max_n / self._scale)
        self._init_target()
        _log.info("%s: tension weight k %s Nm^2/N^2 (%s)", self.name,
                  np.array2string(np.unique(self.tension_weight), precision=3),
                  "controller.yaml" if js.k is not None else f"rule: qp.k {config.qp.k:g} / f1^2")

    def reset(self) -> None:
        """Forget the previous tick's state and the QP's warm start."""
        super().reset()
        self.qp.reset()

    def _control(self, snapshot: DynamicsSnapshot, terms: SnapshotTerms, q: FloatArray,
                 qd: FloatArray, fresh: FreshState, goal: HandGoal, age: float,
                 t0: float) -> ControlOutput:
        target = joint_stiffness_torque(self._stiffness, self.joint_target_rad, q,
                                        snapshot.gravity_torque_nm)
        balance = joint_stiffness_balance(terms.jm_controlled, target, terms.fixed_torque_nm,
                                          self._scale)
        res = self.qp.solve(balance, self._lower, self._upper)
        if not res.found:
            return with_solver_info(self._fail(f"QP eq16 not solved: {res.status}", age, t0,
                                                res.status), res)
        ci = self._ci
        # f = a scale: its bounds hold to rounding; exactly, as eq. 16 states them
        tension = np.maximum(res.tension_n, self._f_min)
        if self.tension_max_n is not None:
            np.minimum(tension, self.tension_max_n, out=tension)
        act = _equivalent_activation(tension, fresh.forces.active_n[ci],
                                     fresh.forces.passive_n[ci])
        return self._output(tension, act, np.zeros(self.robot.arm.n_joints),
                            res.torque_residual_nm, target, fresh, goal, res.status,
                            res.iterations, res.solve_time_s, res.objective, age, t0)


class MuscleStiffnessController(_JointTargetMixin, TickBase):
    """Baseline of paper eq. 17: each muscle a spring towards its length at q_des.

    :attr:`stiffness_n_m` is k_m [N/m] (controller.yaml ``baselines.muscle_stiffness
    .stiffness_n_m``, or its rule: eq. 16's K matched at ``home_pose_rad``).
    """

    name = "muscle-stiffness"

    def __init__(self, robot: Robot, config: ControllerConfig, file: str = "controller.yaml",
                 tension_max_n: float | None = None) -> None:
        super().__init__(robot, config, file, tension_max_n)
        ms = config.baselines.muscle_stiffness
        if ms.stiffness_n_m is not None:
            self.stiffness_n_m = ms.stiffness_n_m
        else:
            stiffness = config.baselines.joint_stiffness.stiffness_nm_rad
            if len(stiffness) != robot.arm.n_joints:
                raise ConfigError(file, "baselines.joint_stiffness.stiffness_nm_rad",
                                  f"{robot.arm.n_joints} values (one per joint; "
                                  f"baselines.muscle_stiffness's rule matches them)",
                                  len(stiffness))
            jm = robot.geometry.kinematics_at(robot.home_pose_rad).jacobian[self._ci]
            try:
                self.stiffness_n_m = muscle_stiffness_matching_k(jm, np.array(stiffness))
            except ValueError as exc:
                raise ConfigError(file, "baselines.muscle_stiffness.stiffness_n_m",
                                  "a number (its rule found no k_m)", str(exc)) from exc
        _log.info("%s: k_m %.4g N/m (%s)", self.name, self.stiffness_n_m,
                  "controller.yaml" if ms.stiffness_n_m is not None
                  else "rule: eq. 16's K matched at home_pose_rad")
        self._k_m = self.stiffness_n_m
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
