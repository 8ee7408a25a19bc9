"""The excitation tour (experiments.yaml ``excitation``): its goals, its checks, and that the
shipped tour stays inside the arm's limits on the runner."""

from __future__ import annotations

import numpy as np
import pytest

from musculo_control.errors import ConfigError, InputError
from musculo_control.paths import default_config_dir
from musculo_control.sim.identify.excitation import ExcitationSchedule, excitation_config, rehearse
from musculo_control.sim.setup import Overrides, load_setup


@pytest.fixture(scope="module")
def setup():
    return load_setup(default_config_dir(), Overrides.parse([]))


def test_the_tour_visits_each_waypoint_and_returns_with_continuous_goals(setup):
    schedule = ExcitationSchedule(setup)
    cfg = setup.experiments.excitation
    n = len(cfg.waypoints_m) + 1  # and back
    assert len(schedule.moves) == n
    expected = cfg.settle_s + sum(cfg.move_s[i % len(cfg.move_s)] + cfg.hold_s for i in range(n))
    assert schedule.duration_s == pytest.approx(expected)
    for (start, move_s, _a, b), w in zip(schedule.moves, [*cfg.waypoints_m, None]):
        target = schedule.x0 if w is None else schedule.x0 + np.asarray(w)
        np.testing.assert_allclose(b, target)
        held = schedule.hand_goal(start + move_s + 0.5 * cfg.hold_s)
        np.testing.assert_allclose(held.position_m, target)
        assert np.all(held.velocity_m_s == 0.0) and not schedule.moving(start + move_s + 0.01)
        assert schedule.moving(start + 0.5 * move_s)
        # one object all through a hold: a goal at rest is sent once
        assert held is schedule.hand_goal(start + move_s + 0.9 * cfg.hold_s)
    # no jump anywhere: the goal moves at most its peak speed times the step
    t = np.arange(0.0, schedule.duration_s, 1e-3)
    path = np.array([schedule.hand_goal(s).position_m for s in t])
    speed = np.array([np.linalg.norm(schedule.hand_goal(s).velocity_m_s) for s in t])
    step = np.linalg.norm(np.diff(path, axis=0), axis=1)
    assert np.all(step <= speed.max() * 1e-3 * 1.01 + 1e-12)
    # the feed-forward is the path's derivative
    np.testing.assert_allclose(np.gradient(path, t, axis=0)[1:-1],
                               [schedule.hand_goal(s).velocity_m_s for s in t[1:-1]], atol=2e-3)
    assert schedule.joint_goal(1.0) is None and schedule.gauge_axis is None


def test_a_robot_without_a_tour_and_bad_tours_are_refused_with_the_field(setup, tmp_path):
    import shutil

    import yaml

    folder = tmp_path / "cfg"
    shutil.copytree(default_config_dir(), folder)
    path = folder / "experiments.yaml"
    data = yaml.safe_load(path.read_text())
    data["excitation"]["waypoints_m"] = [[0.0, 0.1], [0.0, 0.9, 0.0]]
    data["excitation"]["move_s"] = [0.0]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as err:
        load_setup(folder, Overrides.parse([]))
    text = str(err.value)
    assert "excitation.waypoints_m[0]" in text and "excitation.move_s" in text, text
    data["excitation"]["waypoints_m"] = [[0.0, 0.9, 0.0]]  # 90 cm across: out of reach
    data["excitation"]["move_s"] = [1.0]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"excitation\.waypoints_m \(move 1\)"):
        load_setup(folder, Overrides.parse([]))
    del data["excitation"]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match="a section 'excitation'"):
        excitation_config(load_setup(folder, Overrides.parse([])))


@pytest.mark.slow
def test_the_shipped_tour_stays_inside_the_limits_on_the_runner(setup):
    """On the mock arm (its model error on): no stop, every joint inside its range, tensions
    below the actuators' limit. Measured: 0 ticks in a stop, joints at least 0.136 rad inside
    (the wrist), tensions at most about 700 N of 1500 N; with the orientation stiffness off the
    wrist reached its limit."""
    result = rehearse(setup)
    assert result.ok, result.describe()
    assert result.joint_margin_rad > 0.05, result.describe()
    # the message names the joint that came closest, and when
    assert f"({result.closest_joint} at " in result.describe()
    assert result.closest_joint in setup.robot.arm.joint_names
    assert 0.0 <= result.closest_at_s <= ExcitationSchedule(setup).duration_s
