"""The paper's baselines (paper eq. 16-17): exact oracle, stiffness, safety."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_poses
from scipy.optimize import lsq_linear

from musculo_control.control.baseline_controllers import (
    JointStiffnessController,
    MuscleStiffnessController,
)
from musculo_control.control.baselines import (
    joint_stiffness_balance,
    joint_stiffness_torque,
    muscle_stiffness_tension,
)
from musculo_control.control.controller import make_controller
from musculo_control.control.controller_config import load_controller_config
from musculo_control.control.goal import HandGoal
from musculo_control.errors import InputError


@pytest.fixture(scope="module")
def config(config_dir):
    return load_controller_config(config_dir)


def eq16_oracle(robot, snapshot, q, q_des, config):
    """Exact eq. 16 by BVLS: min k ||f||^2 + ||Jm^T f + K (q_des - q) + g + Jm_fix^T f_fix||^2."""
    js = config.baselines.joint_stiffness
    jm = snapshot.muscle_jacobian
    ci, fi = robot.controlled_idx, robot.fixed_idx
    c = (np.array(js.stiffness_nm_rad) * (q_des - q) + snapshot.gravity_torque_nm
         + jm[fi].T @ robot.fixed_tension_n)
    A = np.vstack([jm[ci].T, np.sqrt(js.k) * np.eye(len(ci))])
    res = lsq_linear(A, np.r_[-c, np.zeros(len(ci))], bounds=(robot.hill.f_min_n, np.inf),
                     method="bvls", tol=1e-15)
    f = res.x
    return f, js.k * f @ f + np.sum((jm[ci].T @ f + c) ** 2)


def test_joint_stiffness_matches_the_exact_oracle(robot, config, estimator):
    ctrl = make_controller("joint-stiffness", robot, config)
    q_des = robot.home_pose_rad
    for q in random_poses(robot, 40, seed=21):
        s = estimator.compute(q, np.zeros(7), 0.0)
        out = ctrl.tick(s, q, np.zeros(7), HandGoal.hold(s.hand_position_m), 0.0)
        assert out.ok, out.reason
        f_ref, cost_ref = eq16_oracle(robot, s, q, q_des, config)
        assert out.objective == pytest.approx(cost_ref, rel=1e-6)
        ci = robot.controlled_idx
        assert np.allclose(out.tension_n[ci], f_ref, atol=1e-4 * max(1.0, f_ref.max()))
        assert np.all(out.tension_n >= robot.hill.f_min_n)  # eq. 16's bound, exactly
        assert np.array_equal(out.tension_n[robot.fixed_idx], robot.fixed_tension_n)


def test_joint_stiffness_torque_and_balance_signs(robot, estimator):
    K = np.array([40.0, 40, 40, 15, 2, 2, 2])
    q_des = robot.home_pose_rad
    q = q_des + 0.1
    g = np.arange(7.0)
    assert np.allclose(joint_stiffness_torque(K, q_des, q, g), -0.1 * K + g)
    s = estimator.compute(q, np.zeros(7))
    jm = s.muscle_jacobian[robot.controlled_idx]
    b = joint_stiffness_balance(jm, g, np.ones(7))
    assert np.all(b.active_n == 1.0) and np.all(b.passive_n == 0.0) and b.nullspace is None
    assert np.allclose(b.offset_nm, g + 1.0)


def test_joint_stiffness_pulls_back_towards_q_des(robot, config, estimator):
    """Away from q_des the muscles add K (q_des - q) to the torque (where the QP can)."""
    ctrl = JointStiffnessController(robot, config)
    q_des = robot.home_pose_rad
    s0 = estimator.compute(q_des, np.zeros(7), 0.0)
    goal = HandGoal.hold(s0.hand_position_m)
    base = ctrl.tick(s0, q_des, np.zeros(7), goal, 0.0)
    dq = np.zeros(7)
    dq[3] = 0.05  # elbow
    s1 = estimator.compute(q_des + dq, np.zeros(7), 0.0)
    out = ctrl.tick(s1, q_des + dq, np.zeros(7), goal, 0.0)
    tau0 = -s0.muscle_jacobian.T @ base.tension_n
    tau1 = -s1.muscle_jacobian.T @ out.tension_n
    restoring = (tau1 - s1.gravity_torque_nm) - (tau0 - s0.gravity_torque_nm)
    assert restoring[3] < 0.0  # pushed back towards q_des
    assert restoring[3] == pytest.approx(-15.0 * 0.05, rel=0.2)


def test_muscle_stiffness_formula(robot):
    l_des = np.array([0.2, 0.3, 0.4])
    f = muscle_stiffness_tension(np.array([0.19, 0.3, 0.41]), l_des, 1000.0, 5.0)
    assert np.allclose(f, [5.0, 5.0, 15.0])  # slack muscles at f_min, stretched ones pull


def test_muscle_stiffness_controller(robot, config, estimator):
    ctrl = MuscleStiffnessController(robot, config)
    q_des = robot.home_pose_rad
    s = estimator.compute(q_des, np.zeros(7), 0.0)
    out = ctrl.tick(s, q_des, np.zeros(7), HandGoal.hold(s.hand_position_m), 0.0)
    assert out.ok
    ci = robot.controlled_idx
    assert np.allclose(out.tension_n[ci], robot.hill.f_min_n)  # at l_des: only f_min
    # away from q_des each muscle's tension follows its own stretch
    q = q_des + np.array([0.05, -0.05, 0.05, 0.05, -0.05, 0.05, -0.05])
    s2 = estimator.compute(q, np.zeros(7), 0.0)
    out2 = ctrl.tick(s2, q, np.zeros(7), HandGoal.hold(s.hand_position_m), 0.0)
    stretch = s2.muscle_length_m[ci] - s.muscle_length_m[ci]
    k_m = config.baselines.muscle_stiffness.stiffness_n_m
    expect = np.maximum(k_m * stretch, 0.0) + robot.hill.f_min_n
    assert np.allclose(out2.tension_n[ci], expect, atol=1e-9)
    assert np.any(stretch > 0) and np.any(stretch < 0)
    # the stretched muscles pull the arm back: virtual work -Jm^T f . (q - q_des) < 0
    tau = -s2.muscle_jacobian[ci].T @ (out2.tension_n[ci] - robot.hill.f_min_n)
    assert tau @ (q - q_des) < 0.0


def test_set_joint_target(robot, config, estimator):
    for name in ("joint-stiffness", "muscle-stiffness"):
        ctrl = make_controller(name, robot, config)
        q_new = robot.home_pose_rad + 0.1
        ctrl.set_joint_target(q_new)
        assert np.allclose(ctrl.joint_target_rad, q_new)
        with pytest.raises(InputError):
            ctrl.set_joint_target(np.zeros(3))
    ms = MuscleStiffnessController(robot, config)
    ms.set_joint_target(q_new)
    s = estimator.compute(q_new, np.zeros(7), 0.0)
    out = ms.tick(s, q_new, np.zeros(7), HandGoal.hold(s.hand_position_m), 0.0)
    assert np.allclose(out.tension_n[robot.controlled_idx], robot.hill.f_min_n)
