"""Goal trajectories from files (musculo_control.loop.trajectory_file)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from musculo_control.control.controller_config import load_controller_config
from musculo_control.control.goal import rotation_from_quaternion
from musculo_control.errors import ConfigError
from musculo_control.loop.trajectory_file import (
    GoalTrajectory,
    load_trajectory,
)

START = np.array([0.30, 0.23, 0.32])
QUAT = np.array([0.0, 0.0, 0.0, 1.0])


def write(tmp_path, data):
    """A trajectory file; the frame is required (each robot names its own base frame)."""
    path = tmp_path / "traj.yaml"
    path.write_text(yaml.safe_dump({"frame_id": "base_link", **data}))
    return path


def test_the_shipped_trajectory_loads_and_stays_in_the_workspace(config_dir):
    cfg = load_trajectory(config_dir / "trajectories" / "reach_10cm.yaml")
    traj = GoalTrajectory(cfg, START, QUAT)
    assert traj.outside(load_controller_config(config_dir).workspace) is None
    np.testing.assert_allclose(traj.goal_at(2.0).position_m, START + [0.0, 0.10, 0.0])
    np.testing.assert_allclose(traj.goal_at(100.0).position_m, START)
    assert traj.finished(6.0) and not traj.finished(5.9)


def test_waypoints_are_passed_at_rest_and_derivatives_match_finite_differences(tmp_path):
    cfg = load_trajectory(write(tmp_path, {"relative": False, "waypoints": [
        {"time_s": 0.0, "position_m": [0.3, 0.2, 0.3]},
        {"time_s": 1.5, "position_m": [0.3, 0.4, 0.3]},
        {"time_s": 2.5, "position_m": [0.2, 0.4, 0.35]}]}))
    traj = GoalTrajectory(cfg, START, QUAT)
    for t, p in ((0.0, [0.3, 0.2, 0.3]), (1.5, [0.3, 0.4, 0.3]), (2.5, [0.2, 0.4, 0.35])):
        g = traj.goal_at(t)
        np.testing.assert_allclose(g.position_m, p, atol=1e-12)
        np.testing.assert_allclose(g.velocity_m_s, 0.0, atol=1e-12)
    h = 1e-6
    for t in (0.3, 0.9, 1.7, 2.2):
        g, gp, gm = traj.goal_at(t), traj.goal_at(t + h), traj.goal_at(t - h)
        np.testing.assert_allclose(g.velocity_m_s, (gp.position_m - gm.position_m) / (2 * h),
                                   atol=1e-6)
        np.testing.assert_allclose(g.acceleration_m_s2,
                                   (gp.velocity_m_s - gm.velocity_m_s) / (2 * h), atol=1e-4)


def test_relative_trajectories_start_at_the_hand_and_keep_its_orientation(tmp_path):
    q_start = np.array([0.0, 0.0, np.sin(0.2), np.cos(0.2)])
    cfg = load_trajectory(write(tmp_path, {"relative": True, "waypoints": [
        {"time_s": 0.0, "position_m": [0.0, 0.0, 0.0]},
        {"time_s": 1.0, "position_m": [0.0, 0.0, -0.05]}]}))
    traj = GoalTrajectory(cfg, START, q_start)
    np.testing.assert_allclose(traj.goal_at(0.0).position_m, START)
    np.testing.assert_allclose(traj.goal_at(1.0).position_m, START + [0.0, 0.0, -0.05])
    np.testing.assert_allclose(traj.goal_at(0.5).rotation, rotation_from_quaternion(q_start),
                               atol=1e-12)


def test_orientations_are_slerped_and_loops_wrap(tmp_path):
    half = [0.0, 0.0, float(np.sin(np.pi / 4)), float(np.cos(np.pi / 4))]  # 90 deg about z
    cfg = load_trajectory(write(tmp_path, {"loop": True, "waypoints": [
        {"time_s": 0.0, "position_m": [0.3, 0.2, 0.3], "quaternion_xyzw": [0, 0, 0, 1]},
        {"time_s": 2.0, "position_m": [0.3, 0.2, 0.3], "quaternion_xyzw": half}]}))
    traj = GoalTrajectory(cfg, START, QUAT)
    r = traj.goal_at(1.0).rotation  # s = 0.5 at mid-segment: 45 deg
    assert np.degrees(np.arctan2(r[1, 0], r[0, 0])) == pytest.approx(45.0)
    np.testing.assert_allclose(traj.goal_at(2.5).position_m, traj.goal_at(0.5).position_m)
    assert not traj.finished(100.0)


@pytest.mark.parametrize("data, key", [
    ({"waypoints": [{"time_s": 0.5, "position_m": [0, 0, 0]}]}, "waypoints[0].time_s"),
    ({"waypoints": [{"time_s": 0.0, "position_m": [0, 0, 0]},
                    {"time_s": 0.0, "position_m": [0, 0, 0]}]}, "waypoints[1].time_s"),
    ({"waypoints": [{"time_s": 0.0, "position_m": [0, 0]}]}, "waypoints[0].position_m"),
    ({"waypoints": [{"time_s": 0.0, "position_m": [0, 0, 0],
                     "quaternion_xyzw": [0, 0, 0, 2]}]}, "waypoints[0].quaternion_xyzw"),
    ({"waypoints": [{"time_s": 0.0, "position_m": [0, 0, 0], "speed": 1}]}, "waypoints[0].speed"),
    ({"waypoints": []}, "waypoints"),
])
def test_malformed_files_name_the_key(tmp_path, data, key):
    with pytest.raises(ConfigError) as err:
        load_trajectory(write(tmp_path, data))
    assert err.value.key == key
    assert str(tmp_path / "traj.yaml") in str(err.value)


def test_a_waypoint_outside_the_workspace_is_reported(config_dir):
    cfg = load_trajectory(config_dir / "trajectories" / "reach_10cm.yaml")  # relative
    traj = GoalTrajectory(cfg, np.array([0.0, 0.22, -0.5]), QUAT)  # far below the shoulder
    why = traj.outside(load_controller_config(config_dir).workspace)
    assert why is not None and why.startswith("waypoint 0")


