"""Dynamics snapshot: projector identities, mask, inertia, Jacobian by finite differences."""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import pytest
from conftest import random_poses

from musculo_control.errors import InputError
from musculo_control.estimation.snapshot import DynamicsEstimator


def test_projector_identities(estimator, robot):
    for q in random_poses(robot, 30, seed=4):
        s = estimator.compute(q, np.zeros(7))
        if s.damped:
            continue
        N, Jbar, Lam = s.nullspace_projector, s.dyn_consistent_inverse, s.task_inertia
        scale = max(1.0, np.abs(Jbar).max())
        assert np.abs(Jbar.T @ N).max() < 1e-10 * scale
        assert np.abs(N @ N - N).max() < 1e-9
        assert np.allclose(Lam, Lam.T, atol=1e-9)
        assert np.linalg.eigvalsh(Lam).min() > 0
        # Lambda really is the inverse of J M^-1 J^T
        J, M = s.task_jacobian, s.mass_matrix
        assert np.allclose(Lam @ (J @ np.linalg.solve(M, J.T)), np.eye(5), atol=1e-8)
        # a nullspace torque N tau produces no task acceleration
        tau = np.random.default_rng(0).normal(size=7)
        assert np.abs(J @ np.linalg.solve(M, N @ tau)).max() < 1e-9


def test_mask_zeroes_exactly_eq13(estimator, robot):
    s = estimator.compute(robot.home_pose_rad, np.zeros(7))
    J = s.task_jacobian
    assert np.all(J[:3, 4:6] == 0.0)  # position rows ignore elbow_y, wrist_r
    assert np.all(J[3:, :4] == 0.0)  # orientation rows ignore joints 1-4
    full = s.hand_jacobian[[0, 1, 2, 4, 5]]
    keep = np.array(estimator.task.mask)
    assert np.array_equal(J[keep], full[keep])


def test_hand_jacobian_matches_finite_differences(estimator, robot):
    model = robot.arm.model
    data = model.createData()
    fid = robot.arm.task_frame_id
    h = 1e-6
    for q in random_poses(robot, 10, seed=5):
        J6 = estimator.compute(q, np.zeros(7)).hand_jacobian
        for j in range(7):
            dq = np.zeros(7)
            dq[j] = h
            pin.framesForwardKinematics(model, data, q + dq)
            xp, Rp = data.oMf[fid].translation.copy(), data.oMf[fid].rotation.copy()
            pin.framesForwardKinematics(model, data, q - dq)
            xm, Rm = data.oMf[fid].translation.copy(), data.oMf[fid].rotation.copy()
            assert np.allclose((xp - xm) / (2 * h), J6[:3, j], atol=1e-6)
            w = pin.log3(Rp @ Rm.T) / (2 * h)
            assert np.allclose(w, J6[3:, j], atol=1e-6)


def test_task_point_on_forearm_axis(estimator, robot):
    """SPEC section 1: elbow_y and wrist_r (and wrist_p) do not move the hand point."""
    s = estimator.compute(robot.home_pose_rad, np.zeros(7))
    assert np.abs(s.hand_jacobian[:3, 4:]).max() < 1e-12


def test_gravity_and_inertia(estimator, robot):
    s = estimator.compute(robot.home_pose_rad, np.zeros(7))
    assert np.allclose(s.mass_matrix, s.mass_matrix.T)
    assert np.linalg.eigvalsh(s.mass_matrix).min() > 0
    assert np.allclose(s.coriolis_torque_nm, 0.0)
    # gravity torque is minus the derivative of potential energy: check one joint numerically
    model, data = robot.arm.model, robot.arm.model.createData()

    def potential(q):
        pin.computeAllTerms(model, data, q, np.zeros(7))
        return pin.computePotentialEnergy(model, data, q)

    h = 1e-6
    for j in range(7):
        dq = np.zeros(7)
        dq[j] = h
        dV = (potential(s.q_rad + dq) - potential(s.q_rad - dq)) / (2 * h)
        assert abs(dV - s.gravity_torque_nm[j]) < 1e-6


def test_damped_inverse_engages_at_singularity(estimator, robot):
    q = robot.home_pose_rad.copy()
    q[3] = 0.0  # straight elbow: the hand cannot move along the arm
    s = estimator.compute(q, np.zeros(7))
    assert s.damped
    assert np.all(np.isfinite(s.task_inertia))
    assert np.abs(s.task_inertia).max() < 1e4


def test_bad_joint_vector_rejected(estimator):
    with pytest.raises(InputError, match="7 joint values"):
        estimator.compute(np.zeros(6), np.zeros(7))
    with pytest.raises(InputError, match="finite"):
        estimator.compute(np.full(7, np.nan), np.zeros(7))


def test_snapshot_is_immutable(estimator, robot):
    s = estimator.compute(robot.home_pose_rad, np.zeros(7))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.stamp_s = 1.0  # type: ignore[misc]


def test_estimator_rejects_mask_of_wrong_width(robot, task):
    from musculo_control.errors import ConfigError

    bad = dataclasses.replace(task, mask=tuple(row[:6] for row in task.mask))
    with pytest.raises(ConfigError, match="7 entries"):
        DynamicsEstimator(robot, bad)
