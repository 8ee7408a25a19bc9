"""The learned mapping where a route bends sharply: segment terms sqrt(P) (learned_mapping.py).

Oracle independent of the fit: a straight segment whose end on the forearm passes 2 mm from its
other end, so its length has a near-kink and its moment arm turns from -4 to +4 cm/rad within
~0.1 rad; its exact moment arm is the analytic derivative of the distance. The model file keeps
reading files of the format before segment terms.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from test_learned_mapping import PLANAR, inside_poses, synthetic_recording

from musculo_control.errors import InputError
from musculo_control.model.learned_mapping import load_mapping, save_mapping
from musculo_control.model.mapping_fit import FitConfig, fit_mapping
from musculo_control.model.robot import load_robot

RADIUS_M, GAP_M, CLOSEST_RAD = 0.04, 0.002, 1.6  # the forearm point's circle, closest approach


def segment(elbow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Length [m] and exact derivative [m/rad] of the distance from a point on a circle of
    radius RADIUS_M about the elbow (turning with it) to a point GAP_M outside that circle at
    the angle CLOSEST_RAD (fixed to the upper arm)."""
    b = RADIUS_M * np.stack([np.cos(elbow), np.sin(elbow)], axis=-1)
    a = (RADIUS_M + GAP_M) * np.array([np.cos(CLOSEST_RAD), np.sin(CLOSEST_RAD)])
    d = b - a
    length = np.linalg.norm(d, axis=-1)
    db = RADIUS_M * np.stack([-np.sin(elbow), np.cos(elbow)], axis=-1)
    return length, (d * db).sum(axis=-1) / length


def shoulder_part(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return 0.1 + 0.02 * np.sin(1.3 * q[:, 0]), 0.026 * np.cos(1.3 * q[:, 0])


@pytest.fixture(scope="module")
def kinked():
    """Muscle 0 of the planar arm replaced by shoulder part + the kinked segment; fitted with
    and without segment terms."""
    robot = load_robot(PLANAR)
    rec = synthetic_recording(robot, samples=1500, sessions=2)
    q = rec.truth_q_rad
    lengths = rec.length_m.copy()
    noise = 2e-5 * np.random.default_rng(1).standard_normal(q.shape[0])
    lengths[:, 0] = (shoulder_part(q)[0] + segment(q[:, 1])[0]
                     + np.array([0.0, 0.0042])[rec.session] + noise)
    rec = dataclasses.replace(rec, length_m=lengths)
    names = {"joint_names": robot.arm.joint_names, "muscle_names": robot.muscle_names}
    return (rec, fit_mapping(rec, FitConfig(), **names),
            fit_mapping(rec, FitConfig(segment_degrees=()), **names))


def _arm_errors(mapping, count: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """(P, 2) learned minus exact dl0/dq at random poses inside the box, and the poses."""
    q = inside_poses(mapping, count, seed=5)
    exact = np.column_stack([shoulder_part(q)[1], segment(q[:, 1])[1]])
    learned = np.array([mapping.evaluate(x)[1][0] for x in q])
    return learned - exact, q


def test_the_kink_is_in_the_recorded_box(kinked):
    rec = kinked[0]
    assert rec.q_rad[:, 1].min() < CLOSEST_RAD - 0.3 and rec.q_rad[:, 1].max() > CLOSEST_RAD + 0.3


def test_moment_arms_hold_where_the_route_bends_sharply(kinked):
    """With a segment term the moment arms follow the exact -4..+4 cm/rad swing within 1 mm/rad
    everywhere; the polynomial alone (the oracle's check that the case is hard) misses by far
    more."""
    _, (mapping, fits), (poly, _) = kinked
    err, q = _arm_errors(mapping)
    assert fits[0].segment_joints == ("elbow",)
    assert np.abs(err).max() < 1.0e-3, np.abs(err).max()
    assert np.sqrt(np.mean(err**2)) < 0.2e-3
    near = np.abs(q[:, 1] - CLOSEST_RAD) < 0.1  # the bend itself
    assert near.sum() > 20 and np.abs(err[near]).max() < 1.0e-3
    poly_err, _ = _arm_errors(poly)
    assert np.abs(poly_err).max() > 10.0e-3
    assert fits[0].validation_rms_m < 0.2 * fits[0].polynomial_validation_rms_m


def test_jacobian_with_segment_terms_is_the_exact_derivative(kinked):
    mapping = kinked[1][0]
    assert 0 in mapping.segment_rows
    h = 1e-7
    q_all = inside_poses(mapping, 30, seed=7)
    q_all[:5, 1] = CLOSEST_RAD + np.linspace(-0.02, 0.02, 5)  # at the bend
    for q in q_all:
        _, jac = mapping.evaluate(q)
        for j in range(len(q)):
            dq = np.zeros_like(q)
            dq[j] = h
            fd = (mapping.evaluate(q + dq)[0] - mapping.evaluate(q - dq)[0]) / (2 * h)
            np.testing.assert_allclose(jac[:, j], fd, atol=1e-7)
    lengths = np.array([mapping.evaluate(q)[0] for q in q_all])
    np.testing.assert_allclose(mapping.lengths_batch(q_all), lengths, atol=1e-12)


def test_model_file_with_segments_round_trips_and_v1_files_still_load(tmp_path, kinked):
    _, (mapping, _), (poly, _) = kinked
    back = load_mapping(save_mapping(mapping, tmp_path / "m.npz"))
    q = inside_poses(mapping, 3, seed=9)
    for x in q:
        for a, b in zip(mapping.evaluate(x), back.evaluate(x)):
            np.testing.assert_array_equal(a, b)
    assert back.meta["fit"]["muscles"][mapping.muscle_names[0]]["segment_joints"] == ["elbow"]
    # a file of the format before segment terms: no segment_coefficients array
    path = save_mapping(poly, tmp_path / "old.npz")
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files if k != "segment_coefficients"}
    meta = json.loads(str(arrays.pop("meta")))
    meta["format"] = "musculo_learned_mapping_v1"
    np.savez(tmp_path / "v1.npz", meta=np.array(json.dumps(meta)), **arrays)
    old = load_mapping(tmp_path / "v1.npz")
    assert old.segment_rows.size == 0
    for x in q:
        for a, b in zip(poly.evaluate(x), old.evaluate(x)):
            np.testing.assert_array_equal(a, b)
    # a v2 file must have them; an unknown format is named
    np.savez(tmp_path / "v2.npz", meta=np.array(json.dumps({**meta, "format":
                                                            "musculo_learned_mapping_v2"})),
             **arrays)
    with pytest.raises(InputError, match="v2.npz.*segment_coefficients"):
        load_mapping(tmp_path / "v2.npz")
    np.savez(tmp_path / "v9.npz", meta=np.array(json.dumps({**meta, "format": "mapping_v9"})),
             **arrays)
    with pytest.raises(InputError, match="v9.npz: meta.format.*musculo_learned_mapping_v1 or "
                                         "musculo_learned_mapping_v2"):
        load_mapping(tmp_path / "v9.npz")


def test_a_segment_degree_below_two_is_a_config_error():
    from musculo_control.errors import ConfigError

    with pytest.raises(ConfigError, match=r"fit\.segment_degrees\[1\]"):
        FitConfig(segment_degrees=(4, 1)).check("mapping.yaml", "fit")


def test_the_polynomials_degree_is_chosen_beside_the_segment_term():
    """A shoulder part that needs a high degree (0.01 sin(5 q) over 2.3 rad) beside the kink:
    the polynomial alone errs by ~0.5 mm at every degree (the bend), which hid the degree the
    smooth part needs, and the fewest terms won (held-out 0.15 mm, the shoulder's moment arms
    1.6 mm/rad RMS off). Chosen again beside the segment term, the degree fits both: held-out
    near the noise and the shoulder's moment arms within 0.5 mm/rad RMS."""
    robot = load_robot(PLANAR)
    rec = synthetic_recording(robot, samples=1500, sessions=2)
    q = rec.truth_q_rad
    w = 5.0  # [1/rad]

    def shoulder(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return 0.1 + 0.01 * np.sin(w * x[:, 0]), 0.01 * w * np.cos(w * x[:, 0])

    lengths = rec.length_m.copy()
    noise = 2e-5 * np.random.default_rng(1).standard_normal(q.shape[0])
    lengths[:, 0] = (shoulder(q)[0] + segment(q[:, 1])[0] + np.array([0.0, 0.0042])[rec.session]
                     + noise)
    rec = dataclasses.replace(rec, length_m=lengths)
    mapping, fits = fit_mapping(rec, FitConfig(), joint_names=robot.arm.joint_names,
                                muscle_names=robot.muscle_names)
    assert fits[0].segment_joints == ("elbow",)
    assert fits[0].validation_rms_m < 5e-5, fits[0]
    poses = inside_poses(mapping, 1000, seed=5)
    learned = np.array([mapping.evaluate(x)[1][0] for x in poses])
    err = learned[:, 0] - shoulder(poses)[1]
    assert np.sqrt(np.mean(err**2)) < 0.5e-3, np.sqrt(np.mean(err**2))
