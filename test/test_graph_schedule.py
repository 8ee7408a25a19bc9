"""What ``musculo experiment --graph`` sends (sim/graph_schedule.py): the move to a start pose,
and each experiment's goals and gauge over time, as the runner defines them."""

from __future__ import annotations

import numpy as np
import pytest

from musculo_control.paths import default_config_dir
from musculo_control.sim.graph_schedule import RunSchedule, StartMove
from musculo_control.sim.setup import Overrides, experiment_config, load_setup, start_pose


@pytest.fixture(scope="module")
def setup():
    return load_setup(default_config_dir(), Overrides.parse([]))


def test_the_move_to_a_start_pose_is_a_minimum_jerk_path_at_the_configured_speed(setup):
    cfg = setup.experiments.graph
    q0 = setup.robot.home_pose_rad
    q1 = q0.copy()
    q1[3] += 1.2
    move = StartMove(q0, q1, cfg)
    assert move.duration_s == pytest.approx(max(cfg.move_min_s, 1.875 * 1.2 / cfg.move_speed_rad_s))
    np.testing.assert_allclose(move.joint_goal(0.0), q0)
    np.testing.assert_allclose(move.joint_goal(move.duration_s), q1)
    np.testing.assert_allclose(move.joint_goal(move.duration_s + 5.0), q1)
    t = np.linspace(0.0, move.duration_s, 2001)
    path = np.array([move.joint_goal(s) for s in t])
    speed = np.abs(np.diff(path, axis=0)).max(axis=0) / (t[1] - t[0])
    assert speed.max() == pytest.approx(cfg.move_speed_rad_s, rel=1e-3)
    still = np.zeros_like(q1)
    assert move.reached(q1 + 0.9 * cfg.reach_tolerance_rad, still)
    assert not move.reached(q1 + 1.1 * cfg.reach_tolerance_rad, still)
    assert not move.reached(q1, still + 2 * cfg.reach_speed_rad_s)
    # a short hop still takes move_min_s
    assert StartMove(q0, q0 + 0.01, cfg).duration_s == cfg.move_min_s


def test_the_trajectory_run_sends_the_runners_move_and_a_baseline_its_joint_path(setup):
    cfg = setup.experiments.trajectory
    pose = cfg.start_poses[1]
    osc = RunSchedule(setup, "trajectory", "osc", pose)
    assert osc.duration_s == cfg.settle_s + cfg.move_s + cfg.hold_s
    np.testing.assert_allclose(osc.hand_goal(0.0).position_m, cfg.start_m, atol=1e-12)
    np.testing.assert_allclose(osc.hand_goal(osc.duration_s).position_m, cfg.end_m, atol=1e-12)
    middle = osc.hand_goal(cfg.settle_s + cfg.move_s / 2)
    assert np.linalg.norm(middle.velocity_m_s) > 0.0  # the feed-forward travels with the goal
    assert not osc.moving(0.5 * cfg.settle_s) and osc.moving(cfg.settle_s + 0.1)
    assert osc.joint_goal(1.0) is None
    js = RunSchedule(setup, "trajectory", "joint-stiffness", pose)
    np.testing.assert_allclose(js.joint_goal(0.0), start_pose(setup.robot, pose), atol=1e-9)
    q_end = js.joint_goal(js.duration_s)
    hand_end = setup.robot.arm.hand_pose(q_end)[0]
    np.testing.assert_allclose(hand_end, cfg.end_m, atol=2e-3)  # the pose solver's tolerance


def test_the_disturbance_run_sets_the_gauge_on_the_elbow_then_pushes_along_its_axis(setup):
    cfg = setup.experiments.disturbance
    run = RunSchedule(setup, "disturbance", "osc")
    assert run.pose == cfg.start_pose
    elbow = np.array([0.1, 0.2, 0.3])
    axis = np.asarray(cfg.axis) / np.linalg.norm(cfg.axis)
    radius = setup.mock_config.gauge.contact_radius_m
    assert run.gauge_tip(0.9 * cfg.settle_s, elbow) is None
    np.testing.assert_allclose(run.gauge_tip(cfg.settle_s, elbow), elbow - radius * axis)
    np.testing.assert_allclose(run.gauge_tip(cfg.settle_s + cfg.push_s + 1.0, elbow),
                               elbow - radius * axis + cfg.displacement_m * axis)
    np.testing.assert_allclose(run.hand_goal(3.0).position_m,
                               setup.robot.arm.hand_pose(run.q_start)[0])


def test_the_nullspace_run_holds_the_hand_at_its_start_pose(setup):
    cfg = setup.experiments.nullspace
    run = RunSchedule(setup, "nullspace", "osc-no-nullspace")
    assert run.pose == cfg.start_pose and run.duration_s == cfg.duration_s
    assert not run.moving(1.0) and run.joint_goal(1.0) is None
    np.testing.assert_allclose(run.hand_goal(5.0).position_m,
                               setup.robot.arm.hand_pose(start_pose(setup.robot,
                                                                    cfg.start_pose))[0])


def test_trajectory_runs_without_orientation_stiffness_as_the_runner_does():
    """B runs with experiments.yaml trajectory.orientation_gain_s2 (0: off): over the graph the
    goal's orientation is dropped instead, which leaves the same reference (the orientation
    damping alone); a gain the graph cannot set is refused with the field named."""
    config_dir = default_config_dir()
    setup = load_setup(config_dir, Overrides.parse([]))
    assert experiment_config(setup, "trajectory").orientation_gain_s2 == 0.0
    assert not RunSchedule(setup, "trajectory", "osc", "trajectory_b").track_orientation
    assert RunSchedule(setup, "nullspace", "osc").track_orientation
    assert RunSchedule(setup, "disturbance", "osc").track_orientation
    odd = load_setup(config_dir, Overrides.parse(["experiments.trajectory.orientation_gain_s2=7"]))
    with pytest.raises(ValueError, match="orientation_gain_s2 is 7"):
        RunSchedule(odd, "trajectory", "osc", "trajectory_b")
