"""Integral action on the hand position error (issue 13, deliverable 5): its arithmetic and
anti-windup, and in closed loop: with a plant whose muscle geometry is off by millimetres of
moment arm, the hand settles within 0.5 cm with it and does not without it.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from musculo_control.config.parser import parse
from musculo_control.control.task_space import GainsConfig, PositionIntegral
from musculo_control.errors import ConfigError
from musculo_control.paths import config_root
from musculo_control.sim.experiments import Bench, run_trajectory
from musculo_control.sim.mujoco_arm import tendon_jacobian
from musculo_control.sim.setup import Overrides, load_setup

ON = GainsConfig(ki_s3=600.0, integral_zone_m=0.01, integral_max_m_s2=2.0,
                 integral_reset_after_s=0.1)


def test_integrates_the_error_over_time():
    term = PositionIntegral(ON)
    e = np.array([0.002, -0.001, 0.0])
    term.update(e, 1.0)  # the first tick only starts the clock
    for k in range(1, 11):
        out = term.update(e, 1.0 + 0.008 * k)
    np.testing.assert_allclose(out, 600.0 * e * 0.08, rtol=1e-12)


def test_no_integration_outside_the_zone_and_a_clamped_output():
    term = PositionIntegral(ON)
    term.update(np.zeros(3), 0.0)
    out = term.update(np.array([0.02, 0.0, 0.0]), 0.008)  # 2 cm: outside the 1 cm zone
    assert np.all(out == 0.0)
    for k in range(2, 2000):  # 9 mm for 16 s would be 86 m/s^2 unclamped
        out = term.update(np.array([0.009, 0.0, 0.0]), 0.008 * k)
    assert out[0] == pytest.approx(2.0) and out[1] == out[2] == 0.0
    # the stored sum is clamped too: the error reversing unwinds it at once
    out = term.update(np.array([-0.009, 0.0, 0.0]), 0.008 * 2000)
    assert out[0] < 2.0


def test_a_gap_in_the_ticks_or_a_reset_clears_it():
    term = PositionIntegral(ON)
    e = np.array([0.005, 0.0, 0.0])
    for k in range(10):
        out = term.update(e, 0.008 * k)
    assert out[0] > 0.0
    assert np.all(term.update(e, 0.008 * 9 + 0.5) == 0.0)  # the controller was off 0.5 s
    term.update(e, 1.0)
    term.reset()
    assert np.all(term.update(e, 1.008) == 0.0)


def test_a_moving_goal_holds_the_sum_when_asked_to():
    held = PositionIntegral(dataclasses.replace(ON, integral_goal_speed_max_m_s=0.005))
    free = PositionIntegral(ON)
    e = np.array([0.004, 0.0, 0.0])
    for term in (held, free):
        term.update(e, 0.0)
        before = term.update(e, 0.008).copy()  # at rest: both integrate
        assert before[0] == pytest.approx(600.0 * 0.004 * 0.008)
        moving = term.update(e, 0.016, np.array([0.0, 0.1, 0.0])).copy()
        assert bool(moving[0] == pytest.approx(before[0])) is (term is held)
        resting = term.update(e, 0.024, np.array([0.0, 0.004, 0.0]))  # below the threshold
        assert resting[0] > moving[0]


def test_off_by_default_and_an_unstable_gain_is_refused():
    assert not PositionIntegral(GainsConfig()).enabled
    with pytest.raises(ConfigError) as info:
        parse(GainsConfig, {"kp_s2": 300.0, "ki_s3": 20000.0}, "controller.yaml", "gains")
    assert info.value.key == "gains.ki_s3" and "kp kd" in info.value.expected


GEOMETRY_ERROR = {
    # the plant's muscle sites / via-points moved by up to 3 mm and (MJCF) its wrap radii off by
    # up to 3 mm; masses off by up to 10 % as always
    "planar_arm": ["mock_arm.model_error.via_point_error_mm=3",
                   "mock_arm.model_error.wrap_radius_error_mm=3"],
    # (Musashi: 7 mm; its wires' friction holds the hand nearer the goal than a frictionless
    # plant would: with 3-5 mm the paper's law ends within 1-2 mm, too small an error to remove)
    "musashi_left_arm": ["mock_arm.model_error.via_point_error_mm=7"],
}
POSE = {"planar_arm": "reach_start", "musashi_left_arm": "trajectory_a"}
#: (ki [m/s^3], the error with it at most this fraction of the paper's law's)
INTEGRAL = {"planar_arm": (600.0, 0.5), "musashi_left_arm": (1500.0, 0.5)}


def _final_error(robot_name: str, ki: float) -> tuple[float, float]:
    """(hand error at the end of a held trajectory [m], moment-arm error at that pose [m])."""
    setup = load_setup(config_root() / robot_name, Overrides.parse([
        *GEOMETRY_ERROR[robot_name], "experiments.trajectory.hold_s=2.0",
        f"controller.gains.ki_s3={ki}"]))
    run = run_trajectory(setup, "osc", POSE[robot_name])
    # the premise: the plant's moment arms differ from the model's by millimetres
    mock = Bench(setup, "osc").mock
    q = run.recorder.array("q_rad")[-1]
    data = mujoco.MjData(mock.model)
    data.qpos[mock.arm.qpos_adr] = q
    mujoco.mj_fwdPosition(mock.model, data)
    plant = tendon_jacobian(mock.model, data)[mock.arm.tendon_ids][:, mock.arm.dof_adr]
    model = setup.robot.geometry.kinematics_at(q).jacobian
    return run.metrics["final_error_m"], float(np.abs(plant - model).max())


@pytest.mark.parametrize("robot_name", ["planar_arm", "musashi_left_arm"])
def test_the_hand_settles_within_half_a_centimetre_despite_the_geometry_error(robot_name):
    ki, fraction = INTEGRAL[robot_name]
    without, arm_error = _final_error(robot_name, 0.0)
    with_integral, _ = _final_error(robot_name, ki)
    assert 1e-3 < arm_error < 6e-3  # a few millimetres of moment arm
    assert without > 0.002, without  # the paper's law keeps a steady error: the check can fail
    assert with_integral < min(0.005, fraction * without), (without, with_integral)


def test_the_option_leaves_the_default_controller_unchanged():
    setup = load_setup(config_root() / "planar_arm", Overrides.parse([]))
    assert setup.controller_config.gains.ki_s3 == 0.0
    on = dataclasses.replace(setup.controller_config.gains, ki_s3=600.0)
    assert PositionIntegral(on).enabled
