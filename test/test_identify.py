"""``musculo identify``: each part against an independent oracle, and the whole on a
robot with secrets (a mock whose parameters the identification is not told)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from musculo_control import cli
from musculo_control.errors import ConfigError
from musculo_control.hardware.calibration import load_calibration
from musculo_control.paths import config_root
from musculo_control.sim.identify import fit as identify_fit
from musculo_control.sim.identify.config import (
    PARAMETER_KEYS,
    IdentifyConfig,
    ParameterConfig,
    load_identify_config,
)
from musculo_control.sim.identify.fit import WHAT_TO_RECORD, FitResult, covariance, judge
from musculo_control.sim.identify.overlay import overlay_text
from musculo_control.sim.identify.recording import Recording, joint_rates, read_recording
from musculo_control.sim.identify.report import HorizonErrors, table
from musculo_control.sim.identify.windows import MockFamily, Window, simulate_window
from musculo_control.sim.mock_arm import MockArm
from musculo_control.sim.setup import Overrides, load_setup

PLANAR = config_root() / "planar_arm"
MUSASHI = config_root() / "musashi_left_arm"
#: what the robot with secrets differs in from mock_arm.yaml (planar arm)
SECRET = ["--seed", "5", "--set", "mock_arm.actuator.time_constant_s=0.035",
          "--set", "mock_arm.physics.joint_damping_nm_s_rad=[0.45,0.3]",
          "--set", "mock_arm.physics.joint_frictionloss_nm=[0.3,0.15]"]
#: the true values of the fitted parameters (planar identify.yaml order; factors on the
#: configured [0.3, 0.2] and [0.2, 0.1])
TRUE_X = {"actuator.time_constant_s": 0.035, "physics.joint_damping_nm_s_rad": 1.5,
          "physics.joint_frictionloss_nm": 1.5, "link_mass_scale": 1.0}


@pytest.mark.parametrize("folder", [PLANAR, MUSASHI])
def test_the_shipped_identify_files_load_and_name_existing_keys(folder):
    cfg = load_identify_config(folder / "identify.yaml")
    setup = load_setup(folder, Overrides.parse([]))
    cal = load_calibration(setup.robot, folder / "hardware.yaml")
    family = MockFamily(setup.robot, cal, setup.mock_config, cfg.parameters,
                        nominal_geometry=True)
    x = family.configured()
    assert np.all(x >= family.lower) and np.all(x <= family.upper)
    family.build(x)  # every key applies to this robot's mock


def test_every_parameter_key_says_what_to_record():
    assert set(WHAT_TO_RECORD) == set(PARAMETER_KEYS)


def test_a_wrong_identify_file_names_its_field(tmp_path):
    text = (PLANAR / "identify.yaml").read_text()
    bad = tmp_path / "identify.yaml"
    bad.write_text(text.replace("lower: 0.005", "lower: 0.5"))
    with pytest.raises(ConfigError) as err:
        load_identify_config(bad)
    assert "parameters[0].upper" in str(err.value) and str(bad) in str(err.value)
    bad.write_text(text.replace("key: link_mass_scale", "key: link_masses"))
    with pytest.raises(ConfigError) as err:
        load_identify_config(bad)
    assert "parameters[3].key" in str(err.value)


def test_per_link_mass_factors_are_checked_against_the_key_and_the_robot(tmp_path):
    text = (PLANAR / "identify.yaml").read_text()
    mass = "  - key: link_mass_scale"
    bad = tmp_path / "identify.yaml"
    bad.write_text(text.replace("per_link: true", "per_link: false"))
    with pytest.raises(ConfigError) as err:  # links name per-link factors
        load_identify_config(bad)
    assert "parameters[3].per_link" in str(err.value)
    bad.write_text(text.replace("  - key: actuator.time_constant_s",
                                "  - key: actuator.time_constant_s\n    per_link: true"))
    with pytest.raises(ConfigError) as err:
        load_identify_config(bad)
    assert "parameters[0].per_link" in str(err.value) and "link_mass_scale" in str(err.value)
    assert mass in text
    bad.write_text(text.replace("links: [upper_arm, forearm]", "links: [upper_arm, torso]"))
    cfg = load_identify_config(bad)
    setup = load_setup(PLANAR, Overrides.parse([]))
    cal = load_calibration(setup.robot, PLANAR / "hardware.yaml")
    with pytest.raises(ConfigError) as err:  # the torso is welded to the world
        MockFamily(setup.robot, cal, setup.mock_config, cfg.parameters, nominal_geometry=True,
                   identify_file=str(bad))
    assert "parameters[3].links[1]" in str(err.value) and "'forearm'" in str(err.value)
    assert str(bad) in str(err.value)


#: a per-muscle moment-arm parameter for the planar identify.yaml (appended as parameters[4])
MOMENT_ARMS = """  - key: moment_arm_scale
    scale: true
    lower: 0.7
    upper: 1.3
    per_muscle: true
"""


def _with_moment_arms(text: str, entry: str = MOMENT_ARMS) -> str:
    return text.replace("windows:", entry + "windows:", 1)


def test_per_muscle_moment_arm_factors_are_checked_against_the_key_and_the_robot(tmp_path):
    text = (PLANAR / "identify.yaml").read_text()
    bad = tmp_path / "identify.yaml"
    bad.write_text(_with_moment_arms(text, MOMENT_ARMS.replace("per_muscle: true",
                                                               "muscles: [biceps]")))
    with pytest.raises(ConfigError) as err:  # muscles name per-muscle factors
        load_identify_config(bad)
    assert "parameters[4].per_muscle" in str(err.value)
    bad.write_text(text.replace("per_link: true", "per_link: true\n    per_muscle: true"))
    with pytest.raises(ConfigError) as err:
        load_identify_config(bad)
    assert "parameters[3].per_muscle" in str(err.value) and "moment_arm_scale" in str(err.value)
    bad.write_text(_with_moment_arms(text, MOMENT_ARMS + "    muscles: [biceps, triceps]\n"))
    cfg = load_identify_config(bad)
    setup = load_setup(PLANAR, Overrides.parse([]))
    cal = load_calibration(setup.robot, PLANAR / "hardware.yaml")
    with pytest.raises(ConfigError) as err:  # the planar arm's triceps has two heads
        MockFamily(setup.robot, cal, setup.mock_config, cfg.parameters, nominal_geometry=True,
                   identify_file=str(bad))
    assert "parameters[4].muscles[1]" in str(err.value) and "'triceps_long'" in str(err.value)
    assert str(bad) in str(err.value)


def test_per_muscle_factors_reach_the_overlay_and_make_the_same_mock(tmp_path):
    cfg_file = tmp_path / "identify.yaml"
    cfg_file.write_text(_with_moment_arms((PLANAR / "identify.yaml").read_text(),
                                          MOMENT_ARMS + "    muscles: [biceps, deltoid]\n"))
    cfg = load_identify_config(cfg_file)
    setup = load_setup(PLANAR, Overrides.parse([]))
    cal = load_calibration(setup.robot, PLANAR / "hardware.yaml")
    family = MockFamily(setup.robot, cal, setup.mock_config, cfg.parameters,
                        nominal_geometry=True)
    assert family.keys[-2:] == ("moment_arm_scale[biceps]", "moment_arm_scale[deltoid]")
    x = np.array([0.02, 1.0, 1.0, 1.0, 1.0, 1.2, 0.8])
    fitted = family.build(x)
    # in muscles.yaml's order: deltoid first, biceps fifth; the others keep 1
    np.testing.assert_allclose(-fitted.model.actuator_gear[:, 0], [0.8, 1, 1, 1, 1.2, 1])
    p = len(x)
    result = FitResult(family.keys, family.configured(), x, np.full(p, 0.01), np.eye(p),
                       (True,) * p, ("",) * p, 1.0, 0.5, 1.0, 0.5, 10, 5, 100, 1.0)
    text = overlay_text(family, result, nominal_geometry=True, source="test")
    assert "# biceps: fitted 1.2 +- 0.01 x configured (determined)" in text
    sets = [f"mock_arm.{section}.{key}={json.dumps(value)}"
            for section, keys in yaml.safe_load(text).items() for key, value in keys.items()]
    assert "mock_arm.physics.moment_arm_scale=[0.8, 1, 1, 1, 1.2, 1]" in sets
    loaded = MockArm(setup.robot, cal, load_setup(PLANAR, Overrides.parse(sets)).mock_config)
    np.testing.assert_allclose(loaded.model.actuator_gear, fitted.model.actuator_gear)


def test_per_link_factors_scale_their_own_link_and_the_overlay_makes_the_same_mock(
        planar_family, tmp_path):
    """The overlay's keys, given to `musculo simulate`'s loader as --set overrides of
    mock_arm.yaml, build the very mock the fit's parameter vector builds."""
    family, _ = planar_family
    assert family.keys[-2:] == ("link_mass_scale[upper_arm]", "link_mass_scale[forearm]")
    x = np.array([0.03, 1.4, 0.8, 0.9, 1.1])
    fitted, nominal = family.build(x), family.build(family.configured())
    for link, factor in (("torso", 1.0), ("upper_arm", 0.9), ("forearm", 1.1)):
        b = nominal.arm.body_id[link]
        assert fitted.model.body_mass[b] == pytest.approx(nominal.model.body_mass[b] * factor)
    p = len(x)
    result = FitResult(family.keys, family.configured(), x, np.full(p, 0.01), np.eye(p),
                       (True,) * p, ("",) * p, 1.0, 0.5, 1.0, 0.5, 10, 5, 100, 1.0)
    text = overlay_text(family, result, nominal_geometry=True, source="test")
    sets = [f"mock_arm.{section}.{key}={json.dumps(value)}"
            for section, keys in yaml.safe_load(text).items() for key, value in keys.items()]
    assert "mock_arm.physics.link_mass_scale=[1, 0.9, 1.1]" in sets
    setup = load_setup(PLANAR, Overrides.parse(sets))
    loaded = MockArm(setup.robot, family.calibration, setup.mock_config)
    np.testing.assert_allclose(loaded.model.body_mass, fitted.model.body_mass, rtol=1e-3)
    np.testing.assert_allclose(loaded.model.dof_damping, fitted.model.dof_damping, rtol=1e-3)
    assert loaded.config.actuator.time_constant_s == pytest.approx(0.03)


def test_joint_rates_are_the_slope_of_a_quadratic():
    t = np.arange(0.0, 0.2, 0.008)
    q = np.stack([0.3 + 1.5 * t - 4.0 * t ** 2, -0.2 * t + 2.0 * t ** 2], axis=1)
    k = 12
    expected = np.array([1.5 - 8.0 * t[k], -0.2 + 4.0 * t[k]])  # dq/dt, by hand
    assert np.allclose(joint_rates(t, q, k, 0.024), expected, atol=1e-9)


def _open_loop(family, x, seconds, seed):
    """The mock of ``x`` run continuously from rest on random held commands (its own API):
    the oracle of the windows, which restart it from the recorded states."""
    mock = family.build(x)
    rng = np.random.default_rng(seed)
    q0 = family.robot.home_pose_rad
    f0 = np.full(mock.m, 30.0)
    mock.reset(q0, f0)
    dt_tick = 0.008
    n_ticks = int(round(seconds / dt_tick))
    cmd = f0 + rng.uniform(-15.0, 15.0, size=(n_ticks, mock.m))
    per = int(round(dt_tick / mock.dt_s))
    t, q, qd, f = [0.0], [mock.q_rad], [mock.qd_rad_s], [mock.tendon_tension_n]
    for i in range(n_ticks):
        for _ in range(per):
            mock.set_command(mock.calibration.n_to_driver(cmd[i]))
            mock.step()
        t.append((i + 1) * dt_tick)
        q.append(mock.q_rad)
        qd.append(mock.qd_rad_s)
        f.append(mock.tendon_tension_n)
    # the command of tick i is in force from t = i * dt_tick (stamped then, no delay)
    return Recording("open-loop", np.array(t), np.array(q), np.array(qd), np.array(f),
                     np.arange(n_ticks) * dt_tick - 1e-6, cmd)


@pytest.fixture(scope="module")
def planar_family():
    cfg = load_identify_config(PLANAR / "identify.yaml")
    setup = load_setup(PLANAR, Overrides.parse([]))
    cal = load_calibration(setup.robot, PLANAR / "hardware.yaml")
    return MockFamily(setup.robot, cal, setup.mock_config, cfg.parameters,
                      nominal_geometry=True), cfg


def test_a_window_started_from_the_true_state_follows_the_continuous_run(planar_family):
    family, _ = planar_family
    x = family.configured()
    rec = _open_loop(family, x, 0.6, seed=1)
    win = Window(0, 25, 63)  # 0.2 .. 0.5 s
    q, f = simulate_window(family.build(x), rec, win, delay_s=0.0, rate_half_width_s=None)
    # restarted from the true state (rates included), the same steps
    assert np.max(np.abs(f - rec.tension_n[26:63])) < 1e-6
    assert np.max(np.abs(q - rec.q_rad[26:63])) < 1e-6
    # with the rates estimated from the angles (as from a bag): close, not exact
    q1, _ = simulate_window(family.build(x), rec, win, delay_s=0.0, rate_half_width_s=0.024)
    assert np.max(np.abs(q1 - rec.q_rad[26:63])) < 1e-2
    # and another parameter vector does not: the windows see the parameters
    other = x * np.array([2.0, 3.0, 1.0, 1.2, 1.2])
    q2, f2 = simulate_window(family.build(other), rec, win, delay_s=0.0,
                             rate_half_width_s=0.024)
    assert np.sqrt(np.mean((f2 - rec.tension_n[26:63]) ** 2)) > 1.0
    assert np.max(np.abs(q2 - rec.q_rad[26:63])) > 1e-2


def test_the_cluster_covariance_matches_the_scatter_of_repeated_fits():
    """Oracle: a linear model fitted to many data sets whose noise is shared within clusters;
    the standard deviation of the estimates over the data sets is what the covariance of one
    fit must say (the textbook one, which takes every sample as independent, says too little)."""
    rng = np.random.default_rng(3)
    clusters, size = 40, 25
    a = np.column_stack([np.ones(clusters * size), rng.normal(size=clusters * size)])
    theta = np.array([1.0, -0.5])
    estimates, predicted, naive = [], [], []
    for _ in range(400):
        noise = np.repeat(rng.normal(size=clusters), size) * 0.3 + rng.normal(
            size=clusters * size) * 0.1
        y = a @ theta + noise
        est, *_ = np.linalg.lstsq(a, y, rcond=None)
        r = a @ est - y
        estimates.append(est)
        predicted.append(covariance(a, r, [size] * clusters)[0])
        naive.append(covariance(a, r)[0])
    scatter = np.std(estimates, axis=0)
    assert np.allclose(np.mean(predicted, axis=0), scatter, rtol=0.2)
    assert np.mean(naive, axis=0)[0] < 0.5 * scatter[0]


def test_an_unseen_parameter_and_two_that_trade_off_are_not_determined():
    rng = np.random.default_rng(0)
    col = rng.normal(size=200)
    jac = np.column_stack([col, 2.0 * col + 1e-3 * rng.normal(size=200), np.zeros(200),
                           rng.normal(size=200)])
    r = 0.01 * rng.normal(size=200)
    std, corr = covariance(jac, r, [10] * 20)
    params = tuple(ParameterConfig(key=k, lower=0.0, upper=1.0) for k in
                   ("actuator.time_constant_s", "tendon.friction_coefficient",
                    "tendon.constant_friction_n", "physics.tendon_frictionloss_n"))
    cfg = IdentifyConfig(parameters=params)
    ok, why = judge([p.key for p in params], np.full(4, 0.5), std, corr, np.ones(4), cfg)
    assert ok == (False, False, False, True)
    assert "trades off with tendon.friction_coefficient" in why[0]
    assert "too little excitation" in why[2]


def _simulate(out: Path, *extra: str) -> Path:
    assert cli.main(["simulate", "trajectory", "--config", str(PLANAR), "--out", str(out),
                     *SECRET, *extra]) == 0
    return out / "trajectory" / "osc" / "reach_start" / "bag"


def _identify(bags, folder: Path, out: Path, *extra: str) -> dict:
    """``musculo identify BAGS --config FOLDER --out OUT EXTRA``; the JSON beside ``out``."""
    assert cli.main(["identify", *map(str, bags), "--config", str(folder), "--out", str(out),
                     *extra]) == 0
    return dict(json.loads(out.with_suffix(".json").read_text()))


def _report(overlay: Path, bag: Path, folder: Path, out: Path) -> dict:
    """``musculo identify --report``'s JSON on the held-out ``bag``."""
    assert cli.main(["identify", "--report", "--overlay", str(overlay), str(bag), "--config",
                     str(folder), "--out", str(out)]) == 0
    return dict(json.loads((out / "identify_report.json").read_text()))


def _fitted(doc: dict) -> dict[str, float]:
    return {k: v["fitted"] for k, v in doc["parameters"].items()}


def test_a_recording_reads_the_graphs_topics_as_the_runner_wrote_them(tmp_path):
    bag = _simulate(tmp_path, "--set", "experiments.trajectory.settle_s=0.2",
                    "--set", "experiments.trajectory.hold_s=0.2")
    setup = load_setup(PLANAR, Overrides.parse([]))
    rec = read_recording(bag, setup.robot)
    csv = np.genfromtxt(bag.parent / "signals.csv", delimiter=",", names=True)
    # the runner's own log of the same run (signals.csv), an independent writer
    assert np.allclose(rec.t_s, csv["t_s"], atol=1e-6)
    assert np.allclose(rec.q_rad[:, 1], csv["q_measured_radelbow"], atol=1e-6)
    assert rec.command_n.shape == (len(csv), 6)


def test_identify_recovers_the_lag_and_damping_of_a_robot_without_model_error(tmp_path):
    """The machinery alone: the robot differs from the mock in the fitted parameters only
    (model error off), so the fit must find them."""
    bag = _simulate(tmp_path / "run", "--set", "mock_arm.model_error.enabled=false")
    cfg_text = (PLANAR / "identify.yaml").read_text().replace("max_windows: 40 ",
                                                               "max_windows: 20 ")
    cfg = tmp_path / "identify.yaml"
    cfg.write_text(cfg_text)
    out = tmp_path / "fit.yaml"
    got = _fitted(_identify([bag], PLANAR, out, "--identify-config", str(cfg)))
    assert got["actuator.time_constant_s"] == pytest.approx(0.035, rel=0.1)
    assert got["physics.joint_damping_nm_s_rad"] == pytest.approx(1.5, rel=0.1)
    assert got["physics.joint_frictionloss_nm"] == pytest.approx(1.5, rel=0.2)
    assert got["link_mass_scale[upper_arm]"] == pytest.approx(1.0, abs=0.02)
    assert got["link_mass_scale[forearm]"] == pytest.approx(1.0, abs=0.02)
    assert "time_constant_s: 0.03" in out.read_text()


def test_identify_recovers_the_moment_arm_factors_of_a_robot_without_other_model_error(
        tmp_path):
    """The three muscles that carry the planar arm (its flexors) with moment arms scaled by
    factors the fit is not told (physics.moment_arm_scale, the stand-in for via-point
    errors), lag and friction as above. The masses are not fitted here: scaling every moment
    arm and every mass together moves the arm alike (the prior's test below)."""
    secret = [1.15, 1.0, 0.9, 1.0, 0.85, 1.0]  # deltoid, teres_major, brachialis, ...
    bag = _simulate(tmp_path / "run", "--set", "mock_arm.model_error.enabled=false",
                    "--set", f"mock_arm.physics.moment_arm_scale={secret}")
    text = (PLANAR / "identify.yaml").read_text()
    masses = text[text.index("  - key: link_mass_scale"):text.index("windows:")]
    cfg = tmp_path / "identify.yaml"
    cfg.write_text(_with_moment_arms(text.replace(masses, ""), MOMENT_ARMS
                                     + "    muscles: [deltoid, brachialis, biceps]\n"))
    out = tmp_path / "fit.yaml"
    doc = _identify([bag], PLANAR, out, "--identify-config", str(cfg))
    got = _fitted(doc)
    # measured: 1.150, 0.895, 0.853 (22 s on one core)
    fitted = [got[f"moment_arm_scale[{m}]"] for m in ("deltoid", "brachialis", "biceps")]
    np.testing.assert_allclose(fitted, [1.15, 0.9, 0.85], atol=0.02)
    assert all(v["determined"] for v in doc["parameters"].values())
    assert got["actuator.time_constant_s"] == pytest.approx(0.035, rel=0.1)
    assert "moment_arm_scale: [1.15, 1, 0.89" in out.read_text()


def test_a_prior_holds_what_the_data_cannot_tell_apart_and_the_verdict_says_so(monkeypatch):
    """Two factors the data see only as their product (as every moment arm and every mass
    scaled together): without a prior the fit splits the product between them; with a prior
    on the second it stays at its configured 1 and the first takes the product. Either way
    both are reported as trading off: the verdict is the data's alone."""
    t = np.arange(0.0, 0.5, 0.01)
    target = 1.3 * np.sin(t)  # the product the recording shows

    def predict(mock, recordings, windows, **_):
        return [(np.outer(mock[0] * mock[1] * np.sin(t[w.start + 1:w.stop]), [1.0]),
                 np.zeros((w.stop - w.start - 1, 1))) for w in windows]

    class Family:
        keys = ("a", "b")
        lower, upper = np.array([0.5, 0.5]), np.array([2.0, 2.0])

        def __init__(self, prior):
            self.prior_std = np.array([0.0, prior])

        def configured(self):
            return np.ones(2)

        def build(self, x):
            return np.asarray(x, dtype=float)

    monkeypatch.setattr(identify_fit, "predict", predict)
    rec = Recording("product", t, target[:, None], np.zeros((len(t), 1)),
                    np.zeros((len(t), 1)), t, np.zeros((len(t), 1)))
    windows = [Window(0, k, k + 10) for k in range(0, 40, 5)]
    params = tuple(ParameterConfig(key=k, scale=True, lower=0.5, upper=2.0) for k in
                   ("physics.joint_damping_nm_s_rad", "physics.joint_frictionloss_nm"))
    cfg = IdentifyConfig(parameters=params)
    free = identify_fit.fit(Family(0.0), [rec], windows, cfg)
    held = identify_fit.fit(Family(0.05), [rec], windows, cfg)
    assert free.x.prod() == pytest.approx(1.3, rel=1e-3)
    assert free.x[1] > 1.05  # split between the two
    assert held.x[1] == pytest.approx(1.0, abs=0.01)
    assert held.x[0] == pytest.approx(1.3, rel=0.01)
    for result in (free, held):
        assert result.determined == (False, False)
        assert "trades off with b" in result.reasons[0]


@pytest.mark.slow
def test_identify_on_a_robot_with_secrets_predicts_a_held_out_run_better(tmp_path):
    """A mock with another seed (its own mass and via-point errors), lag and friction changed
    plays the robot; the fit is told none of it. Measured (doc/identify.md): lag 0.0345 s for
    0.035, damping x1.50 for x1.5, dry friction x1.42 for x1.5 (it trades off with the
    forearm's mass, correlation 0.97), link masses upper arm x0.898 for x0.906, forearm x0.984
    for x0.981; on a held-out move the joint-angle error falls 5.3x at 0.1 s, 27x at 0.5 s and
    18x at 1 s, the tension error 3.4x at 1 s."""
    bag = _simulate(tmp_path / "fit")
    held = _simulate(tmp_path / "held", "--set", "experiments.trajectory.move_s=1.2",
                     "--set", "experiments.trajectory.end_m=[0.30,0.0,-0.15]")
    out = tmp_path / "fit.yaml"
    got = _fitted(_identify([bag], PLANAR, out))
    assert got["actuator.time_constant_s"] == pytest.approx(0.035, rel=0.1)
    assert got["physics.joint_damping_nm_s_rad"] == pytest.approx(1.5, rel=0.1)
    assert got["physics.joint_frictionloss_nm"] == pytest.approx(1.5, rel=0.2)
    # the secret robot's own link masses (its seeded model error, x0.906 and x0.981)
    assert got["link_mass_scale[upper_arm]"] == pytest.approx(0.906, abs=0.03)
    assert got["link_mass_scale[forearm]"] == pytest.approx(0.981, abs=0.04)
    assert "link_mass_scale: [1, 0.8" in out.read_text()
    report = tmp_path / "report"
    rep = _report(out, held, PLANAR, report)
    default, ident = rep["default mock"], rep["identified mock"]
    assert rep["default mock"]["horizons_s"] == [0.1, 0.5, 1.0]
    assert default["joint_angle_rad"][0] > 3.0 * ident["joint_angle_rad"][0]
    assert default["joint_angle_rad"][1] > 10.0 * ident["joint_angle_rad"][1]
    assert default["joint_angle_rad"][2] > 8.0 * ident["joint_angle_rad"][2]
    assert default["tension_n"][2] > 2.0 * ident["tension_n"][2]
    assert (report / "identify_report.png").stat().st_size > 10_000
    # the held-out bag's experiment: its metrics as recorded, and both mocks' runs of it
    (run,) = rep["experiment_metrics"]
    assert (run["experiment"], run["start_pose"]) == ("trajectory", "reach_start")
    key = "mean_tracking_error_m"
    recorded, default, ident = (run[k][key] for k in ("recorded", "default mock",
                                                      "identified mock"))
    print("mean tracking error: recorded", recorded, "default", default, "identified", ident)
    assert abs(ident - recorded) < 0.2 * abs(default - recorded)


def test_the_report_table_puts_the_mocks_side_by_side_with_their_ratio():
    h = (0.1, 1.0)
    text = table({"default mock": HorizonErrors(h, (0.02, 0.04), (2.8, 3.2), 10),
                  "identified mock": HorizonErrors(h, (0.01, 0.01), (1.5, 1.4), 10)})
    head, unit, *rows = text.splitlines()
    assert head.split() == ["default", "mock", "identified", "mock", "angle"]
    assert unit.split() == ["horizon", "[s]", "angle", "[deg]", "tension", "[N]", "angle",
                            "[deg]", "tension", "[N]", "ratio"]
    assert rows[1].split() == ["1.00", "2.292", "3.20", "0.573", "1.40", "4.00x"]


#: the stand-in arm's robot with secrets (doc/identify.md): another seed (its own mass and
#: via-point errors), lag 0.03 s for 0.02, capstan mu 0.12 for 0.16, damping and dry friction x1.5
MUSASHI_SECRET = [
    "--seed", "7", "--set", "mock_arm.actuator.time_constant_s=0.03",
    "--set", "mock_arm.tendon.friction_coefficient=0.12",
    "--set", "mock_arm.physics.joint_damping_nm_s_rad=[0.75,0.75,0.45,0.45,0.075,0.075,0.075]",
    "--set", "mock_arm.physics.joint_frictionloss_nm=[0.45,0.45,0.3,0.3,0.075,0.075,0.075]"]


@pytest.mark.slow
def test_identify_on_the_seven_joint_arm_with_secrets_predicts_a_held_out_run_better(tmp_path):
    """The shipped identify.yaml of the stand-in arm (the moment arms one factor per muscle)
    fitted on its three trajectory runs, reported on the 20 s nullspace run. Measured
    (doc/identify.md): lag 0.0332 s, mu 0.122, damping x1.47, dry friction x1.64; joint-angle
    error 2.86x smaller at 0.1 s, 2.56x at 0.5 s, 2.96x at 1 s (1.71x without the moment
    arms); 262 evaluations, about 4 min on one core."""
    for experiment, out in (("trajectory", "fit"), ("nullspace", "held")):
        assert cli.main(["simulate", experiment, "--config", str(MUSASHI), "--out",
                         str(tmp_path / out), *MUSASHI_SECRET]) == 0
    bags = sorted((tmp_path / "fit" / "trajectory" / "osc").glob("*/bag"))
    assert len(bags) == 3
    out = tmp_path / "fit.yaml"
    got = _fitted(_identify(bags, MUSASHI, out))
    assert got["actuator.time_constant_s"] == pytest.approx(0.03, rel=0.15)
    assert got["tendon.friction_coefficient"] == pytest.approx(0.12, rel=0.15)
    assert got["physics.joint_damping_nm_s_rad"] == pytest.approx(1.5, rel=0.15)
    assert got["physics.joint_frictionloss_nm"] == pytest.approx(1.5, rel=0.2)
    assert "moment_arm_scale: [" in out.read_text()
    held = tmp_path / "held" / "nullspace" / "osc" / "bag"
    rep = _report(out, held, MUSASHI, tmp_path / "report")
    assert min(rep["angle_error_ratio"]) >= 2.0, rep["angle_error_ratio"]
    (run,) = rep["experiment_metrics"]  # the nullspace run on both mocks, beside the bag's
    assert {"recorded", "default mock", "identified mock"} <= set(run)
    assert run["recorded"]["activation_norm_start"] == pytest.approx(
        run["identified mock"]["activation_norm_start"], rel=0.25)
