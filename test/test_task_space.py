"""Task-space reference (SPEC section 4, paper eq. 14-15), the hand goal and the workspace check."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pinocchio as pin
import pytest
from conftest import random_poses

from musculo_control.config.parser import parse
from musculo_control.control.goal import HandGoal, WorkspaceConfig, check_goal
from musculo_control.control.task_space import (
    GainsConfig,
    HandState,
    nullspace_posture_torque,
    orientation_error,
    reference_acceleration,
    reference_acceleration_6d,
    reference_torque,
)
from musculo_control.errors import ConfigError, InputError
from musculo_control.model.task import TaskConfig


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    return pin.exp3(rng.normal(size=3))


def _rz(angle: float) -> np.ndarray:
    return pin.exp3(np.array([0.0, 0.0, angle]))


# -- orientation error ------------------------------------------------------------------------
def test_orientation_error_recovers_the_applied_rotation():
    rng = np.random.default_rng(0)
    for _ in range(100):
        R = _random_rotation(rng)
        theta = rng.normal(size=3)
        theta *= min(1.0, 3.0 / np.linalg.norm(theta))  # below a half turn: log is unique
        R_des = pin.exp3(theta) @ R  # rotate by theta about WORLD axes
        assert np.allclose(orientation_error(R_des, R), theta, atol=1e-9)


def test_orientation_error_has_no_wrap_jump():
    """Yaw 179 deg to -179 deg is a 2 deg error, where Euler differences give -358 deg."""
    deg = math.pi / 180.0
    err = orientation_error(_rz(-179 * deg), _rz(179 * deg))
    assert np.allclose(err, [0.0, 0.0, 2 * deg], atol=1e-12)
    # and it is continuous along a path of goals sweeping through the wrap
    R = _rz(179 * deg) @ pin.exp3(np.array([0.3, 0.0, 0.0]))
    angles = np.linspace(170, 190, 201) * deg
    errs = np.array([orientation_error(_rz(a) @ pin.exp3(np.array([0.3, 0.0, 0.0])), R)
                     for a in angles])
    assert np.abs(np.diff(errs, axis=0)).max() < 2 * (angles[1] - angles[0])


def test_orientation_error_is_zero_at_the_goal():
    R = _random_rotation(np.random.default_rng(1))
    assert np.allclose(orientation_error(R, R), 0.0, atol=1e-12)


# -- reference acceleration (eq. 14-15) -------------------------------------------------------
def _hand(rng: np.random.Generator) -> HandState:
    return HandState(rng.normal(size=3), rng.normal(size=3), _random_rotation(rng),
                     rng.normal(size=3))


def test_reference_acceleration_formula():
    rng = np.random.default_rng(2)
    gains = GainsConfig(kp_s2=300.0, kd_s=None, kr_s2=200.0, kdr_s=3.0)
    assert gains.kd == pytest.approx(2 * math.sqrt(300.0))  # critically damped default
    hand = _hand(rng)
    goal = HandGoal(rng.normal(size=3), rng.normal(size=3), rng.normal(size=3),
                    _random_rotation(rng))
    acc = reference_acceleration_6d(goal, hand, gains)
    expect_lin = (300.0 * (goal.position_m - hand.position_m)
                  + gains.kd * (goal.velocity_m_s - hand.velocity_m_s) + goal.acceleration_m_s2)
    expect_ang = (200.0 * orientation_error(goal.rotation, hand.rotation)
                  - 3.0 * hand.angular_velocity_rad_s)
    assert np.allclose(acc, np.concatenate([expect_lin, expect_ang]))
    rows = TaskConfig(rows=("vx", "vy", "vz", "wy", "wz"), mask=((True,),) * 5).row_indices()
    assert np.allclose(reference_acceleration(goal, hand, gains, rows), acc[[0, 1, 2, 4, 5]])


def test_no_rotation_target_leaves_only_damping():
    rng = np.random.default_rng(3)
    hand = _hand(rng)
    goal = HandGoal(hand.position_m)
    acc = reference_acceleration_6d(goal, hand, GainsConfig(kdr_s=0.0))
    assert np.allclose(acc[3:], 0.0)
    acc = reference_acceleration_6d(goal, hand, GainsConfig(kdr_s=2.0))
    assert np.allclose(acc[3:], -2.0 * hand.angular_velocity_rad_s)


def test_explicit_kd_is_used():
    assert GainsConfig(kp_s2=100.0, kd_s=5.0).kd == 5.0


def test_unknown_task_row_is_a_config_error():
    with pytest.raises(ConfigError, match="wq") as info:
        parse(TaskConfig, {"rows": ["vx", "wq"], "mask": [[True], [True]]}, "controller.yaml",
              "task")
    assert info.value.key == "task.rows[1]"


def test_gains_parse_from_yaml_mapping():
    g = parse(GainsConfig, {"kp_s2": 400.0, "kd_s": None}, "controller.yaml", "gains")
    assert g.kd == pytest.approx(40.0)
    with pytest.raises(ConfigError, match="gains.kp_s2"):
        parse(GainsConfig, {"kp_s2": -1.0}, "controller.yaml", "gains")


# -- reference torque -------------------------------------------------------------------------
def test_reference_torque_produces_the_reference_task_acceleration(estimator, robot):
    """With tau = tau_ref at rest, M qdd + g = tau gives J qdd = xdd_r (Lambda inverts J M^-1 J^T)."""
    rng = np.random.default_rng(4)
    checked = 0
    for q in random_poses(robot, 20, seed=8):
        s = estimator.compute(q, np.zeros(7))
        if s.damped:
            continue
        xdd = rng.normal(size=5)
        tau = reference_torque(s.task_jacobian, s.task_inertia, xdd, s.gravity_torque_nm)
        qdd = np.linalg.solve(s.mass_matrix, tau - s.gravity_torque_nm)
        assert np.allclose(s.task_jacobian @ qdd, xdd, atol=1e-8)
        # the same through Pinocchio's own forward dynamics (ABA)
        qdd_aba = pin.aba(robot.arm.model, robot.arm.model.createData(), q, np.zeros(7), tau)
        assert np.allclose(qdd_aba, qdd, atol=1e-8)
        checked += 1
    assert checked >= 10


def test_reference_torque_coriolis_option(estimator, robot):
    s = estimator.compute(robot.home_pose_rad, np.linspace(-1, 1, 7))
    base = reference_torque(s.task_jacobian, s.task_inertia, np.zeros(5), s.gravity_torque_nm)
    with_c = reference_torque(s.task_jacobian, s.task_inertia, np.zeros(5), s.gravity_torque_nm,
                              s.coriolis_torque_nm)
    assert np.allclose(base, s.gravity_torque_nm)
    assert np.allclose(with_c - base, s.coriolis_torque_nm)
    assert np.abs(s.coriolis_torque_nm).max() > 1e-3  # the test is not vacuous


def test_the_nullspace_posture_spring_leaves_the_task_alone_and_pulls_toward_the_target(
        estimator, robot):
    """N K (q_home - q) gives the hand no acceleration (J M^-1 N = 0, eq. 8; checked through
    Pinocchio's ABA) and does positive work toward the target (it is a spring, projected)."""
    stiffness = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0])  # the forearm roll only
    checked = 0
    for q in random_poses(robot, 20, seed=9):
        s = estimator.compute(q, np.zeros(7))
        if s.damped:
            continue
        tau = nullspace_posture_torque(s.nullspace_projector, stiffness, robot.home_pose_rad, q)
        qdd = pin.aba(robot.arm.model, robot.arm.model.createData(), q, np.zeros(7),
                      tau + s.gravity_torque_nm)
        qdd_g = pin.aba(robot.arm.model, robot.arm.model.createData(), q, np.zeros(7),
                        s.gravity_torque_nm)
        assert np.allclose(s.task_jacobian @ (qdd - qdd_g), 0.0, atol=1e-8)
        if abs(q[4] - robot.home_pose_rad[4]) > 0.05:
            assert float((qdd - qdd_g)[4] * (robot.home_pose_rad[4] - q[4])) > 0.0
            checked += 1
    assert checked >= 5


def test_a_posture_stiffness_per_joint_is_required(robot, config_dir):
    from musculo_control.control.controller import OSCController
    from musculo_control.control.controller_config import load_controller_config

    config = load_controller_config(config_dir)
    bad = dataclasses.replace(config, gains=dataclasses.replace(
        config.gains, nullspace_posture_nm_rad=(1.0, 2.0)))
    with pytest.raises(ConfigError, match="gains.nullspace_posture_nm_rad"):
        OSCController(robot, bad)


# -- hand goal --------------------------------------------------------------------------------
def test_goal_defaults_and_immutability():
    g = HandGoal.hold([0.3, 0.2, 0.3])
    assert np.array_equal(g.velocity_m_s, np.zeros(3))
    assert np.array_equal(g.acceleration_m_s2, np.zeros(3))
    assert g.rotation is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.position_m = np.zeros(3)  # type: ignore[misc]
    with pytest.raises(ValueError):
        g.position_m[0] = 1.0  # read-only array


@pytest.mark.parametrize("kwargs, match", [
    ({"position_m": [np.nan, 0, 0]}, "finite"),
    ({"position_m": [0, 0]}, "3 values"),
    ({"position_m": [0, 0, 0], "velocity_m_s": [0, np.inf, 0]}, "finite"),
    ({"position_m": [0, 0, 0], "acceleration_m_s2": np.zeros((3, 1))}, "3 values"),
    ({"position_m": [0, 0, 0], "rotation": np.eye(3) * 2}, "proper rotation"),
    ({"position_m": [0, 0, 0], "rotation": np.diag([1.0, 1.0, -1.0])}, "proper rotation"),
    ({"position_m": [0, 0, 0], "rotation": np.full((3, 3), np.nan)}, "finite"),
])
def test_bad_goals_raise_input_error(kwargs, match):
    with pytest.raises(InputError, match=match):
        HandGoal(**kwargs)


def test_goal_from_quaternion_matches_pinocchio():
    rng = np.random.default_rng(5)
    for _ in range(10):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        g = HandGoal.from_pose([0.1, 0.2, 0.3], quat)
        expect = pin.Quaternion(quat[3], quat[0], quat[1], quat[2]).toRotationMatrix()
        assert np.allclose(g.rotation, expect, atol=1e-12)
    with pytest.raises(InputError, match="unit norm"):
        HandGoal.from_pose([0, 0, 0], [0, 0, 0, 2.0])


def test_workspace_check(config_dir):
    from musculo_control.control.controller_config import load_controller_config

    ws = load_controller_config(config_dir).workspace
    centre = np.array(ws.center_m)
    inside = HandGoal.hold(centre + [0.2, 0.0, -0.2])
    assert check_goal(inside, ws) is None
    far = HandGoal.hold(centre + [ws.reach_m + 0.01, 0.0, 0.0])
    assert "reach" in check_goal(far, ws)
    box = WorkspaceConfig(center_m=(0.0, 0.0, 0.0), reach_m=10.0,
                          box_min_m=(-1.0, -1.0, 0.0), box_max_m=(1.0, 1.0, 1.0))
    reason = check_goal(HandGoal.hold([0.0, 0.0, -0.5]), box)
    assert reason is not None and "z" in reason
    with pytest.raises(ConfigError, match="box_min_m"):
        parse(WorkspaceConfig, {"center_m": [0, 0, 0], "reach_m": 1.0, "box_min_m": [0, 0, 1],
                                "box_max_m": [1, 1, 1]}, "controller.yaml", "workspace")
