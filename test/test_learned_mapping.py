"""The learned joint-muscle mapping (issue 14): fit, model file, geometry backend, bad input.

Oracles independent of the fit: MuJoCo's own tendon lengths and moment arms (``ten_length``,
``ten_J``) of the planar arm's MJCF, finite differences of the fitted l(q), the offsets the
synthetic recording was built with.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from musculo_control.cli import main
from musculo_control.errors import ConfigError, InputError
from musculo_control.model.learned_mapping import (
    LearnedGeometry,
    MuscleGeometryConfig,
    RecordedRangeWarning,
    load_mapping,
    save_mapping,
)
from musculo_control.model.mapping_fit import FitConfig, fit_mapping
from musculo_control.model.mapping_recording import Recording, load_recording, save_recording
from musculo_control.model.markers import MusclePathModel
from musculo_control.model.robot import load_robot
from musculo_control.paths import config_root

PLANAR = config_root() / "planar_arm"
OFFSETS_M = (0.0, 0.0042)  # encoder offsets of the two sessions (the first is the frame)


@pytest.fixture(scope="module")
def planar():
    return load_robot(PLANAR)


def synthetic_recording(robot, *, samples: int = 1500, seed: int = 0, noise_m: float = 2e-5,
                        sessions: int = 2) -> Recording:
    """A slow random walk through the joint box, lengths from MuJoCo's tendons (the truth),
    pot-like quantisation of q, encoder noise, one offset per session."""
    rng = np.random.default_rng(seed)
    lo, hi = robot.arm.lower_rad, robot.arm.upper_rad
    n, m = robot.arm.n_joints, robot.n_muscles
    targets = lo + (hi - lo) * rng.random((samples // 25 + 2, n))
    t_knots = np.arange(len(targets)) * 1.0
    t = np.arange(samples) * 0.04
    q = np.column_stack([np.interp(t, t_knots, targets[:, j]) for j in range(n)])
    lengths = np.array([robot.geometry.lengths_at(x) for x in q])
    session = np.minimum(np.arange(samples) * sessions // samples, sessions - 1)
    offset = np.array(OFFSETS_M)[session][:, None]
    measured = lengths + offset + noise_m * rng.standard_normal((samples, m))
    q_measured = np.round(q * 651.9) / 651.9  # a 12-bit pot's quantisation
    return Recording(stamp_s=t + 10.0, q_rad=q_measured, length_stamp_s=t + 10.0,
                     length_m=measured, tension_n=np.full((samples, m), 20.0),
                     session=session.astype(np.int64), joint_names=robot.arm.joint_names,
                     muscle_names=robot.muscle_names, config_dir=str(PLANAR),
                     source="synthetic", path="synthetic.npz", truth_q_rad=q)


@pytest.fixture(scope="module")
def fitted(planar):
    rec = synthetic_recording(planar)
    return rec, *fit_mapping(rec, FitConfig(), joint_names=planar.arm.joint_names,
                             muscle_names=planar.muscle_names)


def inside_poses(mapping, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lo, hi = mapping.lower_rad, mapping.upper_rad
    return lo + (hi - lo) * (0.05 + 0.9 * rng.random((count, len(lo))))


def test_fit_matches_mujoco_lengths_and_moment_arms(planar, fitted):
    rec, mapping, fits = fitted
    poses = inside_poses(mapping, 200, seed=3)
    dl, dj = [], []
    for q in poses:
        truth = planar.geometry.kinematics_at(q)  # MuJoCo's ten_length, ten_J
        length, jac = mapping.evaluate(q)
        dl.append(length - truth.length_m)
        dj.append(jac - truth.jacobian)
    dl, dj = np.array(dl), np.array(dj)
    print(f"l rms {1e3 * np.sqrt(np.mean(dl**2)):.4f} max {1e3 * np.abs(dl).max():.4f} mm; "
          f"Jm rms {1e3 * np.sqrt(np.mean(dj**2)):.4f} max {1e3 * np.abs(dj).max():.4f} mm/rad")
    # the extensors wrap over cylinders: where the wrap starts l(q) has a kink no smooth
    # function follows exactly, hence the looser maxima
    assert np.sqrt(np.mean(dl**2)) < 5e-5 and np.abs(dl).max() < 5e-4  # [m]
    assert np.sqrt(np.mean(dj**2)) < 1e-3 and np.abs(dj).max() < 1e-2  # [m/rad]; arms 1-5 cm
    # every muscle's joints found from the data: all six span what MuJoCo says they span
    spans = np.array([np.abs(planar.geometry.kinematics_at(q).jacobian).max(axis=0)
                      for q in poses]).max(axis=0) > 1e-3
    for i, f in enumerate(fits):
        expected = {planar.arm.joint_names[j] for j in range(planar.arm.n_joints)
                    if abs(planar.geometry.kinematics_at(poses[0]).jacobian[i, j]) > 1e-3}
        assert expected <= set(f.joints), (planar.muscle_names[i], f.joints)
    assert spans.all()


def test_encoder_offsets_are_unknowns_the_fit_recovers(fitted):
    _, mapping, _ = fitted
    assert mapping.session_offset_m.shape == (2, 6)
    np.testing.assert_allclose(mapping.session_offset_m[1], OFFSETS_M[1], atol=5e-5)


def _errors(robot, mapping, poses):
    """RMS length and moment-arm errors against MuJoCo's tendons at ``poses`` [m, m/rad]."""
    dl, dj = [], []
    for q in poses:
        truth = robot.geometry.kinematics_at(q)
        length, jac = mapping.evaluate(q)
        dl.append(length - truth.length_m)
        dj.append(jac - truth.jacobian)
    return float(np.sqrt(np.mean(np.square(dl)))), float(np.sqrt(np.mean(np.square(dj))))


def test_an_elastic_wires_stretch_is_fitted_and_left_out_of_the_lengths(planar):
    """Encoders that see the path less the stretch c T of an elastic wire, the tension varying
    with the pose (as a controller's does) and on its own: the fit finds each muscle's c and
    learns the path; left in, the stretch bends the learned lengths and moment arms."""
    rec = synthetic_recording(planar, samples=3000, seed=5)
    rng = np.random.default_rng(6)
    m = planar.n_muscles
    knots = np.arange(0, rec.stamp_s.size + 50, 50)
    wander = np.column_stack([np.interp(np.arange(rec.stamp_s.size), knots,
                                        rng.uniform(-1.0, 1.0, knots.size)) for _ in range(m)])
    tension = 150.0 + 80.0 * np.sin(rec.truth_q_rad @ rng.uniform(-1.5, 1.5, (2, m))) \
        + 50.0 * wander  # [N]
    compliance = np.linspace(3e-6, 6e-6, m)  # EA 1.2e5 N over 0.36-0.72 m of wire [m/N]
    stretched = dataclasses.replace(rec, length_m=rec.length_m - tension * compliance,
                                    tension_n=tension)
    names = {"joint_names": planar.arm.joint_names, "muscle_names": planar.muscle_names}
    mapping, fits = fit_mapping(stretched, FitConfig(), **names)
    found = np.array([f.compliance_m_per_n for f in fits])
    np.testing.assert_allclose(-found, compliance, rtol=0.05)  # paid out: the path less it
    blind, _ = fit_mapping(stretched, FitConfig(wire_compliance=False), **names)
    poses = inside_poses(mapping, 200, seed=7)
    (l_rms, j_rms), (l_blind, j_blind) = _errors(planar, mapping, poses), \
        _errors(planar, blind, poses)
    print(f"with the stretch fitted: l {1e3 * l_rms:.4f} mm, Jm {1e3 * j_rms:.4f} mm/rad; "
          f"left in: l {1e3 * l_blind:.4f} mm, Jm {1e3 * j_blind:.4f} mm/rad")
    assert l_rms < 5e-5 and j_rms < 1e-3  # as good as without a stretch (test above)
    assert l_blind > 3 * l_rms and j_blind > 2 * j_rms


def test_jacobian_is_the_exact_derivative_of_the_fitted_lengths(fitted):
    _, mapping, _ = fitted
    h = 1e-6
    for q in inside_poses(mapping, 20, seed=5):
        _, jac = mapping.evaluate(q)
        for j in range(len(q)):
            dq = np.zeros_like(q)
            dq[j] = h
            fd = (mapping.evaluate(q + dq)[0] - mapping.evaluate(q - dq)[0]) / (2 * h)
            np.testing.assert_allclose(jac[:, j], fd, atol=1e-8)


def test_lmin_lmax_come_from_the_recording(fitted):
    rec, mapping, _ = fitted
    fitted_lengths = mapping.lengths_batch(rec.q_rad)
    np.testing.assert_allclose(mapping.l_min_m, fitted_lengths.min(axis=0))
    np.testing.assert_allclose(mapping.l_max_m, fitted_lengths.max(axis=0))
    np.testing.assert_allclose(mapping.lower_rad, rec.q_rad.min(axis=0))


def test_model_file_round_trip_records_what_the_issue_asks(tmp_path, fitted):
    _, mapping, _ = fitted
    path = save_mapping(mapping, tmp_path / "m.npz")
    back = load_mapping(path)
    q = inside_poses(mapping, 1, seed=9)[0]
    for a, b in zip(mapping.evaluate(q), back.evaluate(q)):
        np.testing.assert_array_equal(a, b)
    meta = back.meta
    assert set(meta["provenance"]["packages"]) >= {"numpy", "scipy"}
    assert meta["provenance"]["python"]
    muscle = meta["fit"]["muscles"][mapping.muscle_names[0]]
    assert {"rms_m", "max_m", "validation_rms_m", "degree", "joints"} <= set(muscle)
    assert meta["recording"]["path"] == "synthetic.npz"
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]  # no temporary left


def test_failed_write_leaves_the_old_file_whole(tmp_path, fitted, monkeypatch):
    _, mapping, _ = fitted
    path = save_mapping(mapping, tmp_path / "m.npz")
    before = path.read_bytes()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(OSError):
        save_mapping(mapping, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]


# -- the geometry backend -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model_file(tmp_path_factory, fitted):
    return save_mapping(fitted[1], tmp_path_factory.mktemp("model") / "planar_mapping.npz")


def test_config_key_selects_the_learned_mapping(planar, model_file):
    robot = load_robot(PLANAR, {"muscle_geometry.learned_model": str(model_file)})
    assert isinstance(robot.geometry, LearnedGeometry)
    assert robot.learned is robot.geometry
    mapping = robot.learned.mapping
    np.testing.assert_array_equal(robot.l_min_m, mapping.l_min_m)
    np.testing.assert_array_equal(robot.l_max_m, mapping.l_max_m)
    assert set(robot.range_source) == {"recording"}
    q = robot.home_pose_rad
    assert np.array_equal(robot.geometry.kinematics_at(q).jacobian, mapping.evaluate(q)[1])
    # the dynamics snapshot (the dynamics node's and the QP's Jm and l) is the learned one
    from musculo_control.config.parser import load
    from musculo_control.estimation.snapshot import DynamicsEstimator
    from musculo_control.model.task import TaskConfig

    task = load(TaskConfig, PLANAR / "controller.yaml", "task")
    snap = DynamicsEstimator(robot, task).compute(q, np.zeros_like(q), 0.0)
    np.testing.assert_allclose(snap.muscle_jacobian, mapping.evaluate(q)[1], atol=1e-15)
    np.testing.assert_allclose(snap.muscle_length_m, mapping.evaluate(q)[0], atol=1e-15)
    # the markers draw the description's routes (a learned l(q) has none)
    paths = MusclePathModel(robot).paths(q)
    for a, b in zip(paths, planar.geometry.paths_at(q)):
        np.testing.assert_array_equal(a, b)
    # the mock keeps its own geometry: the peak forces of the MJCF's muscle actuators stay
    np.testing.assert_array_equal(robot.f1_n, planar.f1_n)


def test_a_mapping_of_another_robot_is_refused(tmp_path, fitted):
    _, mapping, _ = fitted
    other = dataclasses.replace(mapping, muscle_names=tuple(f"x{i}" for i in range(6)))
    path = save_mapping(other, tmp_path / "other.npz")
    with pytest.raises(ConfigError, match="muscle_geometry.learned_model.*x0"):
        load_robot(PLANAR, {"muscle_geometry.learned_model": str(path)})


def test_outside_the_recorded_box_warns_then_refuses(fitted):
    _, mapping, _ = fitted
    cfg = MuscleGeometryConfig(outside_tolerance_rad=0.05, refuse_beyond_rad=0.3)
    geo = LearnedGeometry(mapping, cfg)
    edge = mapping.upper_rad.copy()
    inside = geo.kinematics_at(edge)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        near = geo.kinematics_at(edge + np.array([0.03, 0.0]))  # within the tolerance: silent
    # first-order continuation from the edge, never the polynomial itself
    np.testing.assert_allclose(near.length_m, inside.length_m + inside.jacobian @ [0.03, 0.0])
    np.testing.assert_array_equal(near.jacobian, inside.jacobian)
    with pytest.warns(RecordedRangeWarning, match="outside the joint box"):
        geo.kinematics_at(edge + np.array([0.1, 0.0]))
    assert geo.excursions == 1
    found = geo.excursion(edge + np.array([0.1, 0.0]))
    assert found is not None and found.distance_rad == pytest.approx(0.1)
    assert geo.excursion(edge) is None
    with pytest.raises(InputError, match="refuse_beyond_rad"):
        geo.kinematics_at(edge + np.array([0.5, 0.0]))


# -- bad input ------------------------------------------------------------------------------------
def _bad(rec: Recording, **changes) -> Recording:
    return dataclasses.replace(rec, **changes)


@pytest.mark.parametrize("case, pattern", [
    ("few_poses", "q_rad: expected at least 50 distinct poses"),
    ("still_joint", r"q_rad\[elbow\]: expected joint 'elbow' moving"),
    ("still_muscle", r"length_m\[biceps\] \(session 0\): expected the length of muscle"),
    ("nan", r"length_m of \['deltoid'\]: expected finite values.*index 7"),
    ("stamps", "stamp_s .session 0.: expected stamps that rise.*index 11"),
    ("names", r"muscle_names: expected the robot's \['deltoid'"),
])
def test_bad_recordings_are_refused_naming_recording_and_signal(planar, case, pattern):
    rec = synthetic_recording(planar, samples=400, sessions=1)
    q, length, stamps = rec.q_rad.copy(), rec.length_m.copy(), rec.stamp_s.copy()
    if case == "few_poses":
        rec = _bad(rec, q_rad=np.repeat(q[:20:4], 80, axis=0)[:400])
    elif case == "still_joint":
        q[:, 1] = 0.5
        rec = _bad(rec, q_rad=q)
    elif case == "still_muscle":
        length[:, planar.muscle_names.index("biceps")] = 0.3
        rec = _bad(rec, length_m=length)
    elif case == "nan":
        length[7, 0] = np.nan
        rec = _bad(rec, length_m=length)
    elif case == "stamps":
        stamps[11] = stamps[9]
        rec = _bad(rec, stamp_s=stamps)
    elif case == "names":
        rec = _bad(rec, muscle_names=tuple(reversed(rec.muscle_names)))
    with pytest.raises(InputError, match=pattern) as info:
        fit_mapping(rec, FitConfig(), joint_names=planar.arm.joint_names,
                    muscle_names=planar.muscle_names)
    assert "recording synthetic.npz" in str(info.value)


def test_learn_mapping_refuses_a_bad_recording_and_writes_nothing(tmp_path, planar, capsys):
    rec = synthetic_recording(planar, samples=400, sessions=1)
    length = rec.length_m.copy()
    length[:, 2] = 0.2
    path = save_recording(dataclasses.replace(rec, length_m=length), tmp_path / "rec.npz")
    out = tmp_path / "model.npz"
    assert main(["learn-mapping", str(path), "--out", str(out), "--config", str(PLANAR)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "length_m[" in err and "expected" in err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.npz"]


def test_recording_file_round_trip_and_format_errors(tmp_path, planar):
    rec = synthetic_recording(planar, samples=100, sessions=1)
    path = save_recording(rec, tmp_path / "rec.npz")
    back = load_recording(path)
    np.testing.assert_array_equal(back.q_rad, rec.q_rad)
    np.testing.assert_array_equal(back.truth_q_rad, rec.truth_q_rad)
    assert back.muscle_names == rec.muscle_names and back.source == "synthetic"
    other = tmp_path / "other.npz"
    np.savez(other, x=np.zeros(3))
    with pytest.raises(InputError, match="other.npz.*'meta'"):
        load_recording(other)
    with pytest.raises(InputError, match="no such file"):
        load_recording(tmp_path / "missing.npz")


def test_learn_mapping_command_end_to_end(tmp_path, planar, capsys):
    rec = synthetic_recording(planar, samples=800)
    path = save_recording(rec, tmp_path / "rec.npz")
    out = tmp_path / "model.npz"
    assert main(["learn-mapping", str(path), "--out", str(out), "--config", str(PLANAR),
                 "--set", "mapping.fit.degrees=[2,3,4,5]"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert load_mapping(out).degree <= 5


def test_record_on_the_mock_through_the_loop(tmp_path, planar):
    """A short recording of the planar arm: the mock's own sensors, stamps rising, inside the
    limits, the calibration pose among the recorded poses."""
    from musculo_control.sim.mapping_recorder import load_mapping_config, record_on_mock
    from musculo_control.sim.setup import Overrides, load_setup

    setup = load_setup(PLANAR, Overrides.parse([]))
    cfg = dataclasses.replace(load_mapping_config(PLANAR).record, targets=4, dwell_s=0.2,
                              start_hold_s=0.3, speed_rad_s=1.5, max_tension_n=50.0)
    rec = record_on_mock(setup, cfg, progress=False)
    rec.check()
    assert rec.n_samples > 50
    assert np.all(np.diff(rec.stamp_s) > 0)
    lo, hi = planar.arm.lower_rad, planar.arm.upper_rad
    assert np.all(rec.truth_q_rad >= lo - 0.05) and np.all(rec.truth_q_rad <= hi + 0.05)
    # measured angles are the pots' (noise and quantisation), not the truth
    assert 0 < np.abs(rec.q_rad - rec.truth_q_rad).max() < 0.01
    # encoder lengths follow MuJoCo's (mock's own, erroneous) geometry up to a constant offset
    cal = np.array([0.0, 0.1])
    assert np.abs(rec.q_rad - cal).max(axis=1).min() < 0.05
    # the cap binds (uncapped, the deltoid pulls ~95 N here); load-cell noise aside
    assert 45.0 < rec.tension_n.max() < 50.0 + 1.0
    path = save_recording(rec, tmp_path / "rec.npz")
    assert load_recording(path).meta["mock_seed"] == setup.mock_config.seed


def test_additive_groups_are_found_where_joints_do_not_interact(planar):
    """l0 = f(shoulder) + g(elbow) splits into two groups; l1 = h(shoulder + elbow) does not."""
    rec = synthetic_recording(planar, samples=1500, sessions=1)
    q = rec.q_rad
    lengths = rec.length_m.copy()
    lengths[:, 0] = 0.1 + 0.02 * np.sin(1.3 * q[:, 0]) + 0.01 * np.cos(2.0 * q[:, 1])
    lengths[:, 1] = 0.2 + 0.02 * np.sin(q[:, 0] + q[:, 1])
    rec = dataclasses.replace(rec, length_m=lengths)
    _, fits = fit_mapping(rec, FitConfig(), joint_names=planar.arm.joint_names,
                          muscle_names=planar.muscle_names)
    assert fits[0].groups == (("shoulder",), ("elbow",))
    assert fits[1].groups == (("shoulder", "elbow"),)


def test_the_dynamics_stage_refuses_a_pose_far_outside_the_recording(model_file):
    """Beyond refuse_beyond_rad no snapshot goes out (the supervisor then holds minimum
    tension for a stale snapshot), and the stage's health says why."""
    from musculo_control.hardware.potentiometer import PotentiometerReading
    from musculo_control.loop import build
    from musculo_control.loop.parts import load_parts

    robot = load_robot(PLANAR, {"muscle_geometry.learned_model": str(model_file)})
    stage = build.dynamics_stage(load_parts(PLANAR, robot=robot))
    box_top = robot.learned.upper_rad
    inside = PotentiometerReading(1.0, robot.home_pose_rad.copy(), np.zeros(2), ())
    stage.receive_joints(inside)
    assert stage.tick(1.001) is not None
    far = robot.home_pose_rad.copy()
    far[1] = box_top[1] + 0.4  # the elbow 0.4 rad beyond what was recorded
    stage.receive_joints(PotentiometerReading(1.01, far, np.zeros(2), ()))
    assert stage.tick(1.011) is None
    assert "snapshot not computed" in stage.health.message
    assert "outside the joint box" in stage.health.message
