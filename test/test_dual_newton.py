"""Newton on the dual of eq. 10/11 (control/dual_newton.py) and ``qp.solver: auto``.

The oracle is SciPy's BVLS on the stacked least squares (it shares nothing with the dual): on
the synthetic arms the solver is built for (up to MyoArm's 63 / 38 and 120 / 28), on random
problems with fixed, binding and infinite bounds, and from a cold start far from the answer
(where the line search has to damp the steps).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.optimize import lsq_linear
from solver_field import bvls, record_synthetic

from musculo_control.control.activation_qp import ActivationQP
from musculo_control.control.controller import OSCController
from musculo_control.control.qp_config import SolverChoiceConfig, choose_solver
from musculo_control.control.qp_problem import TorqueBalance
from musculo_control.model.synthetic import SyntheticRobot, fewest_muscles, write_synthetic_arm
from musculo_control.tick_benchmark.config import BenchConfig

K, R = 0.01, 0.05


@pytest.fixture(scope="module")
def config(config_dir):
    from musculo_control.control.controller_config import load_controller_config

    return load_controller_config(config_dir)


def exact(b: TorqueBalance, lower, upper, null_lower=None, null_upper=None, k=K, r=R):
    """BVLS over z = [a; tau_null] (eq. 11) or a (eq. 10): the activations and tau_null."""
    B = b.muscle_jacobian.T * b.active_n
    c = b.muscle_jacobian.T @ b.passive_n + b.offset_nm
    n, m = B.shape
    if b.nullspace is None:
        A, lo, hi = np.vstack([B, np.sqrt(k) * np.eye(m)]), lower, upper
    else:
        A = np.block([[B, b.nullspace], [np.sqrt(k) * np.eye(m), np.zeros((m, n))],
                      [np.zeros((n, m)), np.sqrt(r) * np.eye(n)]])
        lo = np.r_[lower, np.full(n, -np.inf) if null_lower is None else null_lower]
        hi = np.r_[upper, np.full(n, np.inf) if null_upper is None else null_upper]
    rhs = np.r_[-c, np.zeros(A.shape[0] - n)]
    # BVLS wants lower < upper: a fixed coordinate (lower == upper) moves to the right-hand side
    fixed = lo == hi
    z = np.where(fixed, lo, 0.0)
    rhs = rhs - A[:, fixed] @ lo[fixed]
    res = lsq_linear(A[:, ~fixed], rhs, bounds=(lo[~fixed], hi[~fixed]), method="bvls",
                     tol=1e-15, max_iter=100 * A.shape[1])
    assert res.success
    z[~fixed] = res.x
    return z[:m], z[m:]


def random_balance(rng, m, n, with_null=True, scale=1.0) -> TorqueBalance:
    """A muscle-like problem: moment arms of a few cm, f_a ~ 200 N, a projector-like N."""
    jm = rng.normal(scale=0.03, size=(m, n)) * (rng.random((m, n)) < 0.4)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    keep = q[:, : max(1, n - 5)]
    nullspace = keep @ keep.T if with_null else None
    return TorqueBalance(jm, rng.uniform(20.0, 200.0, m), rng.uniform(5.0, 20.0, m),
                         scale * rng.normal(scale=5.0, size=n), nullspace)


@pytest.mark.parametrize("muscles, joints", [(63, 38), pytest.param(120, 28,
                                                                   marks=pytest.mark.slow)])
def test_matches_bvls_along_a_synthetic_arms_trajectory(tmp_path, config, muscles, joints):
    """Consecutive QPs of a synthetic arm's controller (warm-started), dual Newton and DAQP
    against BVLS; MyoArm's size among them."""
    paper = dataclasses.replace(config, qp=dataclasses.replace(config.qp, nullspace_step_rad=None),
                                gains=dataclasses.replace(config.gains,
                                                          nullspace_posture_nm_rad=None))
    qps = record_synthetic(muscles, joints, paper, BenchConfig(warmup_ticks=5), 25, tmp_path)
    first = qps[0]
    solvers = {s: ActivationQP("eq11", muscles, joints, k=first.k, r=first.r, solver=s)
               for s in ("dual_newton", "daqp")}
    bounded = 0
    for qp in qps:
        a_ref = bvls(qp)
        scale = max(1.0, float(np.abs(a_ref).max()))
        for name, solver in solvers.items():
            res = solver.solve(qp.balance, qp.lower, qp.upper)
            assert res.found, (name, res.status)
            assert np.abs(res.activations - a_ref).max() <= 1e-8 * scale, name
        bounded += int(np.sum(a_ref <= 0.0))
    assert bounded > 0  # activations sat at their bound: the active set was exercised


@pytest.mark.parametrize("seed", range(6))
def test_matches_bvls_on_random_problems_with_every_kind_of_bound(seed):
    """Fixed activations (lower == upper), binding upper bounds, nonzero lower bounds and a
    tau_null box, one warm QP object across unrelated problems."""
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(10, 60)), int(rng.integers(3, 12))
    qp = ActivationQP("eq11", m, n, k=K, r=R, solver="dual_newton", tau_null_max_nm=np.inf)
    plain = ActivationQP("eq10", m, n, k=K, r=R, solver="dual_newton")
    kinds = {"fixed": 0, "upper": 0}
    for _ in range(15):
        b = random_balance(rng, m, n, scale=rng.uniform(0.1, 20.0))
        lower = np.where(rng.random(m) < 0.2, rng.uniform(0.0, 0.5, m), 0.0)
        upper = np.where(rng.random(m) < 0.3, lower + rng.uniform(0.0, 2.0, m), np.inf)
        fixed = rng.random(m) < 0.1
        upper[fixed] = lower[fixed]
        box = np.where(rng.random(n) < 0.5, rng.uniform(0.05, 2.0, n), np.inf)
        res = qp.solve(b, lower, upper, None, box)
        assert res.found, res.status
        a_ref, t_ref = exact(b, lower, upper, -box, box)
        scale = max(1.0, float(np.abs(a_ref).max()))
        assert np.abs(res.activations - a_ref).max() <= 1e-8 * scale
        assert np.abs(res.tau_null - t_ref).max() <= 1e-8 * max(1.0, np.abs(t_ref).max())
        assert np.all(res.activations >= lower) and np.all(res.activations <= upper)
        kinds["fixed"] += int(np.any(fixed))
        kinds["upper"] += int(np.any(np.isclose(a_ref, upper) & ~fixed))
        res10 = plain.solve(b._replace(nullspace=None), lower, upper)
        a10, _ = exact(b._replace(nullspace=None), lower, upper)
        assert res10.found and np.abs(res10.activations - a10).max() <= 1e-8 * scale
    assert kinds["fixed"] > 0 and kinds["upper"] > 0


def test_cold_start_far_from_the_answer_converges_to_it():
    """Large torques from w = 0, with the warm start off: the full Newton steps leave their
    pieces and are damped; the answer is still BVLS's."""
    from musculo_control.control.qp_config import DualNewtonConfig

    rng = np.random.default_rng(7)
    cold = DualNewtonConfig(warm_starting=False)
    m, n = 80, 10
    qp = ActivationQP("eq11", m, n, k=K, r=R, solver="dual_newton", dual_newton_config=cold)
    iterations = []
    for _ in range(10):
        b = random_balance(rng, m, n, scale=50.0)
        res = qp.solve(b, np.zeros(m), np.full(m, np.inf))
        assert res.found, res.status
        a_ref, _ = exact(b, np.zeros(m), np.full(m, np.inf))
        assert np.abs(res.activations - a_ref).max() <= 1e-8 * max(1.0, np.abs(a_ref).max())
        iterations.append(res.iterations)
    assert max(iterations) > 3  # steps that left their piece were taken


def test_a_warm_start_on_the_answer_confirms_it_in_one_step(robot, estimator):
    s = estimator.compute(robot.home_pose_rad, np.zeros(7))
    ci = robot.controlled_idx
    forces = robot.forces(s.muscle_length_m)
    b = TorqueBalance(np.ascontiguousarray(s.muscle_jacobian[ci]), forces.active_n[ci],
                      forces.passive_n[ci], s.gravity_torque_nm, s.nullspace_projector)
    qp = ActivationQP("eq11", len(ci), 7, k=K, r=R, solver="dual_newton")
    first = qp.solve(b, np.zeros(len(ci)), np.full(len(ci), np.inf))
    again = qp.solve(b, np.zeros(len(ci)), np.full(len(ci), np.inf))
    assert first.found and again.found and again.iterations == 2
    assert np.allclose(again.activations, first.activations, atol=1e-12)


def test_refuses_what_it_cannot_solve():
    with pytest.raises(ValueError, match="dual_newton takes eq10/eq11"):
        ActivationQP("eq9", 15, 7, k=K, r=R, solver="dual_newton")
    with pytest.raises(ValueError, match="dual_newton takes eq10/eq11"):
        ActivationQP("eq11", 15, 7, k=K, r=R, solver="dual_newton", n_limit_rows=7)
    with pytest.raises(ValueError, match="k > 0"):
        ActivationQP("eq11", 15, 7, k=0.0, r=R, solver="dual_newton")


def test_auto_picks_by_size_and_structure():
    choice = SolverChoiceConfig(dual_newton_min_muscles=40, osqp_min_muscles=200)
    assert choose_solver("eq11", 15, 7, 0, K, choice) == "daqp"
    assert choose_solver("eq11", 40, 7, 0, K, choice) == "dual_newton"
    assert choose_solver("eq10", 300, 40, 0, K, choice) == "dual_newton"
    # fewer muscles than joints: the dual is the larger problem
    assert choose_solver("eq11", 50, 60, 0, K, choice) == "daqp"
    # rows or eq. 9: the dual Newton solver does not take them
    assert choose_solver("eq11", 300, 40, 7, K, choice) == "osqp"
    assert choose_solver("eq9", 300, 40, 0, K, choice) == "osqp"
    assert choose_solver("eq9", 100, 40, 0, K, choice) == "daqp"
    # k = 0 (with an activation bound): only OSQP takes it
    assert choose_solver("eq11", 15, 7, 0, 0.0, choice) == "osqp"
    auto = ActivationQP("eq11", 300, 40, k=K, r=R, solver="auto", solver_choice=choice)
    assert auto.solver == "dual_newton"


def test_the_shipped_controller_picks_by_its_config(tmp_path, robot, config):
    """controller.yaml says auto: DAQP on the 15-muscle arm, dual Newton on MyoArm's size."""
    assert config.qp.solver == "auto"
    small = OSCController(robot, config).qp.solver
    m = len(robot.controlled_idx)
    assert small == ("dual_newton" if m >= config.solver_choice.dual_newton_min_muscles
                     else "daqp")
    n = 38
    big = SyntheticRobot(write_synthetic_arm(tmp_path, n, fewest_muscles(n) + 6))
    from musculo_control.model.synthetic import full_task_mask

    cfg = dataclasses.replace(config, task=dataclasses.replace(
        config.task, mask=full_task_mask(len(config.task.rows), n)),
        gains=dataclasses.replace(config.gains, nullspace_posture_nm_rad=None))
    assert OSCController(big, cfg).qp.solver == "dual_newton"


def test_fewest_muscles_arm_pulls_every_joint_both_ways(tmp_path):
    """MyoArm's size (63 muscles, 38 joints): below 2 n muscles, still every joint torque
    direction is reachable with pulling muscles (non-negative least squares leaves nothing)."""
    from scipy.optimize import nnls

    n = 38
    robot = SyntheticRobot(write_synthetic_arm(tmp_path, n, 63))
    jm = robot.geometry.kinematics_at(robot.home_pose_rad).jacobian
    torque_per_newton = -jm.T  # (n, m): tau = -Jm^T f
    for j in range(n):
        for sign in (1.0, -1.0):
            target = np.zeros(n)
            target[j] = sign
            _, residual = nnls(torque_per_newton, target)
            assert residual < 1e-9, (j, sign)
    with pytest.raises(ValueError, match="between 57 and"):
        write_synthetic_arm(tmp_path / "too_few", n, 56)
