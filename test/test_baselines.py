"""The paper's baselines (paper eq. 16-17): exact oracle, stiffness, the rules for what the paper
leaves open (eq. 16's k, eq. 17's k_m), eq. 17's static sag, safety."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import random_poses
from scipy.optimize import lsq_linear

from musculo_control.control.baselines import (
    JointStiffnessController,
    MuscleStiffnessController,
    joint_stiffness_balance,
    joint_stiffness_scale,
    joint_stiffness_torque,
    muscle_stiffness_equilibrium,
    muscle_stiffness_joint_stiffness,
    muscle_stiffness_matching_k,
    muscle_stiffness_tension,
)
from musculo_control.control.controller import make_controller
from musculo_control.control.controller_config import load_controller_config
from musculo_control.control.goal import HandGoal
from musculo_control.errors import ConfigError, InputError


@pytest.fixture(scope="module")
def config(config_dir):
    return load_controller_config(config_dir)


def eq16_oracle(robot, snapshot, q, q_des, config, weight):
    """Exact eq. 16 by BVLS: min sum_i w_i f_i^2 + ||Jm^T f + K (q_des - q) + g + Jm_fix^T f_fix||^2
    (``weight`` w: the paper's k for every muscle, or the rule's qp.k / f1_i^2)."""
    js = config.baselines.joint_stiffness
    jm = snapshot.muscle_jacobian
    ci, fi = robot.controlled_idx, robot.fixed_idx
    c = (np.array(js.stiffness_nm_rad) * (q_des - q) + snapshot.gravity_torque_nm
         + jm[fi].T @ robot.fixed_tension_n)
    w = np.broadcast_to(weight, (len(ci),))
    A = np.vstack([jm[ci].T, np.diag(np.sqrt(w))])
    res = lsq_linear(A, np.r_[-c, np.zeros(len(ci))], bounds=(robot.hill.f_min_n, np.inf),
                     method="bvls", tol=1e-15)
    f = res.x
    return f, w @ f**2 + np.sum((jm[ci].T @ f + c) ** 2)


@pytest.mark.parametrize("k", [None, 1e-5])
def test_joint_stiffness_matches_the_exact_oracle(robot, config, estimator, k):
    """The rule's per-muscle weight (k null, the shipped setting) and the paper's scalar k."""
    cfg = dataclasses.replace(config, baselines=dataclasses.replace(
        config.baselines,
        joint_stiffness=dataclasses.replace(config.baselines.joint_stiffness, k=k)))
    ctrl = make_controller("joint-stiffness", robot, cfg)
    weight = ctrl.tension_weight
    q_des = robot.home_pose_rad
    for q in random_poses(robot, 40, seed=21):
        s = estimator.compute(q, np.zeros(7), 0.0)
        out = ctrl.tick(s, q, np.zeros(7), HandGoal.hold(s.hand_position_m), 0.0)
        assert out.ok, out.reason
        f_ref, cost_ref = eq16_oracle(robot, s, q, q_des, cfg, weight)
        assert out.objective == pytest.approx(cost_ref, rel=1e-6)
        ci = robot.controlled_idx
        assert np.allclose(out.tension_n[ci], f_ref, atol=1e-4 * max(1.0, f_ref.max()))
        assert np.all(out.tension_n >= robot.hill.f_min_n)  # eq. 16's bound, exactly
        assert np.array_equal(out.tension_n[robot.fixed_idx], robot.fixed_tension_n)


def test_joint_stiffness_weight_rule(robot, config):
    """k null: qp.k on each tension over its muscle's f1 (f = a f1); a number: the paper's k."""
    f1 = np.array([200.0, 400.0, 50.0])
    k, scale = joint_stiffness_scale(None, 0.01, f1)
    assert k == 0.01 and np.array_equal(scale, f1)
    k, scale = joint_stiffness_scale(3e-6, 0.01, f1)
    assert k == 3e-6 and np.array_equal(scale, np.ones(3))
    assert config.baselines.joint_stiffness.k is None  # the shipped arm uses the rule
    ctrl = make_controller("joint-stiffness", robot, config)
    assert np.allclose(ctrl.tension_weight, config.qp.k / robot.f1_n[robot.controlled_idx]**2)
    # the rule needs qp.k > 0
    no_k = dataclasses.replace(config, qp=dataclasses.replace(config.qp, k=0.0, solver="osqp"))
    with pytest.raises(ConfigError, match="baselines.joint_stiffness.k"):
        make_controller("joint-stiffness", robot, no_k)


def start_poses(robot):
    """home_pose_rad and every named pose of robot.yaml (the experiments' start poses)."""
    return [robot.home_pose_rad] + [robot.poses.solve_named(p.name, robot.home_pose_rad).q_rad
                                    for p in robot.poses.config.named]


def test_joint_stiffness_rule_holds_gravity(robot, config, estimator):
    """At the experiments' start poses the rule's weight leaves under 1 % of ||g|| unheld (the
    earlier 1e-5 on tensions: 8-12 %, mostly on shoulder_y)."""
    for q in start_poses(robot):
        s = estimator.compute(q, np.zeros(7), 0.0)
        goal = HandGoal.hold(s.hand_position_m)
        ctrl = make_controller("joint-stiffness", robot, config)
        ctrl.set_joint_target(q)
        out = ctrl.tick(s, q, np.zeros(7), goal, 0.0)
        assert out.ok, out.reason
        assert np.linalg.norm(out.torque_residual_nm) < 0.01 * np.linalg.norm(
            s.gravity_torque_nm)


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
    k_m = ctrl.stiffness_n_m
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


def test_muscle_stiffness_joint_stiffness_is_one_sided(robot):
    """Turning one joint by +-h stretches only the muscles of one sign of moment arm: eq. 17's
    restoring torque, averaged over both directions, is k_m/2 sum_i Jm_ij^2 per radian."""
    q_des = robot.home_pose_rad
    ci = robot.controlled_idx
    l_des = robot.geometry.lengths_at(q_des)[ci]
    k_m, h = 1e5, 1e-5
    s = muscle_stiffness_joint_stiffness(robot.geometry.kinematics_at(q_des).jacobian[ci])
    for j in range(robot.arm.n_joints):
        stiff = []
        for sign in (1.0, -1.0):
            q = q_des.copy()
            q[j] += sign * h
            kin = robot.geometry.kinematics_at(q)
            f = muscle_stiffness_tension(kin.length_m[ci], l_des, k_m, 0.0)
            tau = -kin.jacobian[ci].T @ f
            stiff.append(-tau[j] / (sign * h))  # restoring: torque against the turn
        assert np.mean(stiff) == pytest.approx(k_m * s[j], rel=1e-3)
        assert min(stiff) >= 0.0


def test_muscle_stiffness_matching_rule(robot, config):
    """k_m = sum K s / sum s^2: exact where one scalar can match K, least squares otherwise; the
    controller computes it at home_pose_rad when controller.yaml leaves it null."""
    jm = np.array([[0.02, 0.0], [-0.02, 0.01], [0.0, -0.01]])
    s = muscle_stiffness_joint_stiffness(jm)
    assert muscle_stiffness_matching_k(jm, 3e4 * s) == pytest.approx(3e4)
    K = np.array([40.0, 2.0])
    k_m = muscle_stiffness_matching_k(jm, K)
    grid = np.linspace(0.5, 1.5, 101) * k_m
    assert np.argmin([np.sum((k * s - K) ** 2) for k in grid]) == 50  # the minimum
    with pytest.raises(ValueError):
        muscle_stiffness_matching_k(np.zeros((3, 2)), K)
    assert config.baselines.muscle_stiffness.stiffness_n_m is None  # shipped: the rule
    ctrl = MuscleStiffnessController(robot, config)
    jm_home = robot.geometry.kinematics_at(robot.home_pose_rad).jacobian[robot.controlled_idx]
    K7 = np.array(config.baselines.joint_stiffness.stiffness_nm_rad)
    assert ctrl.stiffness_n_m == pytest.approx(muscle_stiffness_matching_k(jm_home, K7))
    given = dataclasses.replace(config, baselines=dataclasses.replace(
        config.baselines, muscle_stiffness=dataclasses.replace(
            config.baselines.muscle_stiffness, stiffness_n_m=1234.0)))
    assert MuscleStiffnessController(robot, given).stiffness_n_m == 1234.0


def test_muscle_stiffness_equilibrium_balances_gravity(robot):
    """The pose eq. 17 settles in is a still one: its springs carry the model's gravity there."""
    q_des = robot.home_pose_rad
    k_m = 1e5
    eq = muscle_stiffness_equilibrium(robot, q_des, k_m)
    assert eq.residual_nm < 1e-3
    ci, fi = robot.controlled_idx, robot.fixed_idx
    kin = robot.geometry.kinematics_at(eq.q_rad)
    f = np.zeros(robot.n_muscles)
    f[fi] = robot.fixed_tension_n
    f[ci] = muscle_stiffness_tension(kin.length_m[ci], robot.geometry.lengths_at(q_des)[ci],
                                     k_m, robot.hill.f_min_n)
    g = robot.arm.body.gravity_torque(robot.arm.body.workspace(), eq.q_rad)
    inside = (eq.q_rad > robot.arm.lower_rad) & (eq.q_rad < robot.arm.upper_rad)
    assert np.allclose((kin.jacobian.T @ f + g)[inside], 0.0, atol=1e-3)
    assert eq.hand_moved_m > 0.0  # it sank: at q_des every muscle pulls only f_min


def test_muscle_stiffness_cannot_hold_at_the_rule(robot, config):
    """Eq. 17 has no gravity term: at the rule's k_m the model's arm sinks far beyond
    start_hold's 2 cm at every start pose; the sag falls as k_m rises, and only k_m two orders
    of magnitude stiffer brings it within 2 cm (doc/controller.md, "Baselines")."""
    k_rule = MuscleStiffnessController(robot, config).stiffness_n_m
    for q in start_poses(robot):
        sags = [muscle_stiffness_equilibrium(robot, q, k).hand_moved_m
                for k in (k_rule, 10 * k_rule, 1000 * k_rule)]
        assert sags[0] > 0.05
        assert sags[0] > sags[1] > sags[2]
        assert sags[2] < 0.02
