"""Pose solver: Jacobian by finite differences, round trips through forward kinematics, limits."""

from __future__ import annotations

import shutil

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import random_poses

from musculo_control.errors import ConfigError, InputError, MusculoError
from musculo_control.model.poses import PoseError
from musculo_control.model.robot import load_robot


@pytest.fixture(scope="module")
def solver(robot):
    assert robot.poses is not None, "the shipped robot.yaml has a 'poses' section"
    return robot.poses


def _fk_targets(robot, solver, q):
    """Independent path: frame placements straight from Pinocchio's forward kinematics."""
    model = robot.arm.model
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    return (data.oMf[robot.arm.task_frame_id].translation.copy(),
            float(data.oMf[solver.elbow_frame_id].translation[2]))


def test_constraint_jacobian_matches_central_differences(robot, solver):
    h = 1e-6
    for q in random_poses(robot, 10, seed=11):
        J = solver.constraint_jacobian(q)
        fd = np.empty_like(J)
        for j in range(robot.arm.n_joints):
            dq = np.zeros(robot.arm.n_joints)
            dq[j] = h
            hp, zp = solver.targets_at(q + dq)
            hm, zm = solver.targets_at(q - dq)
            fd[:3, j] = (hp - hm) / (2 * h)
            fd[3, j] = (zp - zm) / (2 * h)
        assert np.abs(J - fd).max() < 1e-7


def test_solve_round_trip_meets_targets_within_limits(robot, solver):
    rng = np.random.default_rng(12)
    fixed = np.setdiff1d(np.arange(robot.arm.n_joints), solver.ik_idx)
    solved = 0
    for q_true in random_poses(robot, 12, seed=13, margin_rad=0.3):
        hand, ez = _fk_targets(robot, solver, q_true)
        q0 = q_true.copy()
        q0[solver.ik_idx] += rng.uniform(-0.15, 0.15, solver.ik_idx.size)
        q0 = np.clip(q0, robot.arm.lower_rad, robot.arm.upper_rad)
        sol = solver.solve(q0, hand, ez)
        hand_s, ez_s = _fk_targets(robot, solver, sol.q_rad)
        tol = solver.config.tolerance_m
        assert np.abs(hand_s - hand).max() < tol and abs(ez_s - ez) < tol
        assert np.all(sol.q_rad >= robot.arm.lower_rad) and np.all(sol.q_rad <= robot.arm.upper_rad)
        assert np.array_equal(sol.q_rad[fixed], q0[fixed])  # joints outside ik_joints untouched
        solved += 1
    assert solved == 12


def test_unreachable_hand_raises_pose_error_naming_the_target(robot, solver):
    with pytest.raises(PoseError) as info:
        solver.solve(robot.home_pose_rad, [1.5, 0.2, 0.4], 0.3)
    assert isinstance(info.value, MusculoError)
    assert "[1.5, 0.2, 0.4]" in str(info.value)
    assert info.value.hand_error_m > 0.5


def test_elbow_beyond_a_joint_limit_reports_the_joint(robot, solver):
    """Raising the elbow with the hand at home needs more internal rotation than shoulder_y has."""
    hand, _ = solver.targets_at(robot.home_pose_rad)
    with pytest.raises(PoseError) as info:
        solver.solve(robot.home_pose_rad, hand, 0.55)
    assert info.value.at_limit, str(info.value)
    assert "joints at a limit" in str(info.value)


def test_bad_inputs_raise_input_error(robot, solver):
    q = robot.home_pose_rad.copy()
    q[0] = robot.arm.upper_rad[0] + 0.1
    with pytest.raises(InputError, match="shoulder_p"):
        solver.solve(q, [0.3, 0.2, 0.3], 0.2)
    with pytest.raises(InputError, match="hand_m"):
        solver.solve(robot.home_pose_rad, [0.3, np.nan, 0.3], 0.2)
    with pytest.raises(InputError, match="high_elbow"):
        solver.named("no_such_pose")


def test_elbow_path_keeps_the_hand_and_moves_continuously(robot, solver):
    hand, z0 = solver.targets_at(robot.home_pose_rad)
    heights = z0 + np.linspace(0.0, 0.08, 9)
    path = solver.elbow_path(robot.home_pose_rad, heights)
    assert len(path) == len(heights)
    for sol, z in zip(path, heights):
        h, ez = _fk_targets(robot, solver, sol.q_rad)
        assert np.abs(h - hand).max() < 1e-5 and abs(ez - z) < 1e-5
    steps = np.abs(np.diff([s.q_rad for s in path], axis=0)).max()
    assert steps < 0.2  # one branch, no jumps


def test_named_poses_meet_their_description(robot, solver):
    home_hand, _ = solver.targets_at(robot.home_pose_rad)
    for pose in solver.config.named:
        sol = solver.solve_named(pose.name, robot.home_pose_rad)
        hand, ez = _fk_targets(robot, solver, sol.q_rad)
        want = home_hand if pose.hand_m is None else np.array(pose.hand_m)
        assert np.abs(hand - want).max() < 1e-5, pose.name
        assert abs(ez - pose.elbow_z_m) < 1e-5, pose.name


def test_trajectory_start_poses_rise_in_elbow_height(robot, solver):
    """SPEC section 8B: start poses A, B, C share the hand position, with rising elbow height."""
    names = ["trajectory_a", "trajectory_b", "trajectory_c"]
    poses = [solver.named(n) for n in names]
    assert poses[0].hand_m == poses[1].hand_m == poses[2].hand_m
    heights = [p.elbow_z_m for p in poses]
    assert heights == sorted(heights) and len(set(heights)) == 3
    centre = np.array([0.36, 0.25, 0.30])  # SPEC section 1: trajectory centre
    start = np.array(poses[0].hand_m)
    assert abs(np.linalg.norm(start - centre) - 0.10) < 1e-9  # half of the 0.20 m stroke
    for n in names:
        q = solver.solve_named(n, robot.home_pose_rad).q_rad
        elbow = robot.arm.joint_names.index("elbow_p")
        assert q[elbow] < -0.5  # reached with a bent elbow


def _mutated(tmp_path, config_dir, change):
    folder = tmp_path / "robot"
    shutil.copytree(config_dir, folder)
    path = folder / "robot.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


@pytest.mark.parametrize("change, key, expected", [
    (lambda d: d["poses"].__setitem__("elbow_frame", "elbo"), "poses.elbow_frame",
     "a frame of the URDF"),
    (lambda d: d["poses"]["ik_joints"].__setitem__(1, "shoulder_roll"), "poses.ik_joints[1]",
     "a joint of the arm"),
    (lambda d: d["poses"]["named"].append(dict(d["poses"]["named"][0])), "poses.named[",
     "a unique pose name"),
    (lambda d: d["poses"]["operating_point"].__setitem__("pose", "hi_elbow"),
     "poses.operating_point.pose", "a name of poses.named"),
    (lambda d: d["poses"]["named"][0].__setitem__("hand_m", [0.3, 0.2]), "poses.named[0].hand_m",
     "a list of 3 items"),
])
def test_bad_poses_section_names_key(tmp_path, config_dir, change, key, expected):
    folder = _mutated(tmp_path, config_dir, change)
    with pytest.raises(ConfigError) as info:
        load_robot(folder)
    assert info.value.file.endswith("robot.yaml")
    assert key in info.value.key, str(info.value)
    assert expected in info.value.expected, str(info.value)


def test_poses_section_is_optional(tmp_path, config_dir):
    folder = _mutated(tmp_path, config_dir, lambda d: d.pop("poses"))
    assert load_robot(folder).poses is None


def test_task_point_is_the_wrist_centre_on_the_forearm_axis(robot, solver):
    """SPEC section 1: elbow_y and wrist_r (and wrist_p) turn about axes through the hand point,
    so they never move it; this is what makes the decoupling mask of eq. 13 sound."""
    for q in random_poses(robot, 10, seed=14):
        J = solver.constraint_jacobian(q)
        assert np.abs(J[:3, 4:]).max() < 1e-12

