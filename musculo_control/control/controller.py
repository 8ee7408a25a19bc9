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

import dataclasses
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import load_with_overrides, spec
from musculo_control.control.activation_qp import ActivationQP, all_finite
from musculo_control.control.baselines import (
    BaselinesConfig,
    joint_stiffness_balance,
    joint_stiffness_torque,
    muscle_stiffness_tension,
)
from musculo_control.control.fresh_state import FreshState, FreshStateEstimator
from musculo_control.control.goal import HandGoal, WorkspaceConfig
from musculo_control.control.joint_limits import predictive_limit_rows
from musculo_control.control.output import ControlOutput, safe_output
from musculo_control.control.qp_config import DAQPConfig, OSQPConfig, QPConfig
from musculo_control.control.qp_problem import QPResult, TorqueBalance
from musculo_control.control.task_space import (
    GainsConfig,
    PositionIntegral,
    nullspace_damping_torque,
    reference_acceleration,
    reference_torque,
)
from musculo_control.errors import ConfigError, InputError
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.model.robot import Robot
from musculo_control.model.task import TaskConfig

_log = logging.getLogger(__name__)
FloatArray = npt.NDArray[np.float64]

#: Controller names accepted by :func:`make_controller`.
CONTROLLER_NAMES = ("osc", "osc-no-nullspace", "joint-stiffness", "muscle-stiffness")
#: Slack below f_min tolerated in a final tension check (rounding of a f_a + f_p) [N].
_TENSION_SLACK_N = 1e-9


@dataclass(frozen=True, kw_only=True)
class LoopConfig:
    """``controller.yaml`` key ``loop``: the rates of the paper's two threads (SPEC section 7)."""

    control_rate_hz: float = spec(125.0, gt=0.0, doc="the QP tick (paper: 125 Hz) [Hz]")
    dynamics_rate_hz: float = spec(20.0, gt=0.0, doc="the dynamics snapshot (paper: 20 Hz) "
                                                     "[Hz]")
    fused_dynamics: bool = spec(False, doc="compute the snapshot at every control tick in the "
                                           "QP's own process instead (no 20 Hz staleness)")


@dataclass(frozen=True, kw_only=True)
class ControllerConfig:
    """The whole ``controller.yaml``."""

    loop: LoopConfig = spec(LoopConfig(), doc="control and dynamics rates")
    task: TaskConfig = spec(doc="task rows and decoupling mask (paper eq. 13)")
    gains: GainsConfig = spec(GainsConfig(), doc="task-space gains (paper eq. 14-15)")
    qp: QPConfig = spec(QPConfig(), doc="the activation QP (paper eq. 9-11)")
    osqp: OSQPConfig = spec(OSQPConfig(), doc="OSQP settings (qp.solver: osqp)")
    daqp: DAQPConfig = spec(DAQPConfig(), doc="DAQP settings (qp.solver: daqp)")
    baselines: BaselinesConfig = spec(doc="paper eq. 16-17")
    workspace: WorkspaceConfig = spec(doc="where a hand goal may lie")
    goal_extrapolation_s: float = spec(
        0.04, ge=0.0, doc="between two goals, the last one follows its own velocity and "
                          "acceleration for at most this long, then holds [s]")


def load_controller_config(config_dir: str | Path,
                           overrides: dict[str, Any] | None = None) -> ControllerConfig:
    """Parse ``controller.yaml`` of a config folder, with optional dotted-key overrides."""
    return load_with_overrides(ControllerConfig, Path(config_dir) / "controller.yaml", overrides)


class Controller(Protocol):
    """What every controller offers (the QP node and the simulation runner use only this)."""

    name: str

    def tick(self, snapshot: DynamicsSnapshot | None, q_rad: npt.ArrayLike,
             qd_rad_s: npt.ArrayLike, goal: HandGoal, t_s: float) -> ControlOutput: ...

    def reset(self) -> None: ...


class _SnapshotTerms:
    """Per-snapshot quantities, computed once per snapshot rather than once per tick."""

    def __init__(self, robot: Robot, snapshot: DynamicsSnapshot, need_inverse: bool) -> None:
        jm = snapshot.muscle_jacobian
        self.snapshot = snapshot
        self.jm_controlled = np.ascontiguousarray(jm[robot.controlled_idx])  # (mc, n)
        # the uncontrolled muscles' Jm^T f_fixed (their torque is minus this)
        self.fixed_torque_nm = jm[robot.fixed_idx].T @ robot.fixed_tension_n  # (n,)
        self.mass_matrix_inv: FloatArray | None = (
            np.asarray(np.linalg.inv(snapshot.mass_matrix), dtype=np.float64) if need_inverse
            else None)


class _TickBase:
    """Input checks, snapshot age, fresh state and output assembly shared by all controllers.

    ``tension_max_n``: the actuators' largest tension (hardware.yaml ``driver.max_tension_n``);
    every controller keeps its commands at or below it as part of its problem, so that the
    driver's clamp downstream stays a last line of defence that never acts in normal use.
    ``None``: no such bound (a study of the bare control law).
    """

    name = "base"

    def __init__(self, robot: Robot, config: ControllerConfig, file: str = "controller.yaml",
                 tension_max_n: float | None = None) -> None:
        config.task.check_joints(robot.arm.n_joints, file, "task")
        if tension_max_n is not None and not tension_max_n > robot.hill.f_min_n:
            raise InputError("tension_max_n", f"more than the minimum tension "
                                              f"{robot.hill.f_min_n} N", tension_max_n)
        self.robot = robot
        self.config = config
        self.tension_max_n = tension_max_n
        self._fresh = FreshStateEstimator(robot)
        self._terms: _SnapshotTerms | None = None
        self._need_inverse = False
        self._f_min = robot.hill.f_min_n
        self._ci, self._fi = robot.controlled_idx, robot.fixed_idx
        # every muscle's tension with the uncontrolled ones already in place (copied per tick)
        self._tension_template = np.zeros(robot.n_muscles)
        self._tension_template[self._fi] = robot.fixed_tension_n

    def reset(self) -> None:
        self._terms = None

    # -- the tick --------------------------------------------------------------------------
    def tick(self, snapshot: DynamicsSnapshot | None, q_rad: npt.ArrayLike,
             qd_rad_s: npt.ArrayLike, goal: HandGoal, t_s: float) -> ControlOutput:
        """One control tick; never raises, never commands a NaN or a negative tension."""
        t0 = time.perf_counter()
        age = float("nan")
        try:
            if snapshot is None:
                return self._fail("no dynamics snapshot yet", age, t0)
            # how old a snapshot may be is the safety supervisor's rule (safety.yaml)
            age = float(t_s) - snapshot.stamp_s
            if not math.isfinite(age):
                return self._fail(f"non-finite time: t_s={t_s}, snapshot stamp "
                                  f"{snapshot.stamp_s}", age, t0)
            if not isinstance(goal, HandGoal):
                return self._fail(f"goal must be a HandGoal, got {type(goal).__name__}", age, t0)
            arm = self.robot.arm
            q = arm.check_q(q_rad, "q_rad")
            qd = arm.check_q(qd_rad_s, "qd_rad_s")
            if self._terms is None or self._terms.snapshot is not snapshot:
                self._terms = _SnapshotTerms(self.robot, snapshot, self._need_inverse)
            fresh = self._fresh.compute(snapshot, q, qd)
            return self._control(snapshot, self._terms, q, qd, fresh, goal, age, t0)
        except InputError as exc:
            return self._fail(str(exc), age, t0)
        except (ArithmeticError, ValueError) as exc:  # numerical trouble of this tick (LAPACK,
            return self._fail(f"{type(exc).__name__}: {exc}", age, t0)  # OSQP, NaN): safe tension
        except Exception as exc:  # noqa: BLE001  a bug: still safe tension, and its traceback
            _log.exception("%s: unexpected error in a control tick; minimum tension", self.name)
            return self._fail(f"internal error {type(exc).__name__}: {exc} (traceback logged)",
                              age, t0)

    def _control(self, snapshot: DynamicsSnapshot, terms: _SnapshotTerms, q: FloatArray,
                 qd: FloatArray, fresh: FreshState, goal: HandGoal, age: float,
                 t0: float) -> ControlOutput:
        raise NotImplementedError

    def _fail(self, reason: str, age: float, t0: float,
              status: str = "not solved") -> ControlOutput:
        return safe_output(self.robot, f"{self.name}: {reason}", age, status,
                           time.perf_counter() - t0)

    def _output(self, controlled_tension: FloatArray, activations: FloatArray,
                tau_null: FloatArray, residual: FloatArray, tau_ref: FloatArray,
                fresh: FreshState, goal: HandGoal, status: str, iterations: int,
                solve_time_s: float, objective: float, age: float, t0: float) -> ControlOutput:
        tension = self._tension_template.copy()
        tension[self._ci] = controlled_tension
        # NaN fails every comparison, hence "not >=" rather than "<"
        if not all_finite(tension) or not tension.min() >= self._f_min - _TENSION_SLACK_N:
            return self._fail(f"tension command out of range (non-finite or below f_min "
                              f"{self._f_min} N): {np.round(tension, 3).tolist()}", age, t0)
        if not all_finite(activations, tau_null, residual, tau_ref):
            return self._fail("non-finite controller state", age, t0)
        x = fresh.hand.position_m
        return ControlOutput(
            ok=True, reason="", tension_n=tension, activations=activations,
            tau_null_nm=tau_null, torque_residual_nm=residual, tau_ref_nm=tau_ref,
            hand_position_m=x, hand_error_m=goal.position_m - x, solver_status=status,
            iterations=iterations, solve_time_s=solve_time_s, snapshot_age_s=age,
            objective=objective, compute_time_s=time.perf_counter() - t0)


class OSCController(_TickBase):
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
                               daqp_config=config.daqp,
                               n_limit_rows=n if self._limits.enabled else 0,
                               accept_inaccurate=qp.accept_inaccurate,
                               tau_null_max_nm=bound)
        self._lower = np.zeros(mc)
        self._upper = np.full(mc, np.inf if qp.activation_max is None else qp.activation_max)
        self._upper_tick = self._upper.copy()
        self._integral = PositionIntegral(config.gains)  # off unless gains.ki_s3 > 0

    def reset(self) -> None:
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

    def _control(self, snapshot: DynamicsSnapshot, terms: _SnapshotTerms, q: FloatArray,
                 qd: FloatArray, fresh: FreshState, goal: HandGoal, age: float,
                 t0: float) -> ControlOutput:
        integral = None
        if self._integral.enabled:  # the tick's time is the snapshot's stamp plus its age
            integral = self._integral.update(goal.position_m - fresh.hand.position_m,
                                             snapshot.stamp_s + age)
        xdd = reference_acceleration(goal, fresh.hand, self.config.gains, self._rows, integral)
        coriolis = snapshot.coriolis_torque_nm if self.config.qp.coriolis else None
        tau_ref = reference_torque(snapshot.task_jacobian, snapshot.task_inertia, xdd,
                                   snapshot.gravity_torque_nm, coriolis)
        kv = self.config.gains.nullspace_damping_s
        if kv > 0.0:
            tau_ref += nullspace_damping_torque(snapshot.nullspace_projector,
                                                snapshot.mass_matrix, qd, kv)
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
            return _with_solver_info(out, res)
        return self._output(res.tension_n, res.activations, res.tau_null, res.torque_residual_nm,
                            tau_ref, fresh, goal, res.status, res.iterations, res.solve_time_s,
                            res.objective, age, t0)


def _with_solver_info(out: ControlOutput, res: QPResult) -> ControlOutput:
    """A failure output that still reports the solver's status, iterations and time."""
    return dataclasses.replace(out, solver_status=res.status, iterations=res.iterations,
                               solve_time_s=res.solve_time_s)


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


class JointStiffnessController(_JointTargetMixin, _TickBase):
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
                               accept_inaccurate=config.qp.accept_inaccurate)
        self._lower = np.full(mc, robot.hill.f_min_n)
        self._upper = np.full(mc, np.inf if tension_max_n is None else tension_max_n)
        self._init_target()

    def reset(self) -> None:
        super().reset()
        self.qp.reset()

    def _control(self, snapshot: DynamicsSnapshot, terms: _SnapshotTerms, q: FloatArray,
                 qd: FloatArray, fresh: FreshState, goal: HandGoal, age: float,
                 t0: float) -> ControlOutput:
        target = joint_stiffness_torque(self._stiffness, self.joint_target_rad, q,
                                        snapshot.gravity_torque_nm)
        balance = joint_stiffness_balance(terms.jm_controlled, target, terms.fixed_torque_nm)
        res = self.qp.solve(balance, self._lower, self._upper)
        if not res.found:
            return _with_solver_info(self._fail(f"QP eq16 not solved: {res.status}", age, t0,
                                                res.status), res)
        ci = self._ci
        act = _equivalent_activation(res.tension_n, fresh.forces.active_n[ci],
                                     fresh.forces.passive_n[ci])
        return self._output(res.tension_n, act, np.zeros(self.robot.arm.n_joints),
                            res.torque_residual_nm, target, fresh, goal, res.status,
                            res.iterations, res.solve_time_s, res.objective, age, t0)


class MuscleStiffnessController(_JointTargetMixin, _TickBase):
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

    def _control(self, snapshot: DynamicsSnapshot, terms: _SnapshotTerms, q: FloatArray,
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


def make_controller(name: str, robot: Robot, config: ControllerConfig,
                    file: str = "controller.yaml",
                    tension_max_n: float | None = None) -> Controller:
    """The controller called ``name`` (one of :data:`CONTROLLER_NAMES`); ``tension_max_n``: the
    actuators' limit its commands respect (see :class:`_TickBase`)."""
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
