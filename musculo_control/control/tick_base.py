"""What every controller shares (:class:`TickBase`): input checks, snapshot age, the fresh
state, per-snapshot terms, the final tension check and output assembly; a tick never raises and
never returns a NaN or a tension below the minimum (see
:mod:`musculo_control.control.controller`)."""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import Protocol

import numpy as np
import numpy.typing as npt

from musculo_control.arrays import all_finite
from musculo_control.control.controller_config import ControllerConfig
from musculo_control.control.fresh_state import FreshState, FreshStateEstimator
from musculo_control.control.goal import HandGoal
from musculo_control.control.output import ControlOutput, safe_output
from musculo_control.control.qp_problem import QPResult
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.model.robot import Robot

_log = logging.getLogger(__name__)
FloatArray = npt.NDArray[np.float64]

#: Slack below f_min tolerated in a final tension check (rounding of a f_a + f_p) [N].
_TENSION_SLACK_N = 1e-9


class Controller(Protocol):
    """What every controller offers (the QP node and the simulation runner use only this)."""

    name: str

    def tick(self, snapshot: DynamicsSnapshot | None, q_rad: npt.ArrayLike,
             qd_rad_s: npt.ArrayLike, goal: HandGoal, t_s: float) -> ControlOutput: ...

    def reset(self) -> None: ...


class SnapshotTerms:
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


class TickBase:
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
        self._terms: SnapshotTerms | None = None
        self._need_inverse = False
        self._f_min = robot.hill.f_min_n
        self._ci, self._fi = robot.controlled_idx, robot.fixed_idx
        # every muscle's tension with the uncontrolled ones already in place (copied per tick)
        self._tension_template = np.zeros(robot.n_muscles)
        self._tension_template[self._fi] = robot.fixed_tension_n

    def reset(self) -> None:
        """Forget the last snapshot's terms."""
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
                self._terms = SnapshotTerms(self.robot, snapshot, self._need_inverse)
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

    def _control(self, snapshot: DynamicsSnapshot, terms: SnapshotTerms, q: FloatArray,
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


def with_solver_info(out: ControlOutput, res: QPResult) -> ControlOutput:
    """A failure output that still reports the solver's status, iterations and time."""
    return dataclasses.replace(out, solver_status=res.status, iterations=res.iterations,
                               solve_time_s=res.solve_time_s)
