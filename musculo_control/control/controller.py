"""The ROS-free 125 Hz controllers: the operational-space controller and the paper's baselines.

Every controller has ``tick(snapshot, q_rad, qd_rad_s, goal, t_s) -> ControlOutput`` and
``reset()``, and is made by name with :func:`make_controller`:

- ``osc``: operational-space control through the activation QP, formulation ``qp.formulation``
  (eq. 11 by default; paper eq. 9-15);
- ``osc-no-nullspace``: the same with eq. 10 (no nullspace torque), for experiment C;
- ``joint-stiffness``: paper eq. 16; ``muscle-stiffness``: paper eq. 17. Both hold the joint
  target ``q_des`` (``robot.home_pose_rad`` unless :meth:`set_joint_target` changes it) and
  ignore the hand goal but for reporting the hand error.

A tick never raises and never returns a NaN or a negative tension: a missing, stale or
malformed input, an unsolved QP or any exception gives :func:`safe_output` (every muscle at the
minimum tension) with the reason.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from musculo_control.control.activation_qp import ActivationQP
from musculo_control.control.baselines import (
    JointStiffnessController,
    MuscleStiffnessController,
)
from musculo_control.control.controller_config import ControllerConfig
from musculo_control.control.controller_names import CONTROLLER_NAMES
from musculo_control.control.fresh_state import FreshState
from musculo_control.control.goal import HandGoal
from musculo_control.control.joint_limits import predictive_limit_rows
from musculo_control.control.output import ControlOutput
from musculo_control.control.qp_problem import QPResult, TorqueBalance
from musculo_control.control.task_space import (
    PositionIntegral,
    nullspace_damping_torque,
    nullspace_posture_torque,
    reference_acceleration,
    reference_torque,
)
from musculo_control.control.tick_base import (
    Controller,
    SnapshotTerms,
    TickBase,
    with_solver_info,
)
from musculo_control.errors import ConfigError, InputError
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.model.robot import Robot

FloatArray = npt.NDArray[np.float64]


class OSCController(TickBase):
    """Biomimetic operational-space control (paper eq. 9-15; SPEC sections 4-5)."""

    def __init__(self, robot: Robot, config: ControllerConfig, *, name: str = "osc",
                 formulation: str | None = None, file: str = "controller.yaml",
                 tension_max_n: float | None = None) -> None:
        super().__init__(robot, config, file, tension_max_n)
        self.name = name
        self.formulation = formulation or config.qp.formulation
        qp = config.qp
        n, mc = robot.arm.n_joints, len(robot.controlled_idx)
        self._rows = config.task.row_indices()
        self._limits = qp.predictive_joint_limits
        if self._limits.enabled:
            half = 0.5 * float(np.min(robot.arm.upper_rad - robot.arm.lower_rad))
            if self._limits.margin_rad >= half:
                raise ConfigError(file, "qp.predictive_joint_limits.margin_rad",
                                  f"less than half the smallest joint range ({half:.3f} rad)",
                                  self._limits.margin_rad)
        self._need_inverse = self._limits.enabled
        # velocity-aware bound of tau_null (not in the paper): per tick from the snapshot's M
        self._step = qp.nullspace_step_rad if self.formulation == "eq11" else None
        self._step_gain = (2.0 * self._step * config.loop.dynamics_rate_hz ** 2
                           if self._step is not None else 0.0)
        bound = qp.tau_null_max_nm
        self._free_null = np.full(n, math.inf if bound is None else bound)
        if self._step is not None and bound is None:
            bound = math.inf  # the rows, with this tick's bounds
        self.qp = ActivationQP(self.formulation, mc, n, k=qp.k, r=qp.r,
                               solver=qp.solver, osqp_config=config.osqp,
                               daqp_config=config.daqp, dual_newton_config=config.dual_newton,
                               solver_choice=config.solver_choice,
                               n_limit_rows=n if self._limits.enabled else 0,
                               accept_inaccurate=qp.accept_inaccurate,
                               tau_null_max_nm=bound)
        self._lower = np.zeros(mc)
        self._upper = np.full(mc, np.inf if qp.activation_max is None else qp.activation_max)
        self._upper_tick = self._upper.copy()
        self._integral = PositionIntegral(config.gains)  # off unless gains.ki_s3 > 0
        posture = config.gains.nullspace_posture_nm_rad
        if posture is not None and len(posture) != n:
            raise ConfigError(file, "gains.nullspace_posture_nm_rad",
                              f"{n} stiffnesses, one per joint of robot.yaml", list(posture))
        self._posture = None if posture is None else np.asarray(posture, dtype=float)

    def reset(self) -> None:
        """Forget the previous tick's state, the integral and the QP's warm start."""
        super().reset()
        self.qp.reset()
        self._integral.reset()

    def _activation_upper(self, active: FloatArray, passive: FloatArray) -> FloatArray:
        """Upper bounds on a this tick: a f_a + f_p <= tension_max_n where f_a > 0 (paper eq.
        4 solved for a), within ``qp.activation_max``; never below 0 (a muscle stretched past
        the limit by its passive part alone is clamped downstream)."""
        if self.tension_max_n is None:
            return self._upper
        upper = self._upper_tick
        np.copyto(upper, self._upper)
        pulls = active > 0.0
        room = np.maximum(self.tension_max_n - passive[pulls], 0.0) / active[pulls]
        upper[pulls] = np.minimum(room, upper[pulls])
        return upper

    def _control(self, snapshot: DynamicsSnapshot, terms: SnapshotTerms, q: FloatArray,
                 qd: FloatArray, fresh: FreshState, goal: HandGoal, age: float,
                 t0: float) -> ControlOutput:
        integral = None
        if self._integral.enabled:  # the tick's time is the snapshot's stamp plus its age
            integral = self._integral.update(goal.position_m - fresh.hand.position_m,
                                             snapshot.stamp_s + age, goal.velocity_m_s)
        xdd = reference_acceleration(goal, fresh.hand, self.config.gains, self._rows, integral)
        coriolis = snapshot.coriolis_torque_nm if self.config.qp.coriolis else None
        tau_ref = reference_torque(snapshot.task_jacobian, snapshot.task_inertia, xdd,
                                   snapshot.gravity_torque_nm, coriolis)
        kv = self.config.gains.nullspace_damping_s
        if kv > 0.0:
            tau_ref += nullspace_damping_torque(snapshot.nullspace_projector,
                                                snapshot.mass_matrix, qd, kv)
        if self._posture is not None:
            tau_ref += nullspace_posture_torque(snapshot.nullspace_projector, self._posture,
                                                self.robot.home_pose_rad, q)
        ci = self._ci
        active, passive = fresh.forces.active_n[ci], fresh.forces.passive_n[ci]
        balance = TorqueBalance(terms.jm_controlled, active, passive,
                                tau_ref + terms.fixed_torque_nm,
                                snapshot.nullspace_projector if self.formulation == "eq11"
                                else None)
        rows = None
        if self._limits.enabled and terms.mass_matrix_inv is not None:
            jm = terms.jm_controlled
            torque_matrix: FloatArray = jm.T * active  # B (n, m)
            rows = predictive_limit_rows(
                terms.mass_matrix_inv, torque_matrix, passive @ jm + terms.fixed_torque_nm,
                snapshot.gravity_torque_nm + snapshot.coriolis_torque_nm, q, qd,
                self.robot.arm.lower_rad, self.robot.arm.upper_rad, self._limits.horizon_s,
                self._limits.margin_rad)
        null_bound = None
        within = self.config.qp.nullspace_step_within_m
        if self._step is not None and within is not None and \
                float(np.linalg.norm(goal.position_m - fresh.hand.position_m)) > within:
            # far from the goal the task needs eq. 11's free tau_null to get back (a bounded one
            # left an arm that had fallen at minimum tension stuck 20 cm off its goal)
            null_bound = self._free_null
        elif self._step is not None:
            # |tau_null_i| <= 2 M_ii step / T^2: alone it moves joint i by at most `step` in a
            # snapshot period, so the nullspace drifts no faster than the model follows
            null_bound = self._step_gain * np.diagonal(snapshot.mass_matrix)
            if self.config.qp.tau_null_max_nm is not None:
                null_bound = np.minimum(null_bound, self.config.qp.tau_null_max_nm)
        res: QPResult = self.qp.solve(balance, self._lower, self._activation_upper(active, passive),
                                      rows, null_bound)
        if not res.found:
            out = self._fail(f"QP {self.formulation} not solved: {res.status}", age, t0,
                             res.status)
            return with_solver_info(out, res)
        return self._output(res.tension_n, res.activations, res.tau_null, res.torque_residual_nm,
                            tau_ref, fresh, goal, res.status, res.iterations, res.solve_time_s,
                            res.objective, age, t0)


def make_controller(name: str, robot: Robot, config: ControllerConfig,
                    file: str = "controller.yaml",
                    tension_max_n: float | None = None) -> Controller:
    """The controller called ``name`` (one of :data:`CONTROLLER_NAMES`); ``tension_max_n``: the
    actuators' limit its commands respect (see :class:`TickBase`)."""
    if name == "osc":
        return OSCController(robot, config, name="osc", file=file, tension_max_n=tension_max_n)
    if name == "osc-no-nullspace":
        return OSCController(robot, config, name=name, formulation="eq10", file=file,
                             tension_max_n=tension_max_n)
    if name == "joint-stiffness":
        return JointStiffnessController(robot, config, file, tension_max_n)
    if name == "muscle-stiffness":
        return MuscleStiffnessController(robot, config, file, tension_max_n)
    raise InputError("controller name", f"one of {list(CONTROLLER_NAMES)}", name)
