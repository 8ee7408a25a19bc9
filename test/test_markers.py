"""Muscle marker geometry and colours (musculo_control.model.markers)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_poses

from musculo_control.errors import InputError
from musculo_control.model.markers import MusclePathModel, colour_scale, normalised_load


def test_paths_have_the_muscles_lengths(robot):
    """Oracle: the polyline through the drawn via-points is as long as the length model says."""
    model = MusclePathModel(robot)
    for q in random_poses(robot, 10, seed=3):
        paths = model.paths(q)
        assert len(paths) == robot.n_muscles
        drawn = np.array([np.linalg.norm(np.diff(p, axis=0), axis=1).sum() for p in paths])
        np.testing.assert_allclose(drawn, robot.geometry.lengths_at(q), atol=1e-12)


def test_points_on_the_base_do_not_move_and_counts_match_the_file(robot):
    model = MusclePathModel(robot)
    a, b = model.paths(robot.home_pose_rad), model.paths(robot.home_pose_rad + 0.2)
    for spec, pa, pb in zip(robot.muscles_config.muscles, a, b):
        assert pa.shape == (len(spec.path), 3)
        for k, vp in enumerate(spec.path):
            if vp.link == "base_link":
                np.testing.assert_allclose(pa[k], pb[k])


def test_colour_scale_runs_blue_to_red_and_greys_missing_data():
    rgba = colour_scale([0.0, 0.5, 1.0, 3.0, -1.0, np.nan], alpha=0.7)
    assert rgba.shape == (6, 4)
    assert rgba[0, 2] > rgba[0, 0]  # slack: blue
    assert rgba[2, 0] > rgba[2, 2] and rgba[2, 1] < 0.5  # full scale: red
    np.testing.assert_array_equal(rgba[3], rgba[2])  # clipped above
    np.testing.assert_array_equal(rgba[4], rgba[0])  # clipped below
    np.testing.assert_array_equal(rgba[5, :3], [0.5, 0.5, 0.5])
    assert np.all(rgba[:, 3] == 0.7)
    red = colour_scale(np.linspace(0, 1, 11))[:, 0]
    assert np.all(np.diff(red) >= 0.0)


def test_normalised_load():
    np.testing.assert_allclose(normalised_load([5.0, 77.5, 150.0], 5.0, 150.0), [0.0, 0.5, 1.0])
    with pytest.raises(InputError):
        normalised_load([1.0], 5.0, 5.0)
    with pytest.raises(InputError):
        colour_scale([0.5], alpha=2.0)
