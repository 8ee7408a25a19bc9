"""The paper's baselines (paper eq. 16-17, SPEC section 6): their math and their controllers.

- Joint stiffness (eq. 16): ``min_f k ||f||^2 + ||Jm^T f + K (q_des - q) + g||^2``, ``f >= f_min``.
  The same bounded least squares as eq. 10 with tensions as the variables (``f_a = 1``,
  ``f_p = 0``, lower bound ``f_min``), so it is solved by the same :class:`ActivationQP`.
- Muscle stiffness (eq. 17): ``f_i = max(k_m (l_i - l_des,i), 0) + f_min`` with
  ``l_des = l(q_des)``: no optimisation at all.

What the paper leaves open, each chosen by a rule (doc/controller.md, "Baselines"):

- eq. 16's weight k: the activation QP's ``qp.k`` on each tension in units of its muscle's peak
  active force, ``(qp.k / f1_i^2) f_i^2`` (:func:`joint_stiffness_scale`); the paper's K is
  given.
- eq. 17's k_m: the joint stiffness it gives at ``home_pose_rad`` matches eq. 16's K in least
  squares (:func:`muscle_stiffness_matching_k`). :func:`muscle_stiffness_equilibrium` is where
  eq. 17 holds an arm under the model's gravity: eq. 17 has no gravity term, so it holds a pose
  only as far as its springs sag.

Both controllers (:class:`JointStiffnessController`, :class:`MuscleStiffnessController`) hold
a joint target ``q_des`` and ignore the hand goal but for reporting the hand error. Their
settings are :mod:`musculo_control.control.baselines_config`.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from scipy.optimize import lsq_linear

from musculo_control.control.activation_qp import ActivationQP
from musculo_control.control.controller_config import ControllerConfig
from musculo_control.control.fresh_state import FreshState
from musculo_control.control.goal import HandGoal
from musculo_control.control.output import ControlOutput
from musculo_control.control.qp_problem import TorqueBalance
from musculo_control.control.tick_base import SnapshotTerms, TickBase, with_solver_info
from musculo_control.errors import ConfigError
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.model.robot import Robot

_log = logging.getLogger(__name__)
FloatArray = npt.NDArray[np.float64]


# -- eq. 16 -------------------------------------------------------------------------------------
def joint_stiffness_torque(stiffness_nm_rad: FloatArray, q_des: FloatArray, q: FloatArray,
                           gravity_nm: FloatArray) -> FloatArray:
    """(n,) ``K (q_des - q) + g`` [Nm]: the torque the muscles should produce (paper eq. 16)."""
    return stiffness_nm_rad * (q_des - q) + gravity_nm


def joint_stiffness_scale(k: float | None, qp_k: float,
                          f1_n: FloatArray) -> tuple[float, FloatArray]:
    """``(weight, scale)``: eq. 16 solved in ``a = f / scale`` with ``weight ||a||^2``.

    ``k`` given: the paper's form, ``k ||f||^2`` (``scale`` 1). ``k`` None: the rule,
    ``sum_i (qp_k / f1_i^2) f_i^2``, the activation QP's weight on each tension as the
    activation it is at the optimal length (``f = a f1``), so eq. 16 and eq. 10-11 weigh effort
    alike; ``f1_n`` (m,) of the controlled muscles [N].
    """
    f1 = np.asarray(f1_n, dtype=float)
    if k is not None:
        return float(k), np.ones_like(f1)
    return float(qp_k), f1.copy()


def joint_stiffness_balance(muscle_jacobian: FloatArray, target_torque_nm: FloatArray,
                            fixed_torque_nm: FloatArray,
                            scale: FloatArray | None = None) -> TorqueBalance:
    """Eq. 16 as the torque balance of the activation QP, with the tensions (``scale`` 1) or
    ``f / scale`` (:func:`joint_stiffness_scale`) as variables.

    ``muscle_jacobian`` (m, n) of the controlled muscles; ``fixed_torque_nm`` is
    ``Jm_fixed^T f_fixed`` of the uncontrolled muscles.
    """
    m = muscle_jacobian.shape[0]
    active = np.ones(m) if scale is None else scale
    return TorqueBalance(muscle_jacobian, active, np.zeros(m),
                         target_torque_nm + fixed_torque_nm, None)


# -- eq. 17 -------------------------------------------------------------------------------------
def muscle_stiffness_tension(length_m: FloatArray, length_des_m: FloatArray,
                             stiffness_n_m: float, f_min_n: float) -> FloatArray:
    """(m,) ``max(k_m (l - l_des), 0) + f_min`` [N] (paper eq. 17)."""
    return np.maximum(stiffness_n_m * (length_m - length_des_m), 0.0) + f_min_n


def muscle_stiffness_joint_stiffness(muscle_jacobian: FloatArray) -> FloatArray:
    """(n,) eq. 17's stiffness of each joint per unit k_m at ``l = l_des`` [m^2/rad^2].

    Turning joint j alone by a small angle stretches only the muscles whose moment arm on it
    has one sign, and only stretched muscles pull (eq. 17 is one-sided): the stiffness is
    ``k_m sum_{i: Jm_ij > 0} Jm_ij^2`` one way and ``k_m sum_{i: Jm_ij < 0} Jm_ij^2`` the other,
    ``k_m / 2 sum_i Jm_ij^2`` on average. This returns ``sum_i Jm_ij^2 / 2``.
    """
    return 0.5 * np.einsum("ij,ij->j", muscle_jacobian, muscle_jacobian)


def muscle_stiffness_matching_k(muscle_jacobian: FloatArray,
                                stiffness_nm_rad: FloatArray) -> float:
    """The k_m [N/m] whose joint stiffness (:func:`muscle_stiffness_joint_stiffness`) matches
    ``stiffness_nm_rad`` (eq. 16's K) in least squares over the joints:
    ``k_m = sum_j K_j s_j / sum_j s_j^2``. One scalar cannot give every joint its K; the joints
    of large K and large moment arms weigh most."""
    s = muscle_stiffness_joint_stiffness(muscle_jacobian)
    k = np.asarray(stiffness_nm_rad, dtype=float)
    denom = float(s @ s)
    if not denom > 0.0:
        raise ValueError("no muscle moves any joint at this pose: no k_m matches K")
    return float(k @ s) / denom


class Equilibrium(NamedTuple):
    """Where eq. 17 holds the arm still under the model's gravity
    (:func:`muscle_stiffness_equilibrium`)."""

    q_rad: FloatArray  # (n,) the pose [rad]
    residual_nm: float  # largest unbalanced torque left, joints on a stop excepted [Nm]
    hand_moved_m: float  # |hand(q) - hand(q_des)| [m]
    elbow_moved_m: float  # |elbow(q) - elbow(q_des)| [m]; nan without robot.yaml poses
    tension_max_n: float  # largest tension of the controlled muscles there [N]
    iterations: int


def muscle_stiffness_equilibrium(robot: Robot, q_des_rad: FloatArray, stiffness_n_m: float, *,
                                 tol_nm: float = 1e-6, max_iter: int = 400) -> Equilibrium:
    """The still pose eq. 17 settles in under the model's gravity, from ``q_des_rad``.

    Eq. 17 has no gravity term: at ``q_des`` every muscle pulls ``f_min``, so the arm sinks until
    its stretched muscles hold its weight, ``Jm(q)^T f(q) + g(q) = 0`` (the uncontrolled muscles
    at their constant tension, the joints within their limits). That residual is the gradient of
    the springs' and gravity's potential, so the pose is found by descending it, from ``q_des``,
    with implicit (backward Euler) steps of an adaptive length (:func:`_descend`): it is the
    minimum the arm sinks into when it sinks slowly (a fast fall may overshoot into another).
    The static sag of an arm without damping or friction; the mock arm adds its model error,
    friction and the loop.
    """
    q_des = robot.arm.check_q(q_des_rad, "q_des_rad")
    sag = _Sag(robot, q_des, stiffness_n_m)
    q, r, held, it = _descend(sag, q_des, tol_nm, max_iter)
    sag.residual(q)  # the tensions at q
    hand = float(np.linalg.norm(robot.arm.hand_pose(q)[0] - robot.arm.hand_pose(q_des)[0]))
    if robot.poses is not None:
        elbow = float(np.linalg.norm(robot.poses.elbow_position(q)
                                     - robot.poses.elbow_position(q_des)))
    else:
        elbow = float("nan")
    left = float(np.abs(r[~held]).max()) if np.any(~held) else 0.0
    return Equilibrium(q, left, hand, elbow, float(sag.tension[sag.ci].max()), it)


class _Sag:
    """Eq. 17's springs, stretched from ``l(q_des)``, against the model's gravity: the
    residual torque ``Jm(q)^T f(q) + g(q)`` [Nm] (SPEC section 2's sign) whose zero
    :func:`muscle_stiffness_equilibrium` finds."""

    def __init__(self, robot: Robot, q_des: FloatArray, stiffness_n_m: float) -> None:
        self.robot = robot
        self.ci = robot.controlled_idx
        self.body = robot.arm.body
        self.ws = self.body.workspace()
        self.lower, self.upper = robot.arm.lower_rad, robot.arm.upper_rad
        self.stiffness_n_m = stiffness_n_m
        self.length_des = robot.geometry.lengths_at(q_des)[self.ci]
        #: (m,) the tensions at the last residual's pose: eq. 17's, the others' constant [N]
        self.tension = np.zeros(robot.n_muscles)
        self.tension[robot.fixed_idx] = robot.fixed_tension_n

    def residual(self, q: FloatArray) -> FloatArray:
        """(n,) ``Jm(q)^T f(q) + g(q)`` [Nm], with f of eq. 17 (also kept in :attr:`tension`)."""
        robot, ci = self.robot, self.ci
        kin = robot.geometry.kinematics_at(q)
        self.tension[ci] = muscle_stiffness_tension(kin.length_m[ci], self.length_des,
                                                    self.stiffness_n_m, robot.hill.f_min_n)
        return np.asarray(kin.jacobian.T @ self.tension + self.body.gravity_torque(self.ws, q),
                          dtype=float)

    def on_stop(self, q: FloatArray, r: FloatArray) -> npt.NDArray[np.bool_]:
        """Joints on a stop with the torque pushing into it: the stop holds them."""
        return ((q <= self.lower) & (r > 0.0)) | ((q >= self.upper) & (r < 0.0))

    def jacobian(self, q: FloatArray, r: FloatArray, idx: npt.NDArray[np.intp]) -> FloatArray:
        """(k, k) the residual's derivative over the joints ``idx`` at ``q`` (residual ``r``),
        by one-sided finite differences inside the limits, symmetrised (a potential's
        Hessian) [Nm/rad]."""
        n, h = q.size, 1e-7
        jac = np.empty((idx.size, idx.size))
        for col, j in enumerate(idx):
            dq = np.zeros(n)
            dq[j] = h if q[j] + h <= self.upper[j] else -h
            jac[:, col] = (self.residual(q + dq)[idx] - r[idx]) / dq[j]
        return 0.5 * (jac + jac.T)


def _descend(sag: _Sag, q_des: FloatArray, tol_nm: float,
             max_iter: int) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_], int]:
    """Descend ``sag``'s residual from ``q_des`` by implicit (backward Euler) steps in
    pseudo-time, ``(I / step + J) dq = -r`` over the joints no stop holds, the step growing
    fourfold after a step that lowers the residual and shrinking fourfold after one that does
    not; until the residual is within ``tol_nm`` [Nm]. Returns (pose [rad], residual [Nm],
    joints a stop holds, iterations)."""
    n = q_des.size
    q = q_des.copy()
    r = sag.residual(q)
    held = sag.on_stop(q, r)
    step = 1e-3  # pseudo-time step [rad/Nm]
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        free = ~held
        if not np.any(free) or float(np.abs(r[free]).max()) <= tol_nm:
            break
        idx = np.flatnonzero(free)
        jac = sag.jacobian(q, r, idx)
        delta = np.zeros(n)
        try:
            delta[idx] = np.linalg.solve(np.eye(idx.size) / step + jac, -r[idx])
        except np.linalg.LinAlgError:
            step *= 0.25
            continue
        q_new = np.clip(q + delta, sag.lower, sag.upper)
        r_new = sag.residual(q_new)
        held_new = sag.on_stop(q_new, r_new)
        if np.linalg.norm(r_new[~held_new]) < np.linalg.norm(r[free]):
            q, r, held = q_new, r_new, held_new
            step = min(step * 4.0, 1e6)
        else:
            step *= 0.25
            if step < 1e-12:
                break
    return q, r, held, it


# -- the controllers ----------------------------------------------------------------------------
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

    def start_from(self, q_rad: npt.ArrayLike, tension_n: npt.ArrayLike) -> None:
        """Switched in while the arm is at ``q_rad`` under the tensions ``tension_n`` [N] (all
        muscles): hold that pose (a bumpless start; loop/switch.py)."""
        self.set_joint_target(q_rad)


def holding_tensions(robot: Robot, q_rad: FloatArray, tension_n: FloatArray) -> FloatArray:
    """(m,) the tensions nearest ``tension_n`` [N] that hold the arm still at ``q_rad``:
    the controlled muscles' least change (each at least the minimum tension) that zeroes the
    torque balance ``Jm^T f + g`` (SPEC section 2's sign), solved as a bounded least squares
    whose small second term picks the least change among the exact ones."""
    ci = robot.controlled_idx
    kin = robot.geometry.kinematics_at(q_rad)
    body = robot.arm.body
    residual = kin.jacobian.T @ tension_n + body.gravity_torque(body.workspace(), q_rad)
    a = kin.jacobian[ci].T  # (n, mc) [m]
    weight = 1e-4 * float(np.abs(a).max())  # [m]: a newton of change against 1e-4 N m
    lhs = np.vstack([a, weight * np.eye(len(ci))])
    rhs = np.concatenate([-residual, np.zeros(len(ci))])
    lower = robot.hill.f_min_n - tension_n[ci]
    change = lsq_linear(lhs, rhs, bounds=(lower, np.full(len(ci), np.inf))).x
    out = np.array(tension_n, dtype=float)
    out[ci] += change
    return out


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

    def start_from(self, q_rad: npt.ArrayLike, tension_n: npt.ArrayLike) -> None:
        """Switched in at ``q_rad`` under the tensions ``tension_n`` [N] (all muscles): the
        springs' rest lengths are set so that at ``q_rad`` they pull the tensions nearest those
        that hold the arm still (:func:`holding_tensions`),
        ``l_des = l(q) - (f - f_min) / k_m``. Eq. 17 from ``l(q_des)`` carries no gravity term
        and would let the arm sink (its baseline runs show it); the tensions in force may
        carry a nullspace torque (eq. 11) that would drive the joints on. The next joint target
        sets ``l_des = l(q_des)`` again."""
        self.set_joint_target(q_rad)
        q, ci = self.joint_target_rad, self._ci
        hold = holding_tensions(self.robot, q, np.asarray(tension_n, dtype=float))
        self._length_des = self.robot.geometry.lengths_at(q)[ci] \
            - (hold[ci] - self._f_min) / self._k_m

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
