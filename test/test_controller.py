"""The 125 Hz controllers: configuration, fresh state, safety rules, and a closed loop."""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import random_poses
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from musculo_control.control.controller import CONTROLLER_NAMES, OSCController, make_controller
from musculo_control.control.controller_config import load_controller_config
from musculo_control.control.goal import HandGoal
from musculo_control.control.output import safe_output
from musculo_control.errors import ConfigError, InputError


@pytest.fixture(scope="module")
def config(config_dir):
    return load_controller_config(config_dir)


@pytest.fixture()
def hold(estimator, robot):
    """(snapshot at home at t = 0, goal = the hand's own pose there)."""
    s = estimator.compute(robot.home_pose_rad, np.zeros(7), 0.0)
    return s, HandGoal.hold(s.hand_position_m, s.hand_rotation)


def assert_safe(out, robot):
    assert not out.ok and out.reason
    assert np.array_equal(out.tension_n, np.full(robot.n_muscles, robot.hill.f_min_n))
    assert np.all(out.activations == 0.0)


def assert_valid_command(out, robot):
    assert out.tension_n.shape == (robot.n_muscles,)
    assert np.all(np.isfinite(out.tension_n))
    assert np.all(out.tension_n >= robot.hill.f_min_n - 1e-9)
    if out.ok:
        assert np.array_equal(out.tension_n[robot.fixed_idx], robot.fixed_tension_n)
    else:
        assert_safe(out, robot)


# -- configuration ----------------------------------------------------------------------------
def test_shipped_config_parses_with_paper_values(config):
    assert config.qp.formulation == "eq11"
    # r: half the paper's 0.1 on this arm (controller.yaml says why)
    assert (config.qp.k, config.qp.r) == (0.01, 0.05)
    assert config.gains.kp_s2 == 300.0 and config.gains.kd == pytest.approx(34.64, abs=0.01)
    assert config.baselines.joint_stiffness.stiffness_nm_rad == (40, 40, 40, 15, 2, 2, 2)
    assert config.task.rows == ("vx", "vy", "vz", "wy", "wz")


def test_overrides_and_unknown_keys(config_dir, tmp_path):
    cfg = load_controller_config(config_dir, {"qp.formulation": "eq10", "gains.kd_s": 10.0})
    assert cfg.qp.formulation == "eq10" and cfg.gains.kd == 10.0
    with pytest.raises(ConfigError, match="qp.formulaton"):
        load_controller_config(config_dir, {"qp.formulaton": "eq10"})
    data = yaml.safe_load((config_dir / "controller.yaml").read_text())
    data["qp"]["nullspace_weight"] = 1.0
    (tmp_path / "controller.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="qp.nullspace_weight"):
        load_controller_config(tmp_path)


def test_make_controller_by_name(robot, config):
    for name in CONTROLLER_NAMES:
        c = make_controller(name, robot, config)
        assert c.name == name
        c.reset()
    assert make_controller("osc-no-nullspace", robot, config).formulation == "eq10"
    with pytest.raises(InputError, match="joint-stiffness"):
        make_controller("pid", robot, config)


def test_wrong_baseline_stiffness_length_is_a_config_error(robot, config):
    bad = dataclasses.replace(config, baselines=dataclasses.replace(
        config.baselines, joint_stiffness=dataclasses.replace(
            config.baselines.joint_stiffness, stiffness_nm_rad=(1.0, 2.0))))
    with pytest.raises(ConfigError, match="stiffness_nm_rad"):
        make_controller("joint-stiffness", robot, bad)


# -- one tick ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CONTROLLER_NAMES)
def test_every_controller_holds_at_home(robot, config, hold, name):
    s, goal = hold
    out = make_controller(name, robot, config).tick(s, s.q_rad, s.qd_rad_s, goal, 0.008)
    assert out.ok, out.reason
    assert_valid_command(out, robot)
    assert out.snapshot_age_s == pytest.approx(0.008)
    assert np.allclose(out.hand_error_m, 0.0, atol=1e-12)


def test_osc_output_satisfies_the_torque_balance(robot, config, hold):
    """-Jm^T f = tau_ref + N tau_null - residual (SPEC sections 2 and 5), all 18 muscles."""
    s, goal = hold
    goal = HandGoal(goal.position_m + [0.02, -0.01, 0.01], rotation=goal.rotation)
    out = make_controller("osc", robot, config).tick(s, s.q_rad, s.qd_rad_s, goal, 0.0)
    assert out.ok
    tau_muscle = -s.muscle_jacobian.T @ out.tension_n
    expect = out.tau_ref_nm + s.nullspace_projector @ out.tau_null_nm - out.torque_residual_nm
    assert np.allclose(tau_muscle, expect, atol=1e-9)
    # the controlled tensions are a f_a + f_p at the current lengths
    forces = robot.forces(s.muscle_length_m)
    ci = robot.controlled_idx
    assert np.allclose(out.tension_n[ci],
                       out.activations * forces.active_n[ci] + forces.passive_n[ci])
    # and tau_ref is J^T Lambda xdd_r + g with xdd_r = kp e (no velocity, no goal motion)
    e = goal.position_m - s.hand_position_m
    xdd = np.r_[config.gains.kp_s2 * e, 0.0, 0.0]
    tau_ref = s.task_jacobian.T @ s.task_inertia @ xdd + s.gravity_torque_nm
    assert np.allclose(out.tau_ref_nm, tau_ref, atol=1e-9)


def test_fresh_state_is_used_not_the_snapshots(robot, config, estimator):
    """Hand position from the fresh q (exact FK); muscle lengths to first order around it."""
    q0 = robot.home_pose_rad
    s = estimator.compute(q0, np.zeros(7), 0.0)
    dq = np.array([0.02, -0.01, 0.015, 0.02, 0.01, -0.01, 0.02])
    qd = np.linspace(-0.5, 0.5, 7)
    ctrl = make_controller("osc", robot, config)
    out = ctrl.tick(s, q0 + dq, qd, HandGoal.hold(s.hand_position_m), 0.03)
    data = robot.new_data()
    pin.framesForwardKinematics(robot.arm.model, data, q0 + dq)
    x = data.oMf[robot.arm.task_frame_id].translation
    assert np.allclose(out.hand_position_m, x, atol=1e-12)
    assert np.linalg.norm(x - s.hand_position_m) > 1e-3  # the test is not vacuous
    fresh = ctrl._fresh.compute(s, q0 + dq, qd)
    exact = robot.geometry.lengths_at(q0 + dq)
    assert np.abs(fresh.muscle_length_m - exact).max() < 5e-4  # O(|dq|^2)
    assert np.abs(s.muscle_length_m - exact).max() > 1e-3  # and better than the stale one
    # the hand velocity is exact as well: J(q) qd at the fresh q
    J = pin.computeFrameJacobian(robot.arm.model, data, q0 + dq, robot.arm.task_frame_id,
                                 pin.LOCAL_WORLD_ALIGNED)
    assert np.allclose(fresh.hand.velocity_m_s, J[:3] @ qd, atol=1e-12)
    assert np.allclose(fresh.hand.angular_velocity_rad_s, J[3:] @ qd, atol=1e-12)


# -- refusals ---------------------------------------------------------------------------------
def test_missing_snapshot_gives_minimum_tension_and_age_is_reported(robot, config, hold):
    """How old a snapshot may be is the supervisor's rule (safety.yaml, tested in
    test_safety.py); the controller reports the age it used and refuses no snapshot."""
    s, goal = hold
    ctrl = make_controller("osc", robot, config)
    assert_safe(ctrl.tick(None, s.q_rad, s.qd_rad_s, goal, 0.0), robot)
    out = ctrl.tick(s, s.q_rad, s.qd_rad_s, goal, 0.04)
    assert out.ok and out.snapshot_age_s == pytest.approx(0.04)


@pytest.mark.parametrize("error, logged", [(np.linalg.LinAlgError("singular"), False),
                                            (FloatingPointError("overflow"), False),
                                            (AttributeError("no such field"), True)])
def test_a_fault_inside_the_tick_is_safe_and_a_bug_leaves_its_traceback(
        robot, config, hold, monkeypatch, caplog, error, logged):
    """Numerical trouble of one tick gives minimum tension and why; a programming error gives
    minimum tension too, but is not hidden: its traceback is logged."""
    s, goal = hold
    ctrl = make_controller("osc", robot, config)

    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(ctrl, "_control", broken)
    with caplog.at_level("ERROR", logger="musculo_control.control.tick_base"):
        out = ctrl.tick(s, s.q_rad, s.qd_rad_s, goal, 0.0)
    assert_safe(out, robot)
    assert type(error).__name__ in out.reason
    traced = [r for r in caplog.records if r.exc_info is not None]
    assert bool(traced) == logged
    assert ("internal error" in out.reason) == logged


def test_commands_stay_within_the_actuator_limit_as_part_of_the_problem(robot, config,
                                                                         estimator):
    """With tension_max_n the QP bounds every tension (a f_a + f_p <= f_max); without it,
    the same demanding hold asks for more than the limit."""
    q = robot.poses.solve_named("high_elbow", robot.home_pose_rad).q_rad
    s = estimator.compute(q, np.zeros(7), 0.0)
    goal = HandGoal.hold(s.hand_position_m + [0.0, 0.0, 0.15], s.hand_rotation)  # far above
    free = make_controller("osc", robot, config).tick(s, q, np.zeros(7), goal, 0.0)
    assert free.ok
    limit = 0.6 * float(free.tension_n.max())
    for name in CONTROLLER_NAMES:
        out = make_controller(name, robot, config, tension_max_n=limit).tick(
            s, q, np.zeros(7), goal, 0.0)
        assert out.ok, (name, out.reason)
        assert out.tension_n.max() <= limit * (1 + 1e-6), name
    bounded = make_controller("osc", robot, config, tension_max_n=limit).tick(
        s, q, np.zeros(7), goal, 0.0)
    assert np.isclose(bounded.tension_n.max(), limit, rtol=1e-3)  # the bound is active


@pytest.mark.parametrize("name", CONTROLLER_NAMES)
@pytest.mark.parametrize("case", ["nan_q", "inf_qd", "short_q", "nan_time", "not_a_goal"])
def test_bad_inputs_give_minimum_tension(robot, config, hold, name, case):
    s, goal = hold
    q, qd, t = s.q_rad.copy(), np.zeros(7), 0.0
    if case == "nan_q":
        q[2] = np.nan
    elif case == "inf_qd":
        qd[0] = np.inf
    elif case == "short_q":
        q = q[:6]
    elif case == "nan_time":
        t = float("nan")
    elif case == "not_a_goal":
        goal = s.hand_position_m  # a bare array is not a validated goal
    out = make_controller(name, robot, config).tick(s, q, qd, goal, t)
    assert_safe(out, robot)
    assert out.reason.startswith(name)


def test_non_finite_snapshot_gives_minimum_tension(robot, config, hold):
    s, goal = hold
    bad_g = s.gravity_torque_nm.copy()
    bad_g[1] = np.nan
    out = make_controller("osc", robot, config).tick(
        dataclasses.replace(s, gravity_torque_nm=bad_g), s.q_rad, s.qd_rad_s, goal, 0.0)
    assert_safe(out, robot)
    assert "non-finite" in out.reason


def test_eq9_far_goal_fails_safe_and_soft_ones_answer(robot, config_dir, hold):
    s, goal = hold
    far = HandGoal.hold(goal.position_m + [5.0, -5.0, 5.0])
    for form in ("eq9", "eq10", "eq11"):
        cfg = load_controller_config(config_dir, {"qp.formulation": form,
                                                  "qp.activation_max": 10.0 if form == "eq9"
                                                  else None})
        out = make_controller("osc", robot, cfg).tick(s, s.q_rad, s.qd_rad_s, far, 0.0)
        assert_valid_command(out, robot)
        if form == "eq9":
            assert not out.ok and "infeasible" in out.solver_status
            assert out.iterations > 0  # the solver's report survives the failure
        else:
            assert out.ok, out.reason


def test_safe_output_shape(robot):
    out = safe_output(robot, "because", float("nan"))
    assert_safe(out, robot)
    assert out.snapshot_age_s == 0.0 and out.tau_null_nm.shape == (7,)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_state_and_goal_give_a_valid_command(robot, config, estimator, data):
    """Property: whatever the pose, velocity, goal (reachable or not) and snapshot age, the
    command is finite, covers every muscle and never drops below f_min."""
    lo, hi = robot.arm.lower_rad, robot.arm.upper_rad
    unit = st.floats(0.0, 1.0)
    q_snap = lo + (hi - lo) * np.array(data.draw(st.lists(unit, min_size=7, max_size=7)))
    qd = np.array(data.draw(st.lists(st.floats(-3.0, 3.0), min_size=7, max_size=7)))
    q = np.clip(q_snap + 0.05 * qd, lo, hi)
    goal = HandGoal(np.array(data.draw(st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3))),
                    np.array(data.draw(st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3))))
    age = data.draw(st.floats(0.0, 0.2))
    name = data.draw(st.sampled_from(CONTROLLER_NAMES))
    s = estimator.compute(q_snap, qd, 1.0)
    out = make_controller(name, robot, config).tick(s, q, qd, goal, 1.0 + age)
    assert_valid_command(out, robot)
    if name not in ("osc-no-nullspace", "osc"):
        assert out.ok, out.reason


# -- closed loop on the rigid model -----------------------------------------------------------
def simulate(robot, estimator, controller, goal_of_t, duration_s, q0, dt=1e-3,
             joint_damping=0.05, stop_stiffness=200.0):
    """Rigid-body arm driven by ideal tendons: M qdd + C qd + g = -Jm(q)^T f + tau_stops - d qd.

    Dynamics snapshot at 20 Hz, controller at 125 Hz, integration at 1 kHz (semi-implicit
    Euler). The tendon torque uses the exact muscle Jacobian at the current q, not the
    controller's. A small joint damping stands in for friction, stiff springs for the joint
    stops [Nm/rad].
    """
    model, data = robot.arm.model, robot.arm.model.createData()
    lo, hi = robot.arm.lower_rad, robot.arm.upper_rad
    n = robot.arm.n_joints
    q, qd = q0.copy(), np.zeros(n)
    snap, out, log = None, None, []
    for i in range(round(duration_s / dt)):
        t = i * dt
        if i % 50 == 0:
            snap = estimator.compute(q, qd, t)
        if i % 8 == 0:
            out = controller.tick(snap, q, qd, goal_of_t(t), t)
            assert out.ok, out.reason
            log.append(out)
        jm = robot.geometry.kinematics_at(q).jacobian
        over = np.maximum(q - hi, 0.0) - np.maximum(lo - q, 0.0)
        tau = -jm.T @ out.tension_n - joint_damping * qd - stop_stiffness * over
        qdd = pin.aba(model, data, q, qd, tau)
        qd = qd + dt * qdd
        q = q + dt * qd
    return q, log


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory, config):
    """A well-conditioned 7-joint, 14-muscle chain (every joint pulled both ways, strongly)."""
    from musculo_control.estimation.snapshot import DynamicsEstimator
    from musculo_control.model.synthetic import (
        SyntheticRobot,
        full_task_mask,
        write_synthetic_arm,
    )

    robot = SyntheticRobot(write_synthetic_arm(tmp_path_factory.mktemp("arm7"), 7, 14))
    task = dataclasses.replace(config.task, mask=full_task_mask(5, 7))
    # the shipped arm's posture spring is not this arm's: the paper's law here
    cfg = dataclasses.replace(config, task=task, gains=dataclasses.replace(
        config.gains, nullspace_posture_nm_rad=None))
    return robot, cfg, DynamicsEstimator(robot, task)


@pytest.mark.parametrize("name", ["osc", "osc-no-nullspace"])
def test_closed_loop_reaches_a_goal(synthetic, name):
    """A 3 cm step of the hand goal: the signs of the whole chain must be right to get there."""
    robot, cfg, estimator = synthetic
    q0 = robot.home_pose_rad
    s = estimator.compute(q0, np.zeros(7))
    target = s.hand_position_m + np.array([0.02, 0.0, 0.02])
    goal = HandGoal.hold(target, s.hand_rotation)
    _, log = simulate(robot, estimator, make_controller(name, robot, cfg), lambda t: goal,
                      1.5, q0)
    errors = np.array([np.linalg.norm(o.hand_error_m) for o in log])
    assert errors[0] == pytest.approx(np.linalg.norm(target - s.hand_position_m))
    assert errors[-1] < 0.1 * errors[0], errors[::10]


def test_closed_loop_hold_keeps_the_hand_still(synthetic):
    robot, cfg, estimator = synthetic
    q0 = robot.home_pose_rad
    s = estimator.compute(q0, np.zeros(7))
    goal = HandGoal.hold(s.hand_position_m, s.hand_rotation)
    _, log = simulate(robot, estimator, OSCController(robot, cfg), lambda t: goal, 1.0, q0)
    worst = max(np.linalg.norm(o.hand_error_m) for o in log)
    assert worst < 0.002, worst


def test_closed_loop_hold_on_the_shipped_arm(robot, config, estimator):
    """The shipped arm held at home for 0.2 s: a sign error anywhere drops it within that."""
    q0 = robot.home_pose_rad
    s = estimator.compute(q0, np.zeros(7))
    goal = HandGoal.hold(s.hand_position_m, s.hand_rotation)
    _, log = simulate(robot, estimator, OSCController(robot, config), lambda t: goal, 0.2, q0)
    worst = max(np.linalg.norm(o.hand_error_m) for o in log)
    assert worst < 0.01, worst


@pytest.mark.parametrize("formulation", ["eq9", "eq10", "eq11"])
def test_static_hold_through_the_controller(synthetic, formulation):
    """Zero task error and velocity on a well-conditioned arm: the muscles cancel gravity,
    eq. 9 to 1e-6 Nm, eq. 10 and 11 (the latter up to its nullspace torque) to 1 % of ||g||."""
    robot, cfg, estimator = synthetic
    cfg = dataclasses.replace(cfg, qp=dataclasses.replace(cfg.qp, formulation=formulation))
    rng = np.random.default_rng(30)
    lo, hi = robot.arm.lower_rad, robot.arm.upper_rad
    for q in [robot.home_pose_rad, *(lo + (hi - lo) * rng.uniform(0.3, 0.7, (5, 7)))]:
        s = estimator.compute(q, np.zeros(7), 0.0)
        goal = HandGoal.hold(s.hand_position_m, s.hand_rotation)
        out = OSCController(robot, cfg).tick(s, q, np.zeros(7), goal, 0.0)
        assert out.ok, out.reason
        g = s.gravity_torque_nm
        tau = -s.muscle_jacobian.T @ out.tension_n
        if formulation == "eq9":
            assert np.abs(tau - g).max() < 1e-6
        else:
            gap = tau - g - s.nullspace_projector @ out.tau_null_nm
            assert np.linalg.norm(gap) <= 0.01 * np.linalg.norm(g)
        if formulation != "eq11":
            assert np.all(out.tau_null_nm == 0.0)


def test_options_reach_the_qp(robot, config_dir, hold):
    """activation_max, coriolis and predictive joint limits change what the tick computes."""
    s0, goal = hold
    s = dataclasses.replace(s0, qd_rad_s=np.full(7, 0.5))
    qd = np.full(7, 0.5)
    plain = make_controller("osc", robot, load_controller_config(config_dir)).tick(
        s, s.q_rad, qd, goal, 0.0)
    capped = make_controller("osc", robot, load_controller_config(
        config_dir, {"qp.activation_max": 0.5})).tick(s, s.q_rad, qd, goal, 0.0)
    assert capped.ok and capped.activations.max() <= 0.5 < plain.activations.max()
    cor = make_controller("osc", robot, load_controller_config(
        config_dir, {"qp.coriolis": True})).tick(s, s.q_rad, qd, goal, 0.0)
    assert np.allclose(cor.tau_ref_nm - plain.tau_ref_nm, s.coriolis_torque_nm)
    limited = make_controller("osc", robot, load_controller_config(
        config_dir, {"qp.predictive_joint_limits.enabled": True}))
    assert limited.qp.structure.n_limit_rows == 7
    out = limited.tick(s, s.q_rad, qd, goal, 0.0)
    assert out.ok, out.reason
    with pytest.raises(ConfigError, match="margin_rad"):
        make_controller("osc", robot, load_controller_config(
            config_dir, {"qp.predictive_joint_limits.enabled": True,
                         "qp.predictive_joint_limits.margin_rad": 5.0}))


def test_velocity_aware_nullspace_bound_follows_the_inertia(robot, config_dir, estimator):
    """With qp.nullspace_step_rad every |tau_null_i| stays within 2 M_ii step f_dyn^2 of its
    snapshot, and binds on the light forearm and wrist; null is eq. 11 as the paper states it."""
    cfg = load_controller_config(config_dir)
    step = cfg.qp.nullspace_step_rad
    assert step is not None  # the shipped controller bounds the nullspace
    bounded = make_controller("osc", robot, cfg)
    paper = make_controller("osc", robot, load_controller_config(
        config_dir, {"qp.nullspace_step_rad": None}))
    assert paper.qp.structure.tau_null_max_nm is None
    assert make_controller("osc-no-nullspace", robot, cfg).qp.structure.tau_null_max_nm is None
    binding = 0
    for q in random_poses(robot, 10, seed=31):
        s = estimator.compute(q, np.zeros(7), 0.0)
        # a goal 3.5 cm off (inside qp.nullspace_step_within_m): room to trade in the nullspace
        goal = HandGoal.hold(s.hand_position_m + 0.02, s.hand_rotation)
        out = bounded.tick(s, q, np.zeros(7), goal, 0.0)
        free = paper.tick(s, q, np.zeros(7), goal, 0.0)
        bounded.reset()
        paper.reset()
        assert out.ok and free.ok, (out.reason, free.reason)
        limit = 2.0 * step * cfg.loop.dynamics_rate_hz ** 2 * np.diag(s.mass_matrix)
        assert np.all(np.abs(out.tau_null_nm) <= limit + 1e-6)
        binding += np.any(np.abs(free.tau_null_nm) > limit + 1e-6)
        # beyond the gate (26 cm off) tau_null is eq. 11's free one
        far = HandGoal.hold(s.hand_position_m + 0.15, s.hand_rotation)
        out, free = bounded.tick(s, q, np.zeros(7), far, 0.0), paper.tick(s, q, np.zeros(7),
                                                                           far, 0.0)
        bounded.reset()
        paper.reset()
        np.testing.assert_allclose(out.tau_null_nm, free.tau_null_nm, atol=1e-6)
    assert binding > 0
