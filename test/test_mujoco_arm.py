"""The MuJoCo model built from the URDF and muscles file is an independent oracle for the
controller's model: same tendon lengths and Jacobian (MuJoCo's ten_J against Jm), same gravity
torque (qfrc_bias against Pinocchio), joint limits in radians, and a tension actuator that pulls.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from conftest import random_poses

from musculo_control.config.parser import parse
from musculo_control.errors import ConfigError
from musculo_control.sim.mock_arm import load_mock_config
from musculo_control.sim.mujoco_arm import (
    ModelErrorConfig,
    PhysicsConfig,
    build_mujoco_arm,
    draw_model_error,
    site_name,
    tendon_jacobian,
    warning_counts,
)


@pytest.fixture(scope="module")
def exact(robot):
    """The model with no model error: the controller's own geometry and masses."""
    return build_mujoco_arm(robot)


def _forward(arm, q, qd=None):
    data = mujoco.MjData(arm.model)
    data.qpos[arm.qpos_adr] = q
    if qd is not None:
        data.qvel[arm.dof_adr] = qd
    mujoco.mj_forward(arm.model, data)
    return data


def test_tendon_lengths_and_jacobian_match_the_muscle_model(robot, exact):
    for q in random_poses(robot, 60, seed=11, margin_rad=0.0):
        data = _forward(exact, q)
        kin = robot.geometry.kinematics_at(q)
        ten_j = tendon_jacobian(exact.model, data)[exact.tendon_ids][:, exact.dof_adr]
        np.testing.assert_allclose(data.ten_length[exact.tendon_ids], kin.length_m, atol=1e-12)
        np.testing.assert_allclose(ten_j, kin.jacobian, atol=1e-10)


def test_jacobian_oracle_can_fail(robot, exact):
    """The comparison is sensitive: one via-point moved by 1 mm shows up in Jm."""
    q = robot.home_pose_rad
    n_points = sum(len(m.path) for m in robot.muscles_config.muscles)
    offsets = np.zeros((n_points, 3))
    offsets[1] = [0.001, 0.0, 0.0]  # second point of the first muscle
    from musculo_control.sim.mujoco_arm import ModelError
    moved = build_mujoco_arm(robot, error=ModelError(via_point_offset_m=offsets))
    a, b = _forward(exact, q), _forward(moved, q)
    diff = np.abs(tendon_jacobian(exact.model, a) - tendon_jacobian(moved.model, b))
    assert diff[0].max() > 1e-5 and diff[1:].max() == 0.0


def test_sites_sit_where_pinocchio_puts_the_via_points(robot, exact):
    """Link frames survive the import: no fused body re-expresses a via-point."""
    pdata = robot.new_data()
    for q in random_poses(robot, 5, seed=2):
        data = _forward(exact, q)
        pin.forwardKinematics(robot.arm.model, pdata, q)
        expected = robot.geometry.point_positions(pdata)
        names = [site_name(m.name, k) for m in robot.muscles_config.muscles
                 for k in range(len(m.path))]
        got = np.array([data.site_xpos[exact.site_id[n]] for n in names])
        np.testing.assert_allclose(got, expected, atol=1e-12)


def test_hand_body_is_the_task_frame(robot, exact):
    pdata = robot.new_data()
    q = robot.home_pose_rad
    data = _forward(exact, q)
    pin.framesForwardKinematics(robot.arm.model, pdata, q)
    np.testing.assert_allclose(data.xpos[exact.task_body_id],
                               pdata.oMf[robot.arm.task_frame_id].translation, atol=1e-12)


def test_joint_limits_are_imported_in_radians(robot, exact):
    rng = exact.model.jnt_range[[exact.joint_id[n] for n in robot.arm.joint_names]]
    np.testing.assert_allclose(rng[:, 0], robot.arm.lower_rad)
    np.testing.assert_allclose(rng[:, 1], robot.arm.upper_rad)
    assert all(exact.model.jnt_limited[exact.joint_id[n]] for n in robot.arm.joint_names)


def test_gravity_bias_equals_pinocchio_gravity(robot, exact):
    """Same URDF, same masses and frames: qfrc_bias at qd = 0 is g(q) (SPEC section 2)."""
    pdata = robot.new_data()
    for q in random_poses(robot, 50, seed=5):
        data = _forward(exact, q, np.zeros(robot.arm.n_joints))
        g = pin.computeGeneralizedGravity(robot.arm.model, pdata, q)
        np.testing.assert_allclose(data.qfrc_bias[exact.dof_adr], g, atol=1e-9)


def test_mass_matrix_equals_pinocchio(robot, exact):
    pdata = robot.new_data()
    q = robot.home_pose_rad
    data = _forward(exact, q)
    full = np.zeros((exact.model.nv, exact.model.nv))
    mujoco.mj_fullM(exact.model, data, full)
    mass = pin.crba(robot.arm.model, pdata, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    np.testing.assert_allclose(full[np.ix_(exact.dof_adr, exact.dof_adr)], mass, atol=1e-10)


def test_positive_control_pulls_with_torque_minus_jm_transpose_f(robot, exact):
    rng = np.random.default_rng(3)
    data = _forward(exact, robot.home_pose_rad)
    f = rng.uniform(0.0, 100.0, robot.n_muscles)
    data.ctrl[exact.actuator_ids] = f
    mujoco.mj_forward(exact.model, data)
    jm = robot.geometry.kinematics_at(robot.home_pose_rad).jacobian
    np.testing.assert_allclose(data.qfrc_actuator[exact.dof_adr], -jm.T @ f, atol=1e-9)
    np.testing.assert_allclose(data.actuator_force[exact.actuator_ids], f, atol=1e-12)


def test_a_moment_arm_factor_scales_its_muscles_torque_and_not_its_path(robot, exact):
    """physics.moment_arm_scale: muscle i's tension makes k_i times the torque -Jm^T f
    (Jm the controller's own), while the tendons' lengths, what the encoders and the
    capstan see, stay as routed."""
    rng = np.random.default_rng(4)
    k = rng.uniform(0.8, 1.2, robot.n_muscles)
    scaled = build_mujoco_arm(robot, PhysicsConfig(moment_arm_scale=tuple(k)))
    q = robot.home_pose_rad
    f = rng.uniform(0.0, 100.0, robot.n_muscles)
    data, ref = _forward(scaled, q), _forward(exact, q)
    data.ctrl[scaled.actuator_ids] = f
    mujoco.mj_forward(scaled.model, data)
    jm = robot.geometry.kinematics_at(q).jacobian
    np.testing.assert_allclose(data.qfrc_actuator[scaled.dof_adr], -jm.T @ (k * f), atol=1e-9)
    np.testing.assert_allclose(data.actuator_force[scaled.actuator_ids], f, atol=1e-12)
    np.testing.assert_allclose(data.ten_length[scaled.tendon_ids],
                               ref.ten_length[exact.tendon_ids], atol=1e-12)
    with pytest.raises(ConfigError) as err:  # one factor per muscle
        build_mujoco_arm(robot, PhysicsConfig(moment_arm_scale=(1.0, 1.1)), file="m.yaml")
    assert "physics.moment_arm_scale" in str(err.value) and "m.yaml" in str(err.value)
    assert f"{robot.n_muscles} factors" in str(err.value)


@pytest.mark.parametrize("muscle", [0, 6, 12])
def test_a_pulled_tendon_shortens(robot, exact, muscle):
    """From rest without gravity, one tendon's tension makes that tendon shorter."""
    model = exact.model
    saved = model.opt.gravity.copy()
    model.opt.gravity[:] = 0.0
    try:
        data = _forward(exact, robot.home_pose_rad)
        l0 = data.ten_length[exact.tendon_ids[muscle]]
        data.ctrl[exact.actuator_ids[muscle]] = 20.0
        for _ in range(50):
            mujoco.mj_step(model, data)
        mujoco.mj_forward(model, data)
        assert data.ten_length[exact.tendon_ids[muscle]] < l0 - 1e-5
    finally:
        model.opt.gravity[:] = saved


def test_compiles_and_steps_one_second_under_random_controls_without_warnings(robot, config_dir):
    """Every model compiles and steps (MuJoCo Menagerie's rule), with the mock's physics and a
    model error, under random tensions in [0, 150] N held for 20 ms each."""
    cfg = load_mock_config(robot, config_dir / "mock_arm.yaml")
    error = draw_model_error(robot, cfg.model_error, np.random.default_rng(0))
    arm = build_mujoco_arm(robot, cfg.physics, error)
    data = mujoco.MjData(arm.model)
    data.qpos[arm.qpos_adr] = robot.home_pose_rad
    rng = np.random.default_rng(1)
    steps = round(1.0 / arm.model.opt.timestep)
    for k in range(steps):
        if k % 20 == 0:
            data.ctrl[:] = rng.uniform(0.0, 150.0, arm.model.nu)
        mujoco.mj_step(arm.model, data)
    assert warning_counts(data) == {}
    assert np.all(np.isfinite(data.qpos)) and np.all(np.isfinite(data.qvel))
    assert data.time == pytest.approx(1.0)


def test_physics_config_reaches_the_model(robot, config_dir):
    cfg = load_mock_config(robot, config_dir / "mock_arm.yaml")
    arm = build_mujoco_arm(robot, cfg.physics)
    m = arm.model
    assert m.opt.timestep == cfg.physics.timestep_s
    np.testing.assert_allclose(m.dof_damping[arm.dof_adr], cfg.physics.joint_damping_nm_s_rad)
    np.testing.assert_allclose(m.dof_frictionloss[arm.dof_adr], cfg.physics.joint_frictionloss_nm)
    np.testing.assert_allclose(m.opt.gravity, robot.arm.config.gravity_m_s2)
    np.testing.assert_allclose(m.jnt_solref[[arm.joint_id[n] for n in robot.arm.joint_names], 0],
                               cfg.physics.joint_limit_time_constant_s)


def test_physics_config_errors_name_the_key(robot):
    with pytest.raises(ConfigError) as info:
        parse(PhysicsConfig, {"timestep_s": 0.002, "joint_limit_time_constant_s": 0.003},
              "mock_arm.yaml", "physics")
    assert info.value.key == "physics.joint_limit_time_constant_s"
    with pytest.raises(ConfigError) as info:
        build_mujoco_arm(robot, PhysicsConfig(joint_damping_nm_s_rad=(0.1, 0.2)))
    assert info.value.key == "physics.joint_damping_nm_s_rad"
    assert "7 values" in info.value.expected


def test_model_error_is_seeded_and_bounded(robot, exact):
    cfg = ModelErrorConfig(link_mass_error_percent=10.0, via_point_error_mm=3.0)
    e1 = draw_model_error(robot, cfg, np.random.default_rng(7))
    e2 = draw_model_error(robot, cfg, np.random.default_rng(7))
    e3 = draw_model_error(robot, cfg, np.random.default_rng(8))
    np.testing.assert_array_equal(e1.via_point_offset_m, e2.via_point_offset_m)
    assert dict(e1.mass_scale) == dict(e2.mass_scale)
    assert not np.array_equal(e1.via_point_offset_m, e3.via_point_offset_m)
    assert np.all(np.linalg.norm(e1.via_point_offset_m, axis=1) <= 3e-3 + 1e-15)
    assert all(0.9 <= s <= 1.1 for s in e1.mass_scale.values())
    wrong = build_mujoco_arm(robot, error=e1)
    ratio = wrong.model.body_mass[1:] / np.maximum(exact.model.body_mass[1:], 1e-300)
    moving = exact.model.body_mass[1:] > 0
    assert np.all(np.abs(ratio[moving] - 1.0) <= 0.1 + 1e-12)
    assert np.any(np.abs(ratio[moving] - 1.0) > 1e-3)
    q = robot.home_pose_rad
    assert np.abs(_forward(wrong, q).ten_length - _forward(exact, q).ten_length).max() > 1e-4


def test_model_error_off_gives_the_exact_model(robot):
    e = draw_model_error(robot, ModelErrorConfig(enabled=False), np.random.default_rng(0))
    assert not e.mass_scale and len(e.via_point_offset_m) == 0


def test_oracle_holds_for_rotated_joint_frames_and_inertials(robot, config_dir, tmp_path):
    """A URDF with rotated joint origins, rotated inertial frames and off-diagonal inertia:
    MuJoCo's import and this builder keep link frames, so Jm, l and g(q) still agree."""
    import shutil
    import xml.etree.ElementTree as ET

    from musculo_control.model.robot import load_robot

    folder = tmp_path / "arm"
    shutil.copytree(config_dir, folder)
    urdf = folder / "arm.urdf"
    tree = ET.parse(urdf)
    moving = [j for j in tree.getroot().iter("joint") if j.get("type") != "fixed"]
    for k, joint in enumerate(moving[1:4]):  # small tilts that keep every muscle's role
        origin = joint.find("origin")
        if origin is None:
            origin = ET.SubElement(joint, "origin")
        origin.set("rpy", f"{0.05 * (k + 1)} {-0.04 * k} 0.06")
    for inertial in tree.getroot().iter("inertial"):
        origin = inertial.find("origin")
        if origin is None:
            origin = ET.SubElement(inertial, "origin")
        origin.set("rpy", "0.3 0.1 -0.2")
        inertia = inertial.find("inertia")
        if inertia is not None:
            small = 0.05 * min(float(inertia.get(a, "0")) for a in ("ixx", "iyy", "izz"))
            inertia.set("ixy", f"{small}")
            inertia.set("ixz", f"{-small}")
    tree.write(urdf)
    shipped, robot = robot, load_robot(folder)
    q = shipped.home_pose_rad
    assert np.abs(robot.geometry.lengths_at(q)
                  - shipped.geometry.lengths_at(q)).max() > 1e-3
    arm = build_mujoco_arm(robot)
    pdata = robot.new_data()
    for q in random_poses(robot, 20, seed=4):
        data = _forward(arm, q, np.zeros(robot.arm.n_joints))
        kin = robot.geometry.kinematics_at(q)
        np.testing.assert_allclose(data.ten_length[arm.tendon_ids], kin.length_m, atol=1e-12)
        np.testing.assert_allclose(tendon_jacobian(arm.model, data)[arm.tendon_ids][:, arm.dof_adr],
                                   kin.jacobian, atol=1e-10)
        g = pin.computeGeneralizedGravity(robot.arm.model, pdata, q)
        np.testing.assert_allclose(data.qfrc_bias[arm.dof_adr], g, atol=1e-9)
