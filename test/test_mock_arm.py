"""The mock arm: MuJoCo physics behind raw sensors and driver units, with actuator lag, the
DC-motor tension envelope, tension-dependent (capstan) tendon friction, elastic wires, model
error on by default, a push-only force gauge, and determinism per seed."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import replace

import mujoco
import numpy as np
import pytest

from musculo_control.config.parser import load
from musculo_control.errors import ConfigError, InputError
from musculo_control.hardware.calibration import load_calibration
from musculo_control.hardware.drivers import load_drivers
from musculo_control.hardware.potentiometer import (
    PotentiometerReader,
    PotentiometerReaderConfig,
)
from musculo_control.sim.mock_arm import (
    MockArm,
    MockArmConfig,
    TendonConfig,
    load_mock_arm,
    load_mock_config,
)
from musculo_control.sim.mujoco_arm import ModelErrorConfig, tendon_jacobian
from musculo_control.sim.setup import Overrides, load_setup


@pytest.fixture(scope="module")
def cal(robot, config_dir):
    return load_calibration(robot, config_dir / "hardware.yaml")


@pytest.fixture(scope="module")
def mock_cfg(robot, config_dir):
    return load_mock_config(robot, config_dir / "mock_arm.yaml")


def _exact_cfg(cfg, **sensor_changes):
    """Model error off, optionally different sensor settings."""
    return replace(cfg, model_error=replace(cfg.model_error, enabled=False),
                   sensors=replace(cfg.sensors, **sensor_changes))


def _hold(arm, tension_n):
    arm.set_command(arm.calibration.n_to_driver(np.broadcast_to(tension_n, (arm.m,))))


def test_model_error_is_on_by_default(robot, cal, mock_cfg):
    assert mock_cfg.model_error.enabled
    arm = MockArm(robot, cal, mock_cfg)
    exact = MockArm(robot, cal, _exact_cfg(mock_cfg))
    assert np.abs(arm.model.body_mass - exact.model.body_mass).max() > 1e-3
    arm.reset(robot.home_pose_rad)
    exact.reset(robot.home_pose_rad)
    assert np.abs(arm.tendon_length_m - exact.tendon_length_m).max() > 1e-4
    np.testing.assert_allclose(
        exact.tendon_length_m,
        robot.geometry.lengths_at(robot.home_pose_rad), atol=1e-12)


def test_same_seed_same_trajectory_and_readings_different_seed_different_noise(robot, cal,
                                                                                mock_cfg):
    def run(seed):
        arm = MockArm(robot, cal, mock_cfg, seed=seed)
        arm.reset(robot.home_pose_rad, 5.0)
        rng = np.random.default_rng(100)  # the same commands for every run
        qs, pots, cells = [], [], []
        for k in range(300):
            if k % 10 == 0:
                _hold(arm, rng.uniform(5.0, 60.0, arm.m))
            arm.step()
            if k % 2 == 0:
                pots.append(arm.read_potentiometers())
                cells.append(arm.read_tendons()[1])
            qs.append(arm.q_rad)
        return np.array(qs), np.array(pots), np.array(cells)

    a, b, c = run(1), run(1), run(2)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[1], c[1]) and not np.array_equal(a[2], c[2])
    assert not np.array_equal(a[0], c[0])  # the model error differs too


def test_noise_seed_alone_changes_only_the_noise(robot, cal, mock_cfg):
    cfg = _exact_cfg(mock_cfg)
    a, b = MockArm(robot, cal, cfg, seed=1), MockArm(robot, cal, cfg, seed=2)
    for arm in (a, b):
        arm.reset(robot.home_pose_rad, 10.0)
        for _ in range(50):
            arm.step()
    np.testing.assert_array_equal(a.q_rad, b.q_rad)
    assert not np.array_equal(a.read_potentiometers(), b.read_potentiometers())


def test_actuator_lag_time_constant_from_a_step_response(robot, cal, mock_cfg):
    """Command a tension step; the delivered tension reaches 1 - 1/e of it after tau."""
    cfg = _exact_cfg(mock_cfg)
    # a supply voltage so high that the winch-speed envelope never binds while the arm,
    # held by only 10 N per tendon, falls during the step
    cfg = replace(cfg, actuator=replace(cfg.actuator,
                                        supply_voltage_v=1e5))
    arm = MockArm(robot, cal, cfg)
    arm.reset(robot.home_pose_rad, 10.0)
    target = np.full(arm.m, 10.0)
    target[6] = 40.0  # one tendon steps by 30 N
    _hold(arm, target)
    times, f = [], []
    for _ in range(int(5 * mock_cfg.actuator.time_constant_s / arm.dt_s)):
        _hold(arm, target)  # as a driver does, every step (the modules' watchdog)
        arm.step()
        times.append(arm.time_s)
        f.append(arm.tendon_tension_n[6])
    frac = (np.array(f) - 10.0) / 30.0
    crossing = np.interp(1.0 - math.exp(-1.0), frac, times)
    assert crossing == pytest.approx(mock_cfg.actuator.time_constant_s, rel=0.03)
    assert frac[-1] == pytest.approx(1.0 - math.exp(-5.0), abs=0.01)


def test_tension_envelope_falls_with_winding_speed(robot, cal, mock_cfg):
    arm = MockArm(robot, cal, _exact_cfg(mock_cfg))
    act = mock_cfg.actuator
    r = cal.winch_radius_m
    stall = act.gear_efficiency * act.gear_ratio * act.torque_constant_nm_a / r \
        * act.current_limit_a
    np.testing.assert_allclose(arm.max_tension_n, stall)
    arm.reset(robot.home_pose_rad)
    np.testing.assert_allclose(arm.tension_capacity_n(), stall)
    # spin the elbow so that some tendon winds in beyond the knee of the motor line
    knee = (act.supply_voltage_v - act.current_limit_a * act.terminal_resistance_ohm) \
        / (act.torque_constant_nm_a * act.gear_ratio / r)  # [m/s]
    qd = np.zeros(arm.n)
    qd[3] = -1.0
    arm.reset(robot.home_pose_rad, qd0_rad_s=qd)
    arm.reset(robot.home_pose_rad,
              qd0_rad_s=qd * 1.2 * knee.max() / np.abs(arm.tendon_velocity_m_s).max())
    v_short = -arm.tendon_velocity_m_s
    w = act.gear_ratio * v_short / r  # motor speed [rad/s]
    current = np.clip((act.supply_voltage_v - act.torque_constant_nm_a * w)
                      / act.terminal_resistance_ohm, 0.0, act.current_limit_a)
    expected = act.gear_efficiency * act.gear_ratio * act.torque_constant_nm_a / r * current
    cap = arm.tension_capacity_n()
    np.testing.assert_allclose(cap, expected)
    assert np.any(cap < 0.9 * stall) and np.all(cap[v_short <= 0] == stall[v_short <= 0])
    # a huge command delivers no more than the capacity at that speed
    _hold(arm, 1e4)
    arm.step()
    assert np.all(arm.tendon_tension_n <= cap + 1e-9)


def test_positive_command_shortens_the_tendon(robot, cal, mock_cfg):
    # without the wire's friction, which holds a 150 N pull against 5 N antagonists for a while
    arm = MockArm(robot, cal, replace(mock_cfg, tendon=TendonConfig()))
    arm.reset(robot.home_pose_rad, 5.0)
    cmd = np.full(arm.m, 5.0)
    i = robot.muscle_names.index("biceps") if "biceps" in robot.muscle_names else 0
    cmd[i] = 150.0
    l0 = arm.tendon_length_m[i]
    for _ in range(100):
        _hold(arm, cmd)
        arm.step()
    assert arm.tendon_length_m[i] < l0 - 1e-3


def test_the_modules_watchdog_drops_to_idle_tension_when_commands_stop(robot, cal, mock_cfg):
    arm = MockArm(robot, cal, mock_cfg)
    act = mock_cfg.actuator
    arm.reset(robot.home_pose_rad, 5.0)
    arm.held = True  # joints frozen: only the actuators matter here
    steps = round(act.command_timeout_s / arm.dt_s)
    for _ in range(steps):
        _hold(arm, 200.0)
        arm.step()
    assert not arm.watchdog_fired and arm.command_tension_n.min() == pytest.approx(200.0)
    for _ in range(steps):  # silence for one timeout: still the last command
        arm.step()
    assert not arm.watchdog_fired
    for _ in range(3 * steps):
        arm.step()
    assert arm.watchdog_fired
    np.testing.assert_allclose(arm.command_tension_n, act.timeout_tension_n)
    assert arm.tendon_tension_n.max() < 200.0 * math.exp(-2.0)  # decaying with the lag
    np.testing.assert_array_equal(arm.q_rad, robot.home_pose_rad)  # held: joints frozen
    _hold(arm, 50.0)
    assert not arm.watchdog_fired


def test_sensor_chain_recovers_the_true_state(robot, cal, mock_cfg, config_dir):
    """Mock raw readings through the potentiometer reader and the tendon driver give back the
    mock's joint angles (within noise and quantisation), the model's muscle lengths (model error
    off) and the delivered tensions (within load-cell noise)."""
    cfg = _exact_cfg(mock_cfg)
    arm = MockArm(robot, cal, cfg)
    reader_cfg = load(PotentiometerReaderConfig, config_dir / "hardware.yaml",
                      "potentiometer_reader")
    # the unbalanced tensions may throw a wrist past its limit: not what this test is about
    reader = PotentiometerReader(cal, robot.arm.lower_rad, robot.arm.upper_rad,
                                 replace(reader_cfg, limit_margin_rad=10.0))
    # the driver's limits as the loaders build them (its floor is robot.yaml hill.f_min_n)
    driver = load_drivers(robot, config_dir / "hardware.yaml").tendons
    arm.reset(robot.home_pose_rad, 20.0)
    for _ in range(37):
        arm.step()
    pot = reader.update(arm.read_potentiometers(), arm.time_s)
    enc, cell = arm.read_tendons()
    st = driver.read(enc, cell, arm.time_s)
    assert pot.ok and st.ok
    q_tol = (0.5 + 5 * cfg.sensors.potentiometer_noise_counts) / cal.pot_counts_per_rad
    assert np.all(np.abs(pot.q_rad - arm.q_rad) <= q_tol)
    model_l = robot.geometry.lengths_at(arm.q_rad)
    np.testing.assert_allclose(st.length_m, model_l, atol=1.0 / cal.encoder_counts_per_m.min())
    f_tol = (0.5 + 5 * cfg.sensors.loadcell_noise_counts) / cal.loadcell_counts_per_n
    assert np.all(np.abs(st.tension_n - arm.tendon_tension_n) <= f_tol)


def test_encoders_are_zeroed_on_the_mocks_own_geometry(robot, cal, mock_cfg):
    """With model error, the encoders read their offset at the calibration pose, so decoded
    lengths are the model's reference there and follow the mock's true length changes."""
    arm = MockArm(robot, cal, replace(mock_cfg, sensors=replace(mock_cfg.sensors,
                                                                loadcell_noise_counts=0.0)))
    arm.reset(cal.calibration_pose_rad)
    enc, _ = arm.read_tendons()
    np.testing.assert_allclose(enc, np.rint(cal.encoder_offset_counts))
    arm.reset(robot.home_pose_rad)
    enc, _ = arm.read_tendons()
    true = arm.tendon_length_m
    arm.reset(cal.calibration_pose_rad)
    true_cal = arm.tendon_length_m
    np.testing.assert_allclose(cal.encoder_to_length(enc) - cal.reference_length_m,
                               true - true_cal, atol=1.0 / cal.encoder_counts_per_m.min())


def test_potentiometer_counts_are_quantised_and_clipped(robot, cal, mock_cfg):
    arm = MockArm(robot, cal, mock_cfg)
    arm.reset(robot.home_pose_rad)
    counts = arm.read_potentiometers()
    np.testing.assert_array_equal(counts, np.rint(counts))
    assert np.all((counts >= 0) & (counts <= cal.pot_full_scale_counts))
    noisy = np.array([arm.read_potentiometers() for _ in range(400)])
    std = noisy.std(axis=0)
    expected = mock_cfg.sensors.potentiometer_noise_counts
    assert np.all(std > 0.5 * expected) and np.all(std < 2.0 * expected + 0.3)


def test_gauge_pushes_along_its_axis_only(robot, cal, mock_cfg):
    cfg = _exact_cfg(mock_cfg)
    arm = MockArm(robot, cal, cfg)
    arm.reset(robot.home_pose_rad, 20.0)
    elbow = arm.elbow_position_m
    axis = np.array([0.0, -1.0, 0.0])  # medial push, towards the body's midline
    radius = cfg.gauge.contact_radius_m
    # not touching: no force
    arm.set_gauge(elbow - (radius + 0.01) * axis, axis)
    arm.step()
    assert arm.gauge_force_n == 0.0
    np.testing.assert_array_equal(arm.data.qfrc_applied, 0.0)
    # 1 cm penetration, tip offset sideways by 2 cm: force k * 1 cm along the axis only
    arm.reset(robot.home_pose_rad, 20.0)
    sideways = np.array([0.0, 0.0, 0.02])
    arm.set_gauge(elbow - (radius - 0.01) * axis + sideways, axis)
    arm.step()
    assert arm.gauge_force_n == pytest.approx(cfg.gauge.stiffness_n_m * 0.01, rel=1e-9)
    jac = np.zeros((3, arm.model.nv))
    data = mujoco.MjData(arm.model)
    data.qpos[:] = 0.0
    data.qpos[arm.arm.qpos_adr] = robot.home_pose_rad
    mujoco.mj_kinematics(arm.model, data)
    mujoco.mj_comPos(arm.model, data)
    mujoco.mj_jac(arm.model, data, jac, None, elbow, arm.arm.body_id[cfg.elbow_link])
    np.testing.assert_allclose(arm.data.qfrc_applied, jac.T @ (arm.gauge_force_n * axis),
                               atol=1e-9)
    # holding the push moves the elbow along the axis
    for _ in range(200):
        arm.step()
    assert (arm.elbow_position_m - elbow) @ axis > 1e-3
    arm.clear_gauge()
    arm.step()
    assert arm.gauge_force_n == 0.0 and np.all(arm.data.qfrc_applied == 0.0)


def test_bad_inputs_are_rejected(robot, cal, mock_cfg):
    arm = MockArm(robot, cal, mock_cfg)
    with pytest.raises(InputError):
        arm.set_command(np.full(arm.m - 1, 1.0))
    with pytest.raises(InputError):
        arm.set_command(np.full(arm.m, np.nan))
    with pytest.raises(InputError):
        arm.reset(np.full(arm.n, np.nan))
    with pytest.raises(InputError):
        arm.set_gauge([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])


def test_negative_command_acts_as_zero(robot, cal, mock_cfg):
    arm = MockArm(robot, cal, mock_cfg)
    arm.reset(robot.home_pose_rad, 10.0)
    arm.set_command(np.full(arm.m, -500.0))
    for _ in range(5):
        arm.step()
    assert np.all(arm.tendon_tension_n >= 0.0)
    assert np.all(arm.command_tension_n == 0.0)


def test_released_arm_falls_and_steps_without_warnings(robot, cal, mock_cfg):
    """At minimum tension the arm sags under gravity; joint limits hold it; no MuJoCo warning."""
    arm = MockArm(robot, cal, mock_cfg)
    arm.reset(robot.home_pose_rad, 5.0)
    _hold(arm, 5.0)
    for _ in range(1000):
        arm.step()
    assert arm.warnings() == {}
    assert arm.time_s == pytest.approx(1.0)
    assert np.linalg.norm(arm.q_rad - robot.home_pose_rad) > 0.05
    lo, hi = robot.arm.lower_rad, robot.arm.upper_rad
    assert np.all(arm.q_rad > lo - 0.1) and np.all(arm.q_rad < hi + 0.1)


def test_load_mock_arm_from_the_config_folder(robot):
    arm = load_mock_arm(robot, seed=3)
    assert arm.seed == 3 and arm.dt_s == pytest.approx(0.001)


def test_model_error_size_follows_config(robot, cal, mock_cfg):
    big = replace(mock_cfg, model_error=ModelErrorConfig(link_mass_error_percent=30.0,
                                                         via_point_error_mm=0.0))
    arm = MockArm(robot, cal, big)
    exact = MockArm(robot, cal, _exact_cfg(mock_cfg))
    assert np.abs(arm.model.site_pos - exact.model.site_pos).max() == 0.0
    ratio = arm.model.body_mass[exact.model.body_mass > 0] / exact.model.body_mass[
        exact.model.body_mass > 0]
    assert np.all(np.abs(ratio - 1) <= 0.3) and np.abs(ratio - 1).max() > 0.1


def test_joint_stops_hold_against_full_tension(robot, cal, mock_cfg):
    """Every tendon in turn at the driver's maximum pulls its joints into their stops; the stops
    (stiffened MuJoCo limit constraints) give way by little."""
    arm = MockArm(robot, cal, mock_cfg)
    worst = 0.0
    for i in range(arm.m):
        arm.reset(robot.home_pose_rad, 5.0)
        f = np.full(arm.m, 5.0)
        f[i] = 300.0
        _hold(arm, f)
        for _ in range(400):
            arm.step()
        q = arm.q_rad
        worst = max(worst, float(np.max(np.maximum(q - robot.arm.upper_rad, 0.0)
                                         + np.maximum(robot.arm.lower_rad - q, 0.0))))
        assert arm.warnings() == {}
    assert worst < 0.05


def _bends_from_the_model(robot, q):
    """Each muscle path's total bend from the controller's via-point polylines [rad]."""
    out = []
    for path in robot.geometry.paths_at(q):
        seg = np.diff(np.asarray(path), axis=0)
        u = seg / np.linalg.norm(seg, axis=1, keepdims=True)
        out.append(float(np.arccos(np.clip((u[:-1] * u[1:]).sum(axis=1), -1.0, 1.0)).sum()))
    return np.array(out)


def test_capstan_band_follows_tension_and_the_paths_bends(robot, cal, mock_cfg):
    """The friction band is f0 + f sinh(mu theta) and the actuator force f cosh(mu theta), with
    theta the routing plus the path's bends, which match the via-point geometry's own."""
    cfg = _exact_cfg(mock_cfg)
    ten = cfg.tendon
    assert ten.friction_coefficient > 0.0
    arm = MockArm(robot, cal, cfg)
    q = robot.home_pose_rad
    arm.reset(q, np.linspace(5.0, 400.0, arm.m))
    theta = ten.routing_wrap_angle_rad + _bends_from_the_model(robot, q)
    assert np.any(theta > ten.routing_wrap_angle_rad + 0.3)  # some paths bend
    np.testing.assert_allclose(arm.wrap_angle_rad, theta, atol=1e-9)
    f = arm.tendon_tension_n
    mt = ten.friction_coefficient * theta
    np.testing.assert_allclose(arm.friction_band_n, ten.constant_friction_n + f * np.sinh(mt))
    np.testing.assert_allclose(arm.data.ctrl, f * np.cosh(mt))
    # the band's ends are the capstan equation's tensions beyond the guides
    np.testing.assert_allclose(arm.data.ctrl + arm.friction_band_n - ten.constant_friction_n,
                               f * np.exp(mt))


@pytest.fixture(scope="module")
def planar():
    """The two-joint MJCF arm, whose six muscles can hold it anywhere: (robot, calibration,
    mock config with model error off and the wire's friction on)."""
    from musculo_control.model.robot import load_robot
    from musculo_control.paths import default_config_dir

    folder = default_config_dir().parent / "planar_arm"
    robot = load_robot(folder)
    cfg = load_mock_config(robot, folder / "mock_arm.yaml")
    cfg = replace(_exact_cfg(cfg), tendon=TendonConfig(
        friction_coefficient=0.16, routing_wrap_angle_rad=1.5, creep_speed_m_s=1e-3))
    return robot, load_calibration(robot, folder / "hardware.yaml"), cfg


def _push_hand(planar, tendon, steps=500):
    """Hold the arm with tensions of at least 100 N that balance gravity (bounded least squares
    on the mock's own tendon Jacobian), push the hand with 10 N; the hand's travel [m]."""
    from scipy.optimize import lsq_linear

    robot, cal, cfg = planar
    arm = MockArm(robot, cal, replace(cfg, tendon=tendon))
    q = 0.5 * (robot.arm.lower_rad + robot.arm.upper_rad)
    arm.reset(q, 100.0)
    mujoco.mj_forward(arm.model, arm.data)
    jac = tendon_jacobian(arm.model, arm.data)[arm.arm.tendon_ids][:, arm.arm.dof_adr]
    gravity = np.array(arm.data.qfrc_bias[arm.arm.dof_adr])
    hold = lsq_linear(-jac.T, gravity, bounds=(100.0, 600.0))  # tau = -Jm^T h holds gravity
    assert hold.cost < 1e-9
    command = hold.x / np.cosh(tendon.friction_coefficient * arm.wrap_angle_rad)  # f cosh(.)
    arm.reset(q, command)
    x0 = arm.hand_position_m
    for _ in range(steps):
        _hold(arm, command)
        arm.data.qfrc_applied[:] = 0.0
        mujoco.mj_applyFT(arm.model, arm.data, np.array([10.0, 0.0, 10.0]), np.zeros(3),
                          arm.hand_position_m, arm.arm.task_body_id, arm.data.qfrc_applied)
        arm.step()
    assert arm.warnings() == {}
    return float(np.linalg.norm(arm.hand_position_m - x0))


def test_capstan_friction_holds_then_creeps_in_proportion_to_the_creep_speed(planar):
    """Under the same push, tensioned wires with friction let the hand move far less than
    without, and inside the band the creep scales with the creep speed."""
    tendon = planar[2].tendon
    free = _push_hand(planar, TendonConfig())
    slow = _push_hand(planar, replace(tendon, creep_speed_m_s=1e-4))
    fast = _push_hand(planar, replace(tendon, creep_speed_m_s=4e-4))
    assert free > 0.01 and slow < 0.1 * free
    assert 2.0 < fast / slow < 6.0


def test_elastic_wire_tension_rises_no_faster_than_the_winch_winds(robot, cal, mock_cfg):
    """A held arm, a big tension step: the tension rises at k times the winch's top speed at
    that tension (the motor line), slower than the lag asks for; it still gets there."""
    cfg = _exact_cfg(mock_cfg)
    # elastic wires are an option (off in the shipped mock_arm.yaml): its comment's EA estimate
    cfg = dataclasses.replace(cfg, tendon=dataclasses.replace(cfg.tendon,
                                                              axial_stiffness_n=1.2e5))
    act, ten = cfg.actuator, cfg.tendon
    assert ten.axial_stiffness_n is not None
    arm = MockArm(robot, cal, cfg)
    arm.reset(robot.home_pose_rad, 20.0)
    arm.held = True
    i = 6
    # k = EA / free length, the wire's length at the calibration pose (where it was cut)
    length = robot.geometry.lengths_at(cal.calibration_pose_rad)[i]
    k = ten.axial_stiffness_n / (ten.routing_length_m + length)
    target = np.full(arm.m, 20.0)
    target[i] = 1200.0
    f = [arm.tendon_tension_n[i]]
    for _ in range(300):
        _hold(arm, target)
        arm.step()
        f.append(arm.tendon_tension_n[i])
    f = np.array(f)
    r = cal.winch_radius_m[i]
    k_f = act.gear_efficiency * act.gear_ratio * act.torque_constant_nm_a / r
    v_max = r / (act.gear_ratio * act.torque_constant_nm_a) * (
        act.supply_voltage_v - act.terminal_resistance_ohm * f[:-1] / k_f)
    rate_limit = k * arm.dt_s * v_max
    lag = (1.0 - math.exp(-arm.dt_s / act.time_constant_s)) * (1200.0 - f[:-1])
    np.testing.assert_allclose(np.diff(f), np.minimum(lag, rate_limit), rtol=1e-9, atol=1e-9)
    assert np.any(rate_limit < 0.8 * lag)  # the winch's speed did bind
    assert f[-1] == pytest.approx(1200.0, abs=1.0)


def _gravity_torque(arm, q):
    """Joint torques gravity puts on the arm at rest at ``q`` [Nm] (MuJoCo's bias force)."""
    data = mujoco.MjData(arm.model)
    arm.arm.set_joints(data, q, np.zeros(len(q)))
    mujoco.mj_forward(arm.model, data)
    return data.qfrc_bias[arm.arm.dof_adr].copy()


def test_link_mass_scale_scales_each_link_on_top_of_the_model_error(robot, cal, mock_cfg):
    links = robot.arm.link_names()
    assert mock_cfg.physics.link_mass_scale == ()  # shipped: no change
    factors = tuple(1.0 + 0.05 * (k + 1) for k in range(len(links)))
    plain = MockArm(robot, cal, mock_cfg)
    scaled = MockArm(robot, cal, replace(mock_cfg, physics=replace(
        mock_cfg.physics, link_mass_scale=factors)))
    for link, factor in zip(links, factors):
        b = plain.arm.body_id[link]
        # the drawn error (the same seed) times the configured factor
        assert scaled.model.body_mass[b] == pytest.approx(plain.model.body_mass[b] * factor,
                                                          rel=1e-12)
        np.testing.assert_allclose(scaled.model.body_inertia[b],
                                   plain.model.body_inertia[b] * factor, rtol=1e-12)
    # derived constants follow: the world's subtree mass is the sum of the scaled masses
    assert scaled.model.body_subtreemass[0] == pytest.approx(
        sum(plain.model.body_mass[plain.arm.body_id[k]] * f for k, f in zip(links, factors)))
    # one factor for every link: gravity's torques scale by it (they are linear in the masses)
    same = MockArm(robot, cal, replace(mock_cfg, physics=replace(
        mock_cfg.physics, link_mass_scale=(1.3,) * len(links))))
    q = robot.home_pose_rad + 0.2
    np.testing.assert_allclose(_gravity_torque(same, q), 1.3 * _gravity_torque(plain, q),
                               rtol=1e-9, atol=1e-12)


def test_a_wrong_link_mass_scale_names_file_field_and_links(robot, config_dir, tmp_path):
    text = (config_dir / "mock_arm.yaml").read_text()
    bad = tmp_path / "mock_arm.yaml"
    bad.write_text(text.replace("link_mass_scale: []", "link_mass_scale: [1.0, 1.1]"))
    with pytest.raises(ConfigError) as err:
        load_mock_config(robot, bad)
    msg = str(err.value)
    assert str(bad) in msg and "physics.link_mass_scale" in msg
    assert f"{len(robot.arm.link_names())} factors" in msg and "upper_arm_link" in msg
    bad.write_text(text.replace("link_mass_scale: []", "link_mass_scale: [1.0, -1.0]"))
    with pytest.raises(ConfigError) as err:
        load(MockArmConfig, bad)
    assert "link_mass_scale" in str(err.value)
    bad.write_text(text.replace("moment_arm_scale: []", "moment_arm_scale: [1.0, 1.1]"))
    with pytest.raises(ConfigError) as err:
        load_mock_config(robot, bad)
    msg = str(err.value)
    assert str(bad) in msg and "physics.moment_arm_scale" in msg
    assert f"{robot.n_muscles} factors" in msg and robot.muscle_names[0] in msg


def test_link_mass_scale_is_set_from_the_command_line(config_dir):
    n = 9  # the stand-in arm's URDF links
    setup = load_setup(config_dir, Overrides.parse(
        [f"mock_arm.physics.link_mass_scale=[{', '.join(['1.2'] * n)}]"]))
    assert setup.mock_config.physics.link_mass_scale == (1.2,) * n
