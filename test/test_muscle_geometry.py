"""Muscle lengths and Jacobian: finite differences and sign conventions (SPEC sections 2, 9)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from conftest import random_poses


def test_jacobian_matches_central_differences(robot):
    h = 1e-6
    worst = 0.0
    for q in random_poses(robot, 60, seed=1):
        jm = robot.geometry.kinematics_at(q).jacobian
        fd = np.empty_like(jm)
        for j in range(robot.arm.n_joints):
            dq = np.zeros_like(q)
            dq[j] = h
            fd[:, j] = (robot.geometry.lengths_at(q + dq)
                        - robot.geometry.lengths_at(q - dq)) / (2 * h)
        worst = max(worst, float(np.abs(jm - fd).max()))
    assert worst < 1e-6, worst


def test_lengths_are_sum_of_segment_lengths(robot):
    """Independent path: rebuild every via-point from the URDF frames and sum the segments."""
    model = robot.arm.model
    data = model.createData()
    q = robot.home_pose_rad
    pin.framesForwardKinematics(model, data, q)
    lengths = robot.geometry.lengths_at(q)
    for i, spec in enumerate(robot.muscles_config.muscles):
        pts = [data.oMf[model.getFrameId(vp.link)].act(np.array(vp.point_m)) for vp in spec.path]
        expected = sum(np.linalg.norm(b - a) for a, b in zip(pts[:-1], pts[1:]))
        assert abs(lengths[i] - expected) < 1e-12


def test_flexor_shortens_and_flexes(robot):
    """Elbow flexion is negative elbow_p: the biceps shortens and its torque is negative."""
    q = robot.home_pose_rad.copy()
    elbow = robot.arm.joint_names.index("elbow_p")
    biceps = robot.muscle_names.index("biceps")
    triceps = robot.muscle_names.index("triceps_lateral")
    l0 = robot.geometry.lengths_at(q).copy()
    q_flexed = q.copy()
    q_flexed[elbow] -= 0.1
    l1 = robot.geometry.lengths_at(q_flexed)
    assert l1[biceps] < l0[biceps]  # a flexor shortens as the joint flexes
    assert l1[triceps] > l0[triceps]
    jm = robot.geometry.kinematics_at(q).jacobian
    f = np.zeros(robot.n_muscles)
    f[biceps] = 50.0
    tau = -jm.T @ f  # SPEC section 2: tau_muscle = -Jm^T f
    assert tau[elbow] < 0.0  # flexing torque
    f[:] = 0.0
    f[triceps] = 50.0
    assert (-jm.T @ f)[elbow] > 0.0


def test_shortening_muscle_gives_positive_torque(robot):
    """Whenever l decreases with q_i, tension produces positive torque on joint i."""
    for q in random_poses(robot, 20, seed=2):
        jm = robot.geometry.kinematics_at(q).jacobian
        for i in range(robot.n_muscles):
            f = np.zeros(robot.n_muscles)
            f[i] = 1.0
            tau = -jm.T @ f
            assert np.all(np.sign(tau[np.abs(jm[i]) > 1e-9]) == -np.sign(jm[i][np.abs(jm[i]) > 1e-9]))


def test_every_joint_pulled_both_ways_near_home(robot):
    jm = robot.geometry.kinematics_at(robot.home_pose_rad).jacobian[robot.controlled_idx]
    assert np.all((jm < -1e-4).any(axis=0))
    assert np.all((jm > 1e-4).any(axis=0))


def test_length_ranges_cover_sampled_poses(robot):
    for q in random_poses(robot, 200, seed=3, margin_rad=0.0):
        lengths = robot.geometry.lengths_at(q)
        assert np.all(lengths >= robot.l_min_m - 2e-3)
        assert np.all(lengths <= robot.l_max_m + 2e-3)


def test_stand_in_arm_shape(robot):
    """SPEC section 1: 7 joints in order, 18 muscles of which 15 are controlled."""
    assert robot.arm.joint_names == ("shoulder_p", "shoulder_r", "shoulder_y", "elbow_p",
                                     "elbow_y", "wrist_r", "wrist_p")
    assert robot.n_muscles == 18
    assert len(robot.controlled_idx) == 15
    assert np.all(robot.fixed_tension_n > 0)
