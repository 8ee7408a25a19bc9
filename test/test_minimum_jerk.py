"""The one minimum-jerk profile (musculo_control.control.minimum_jerk)."""

from __future__ import annotations

import numpy as np
import pytest

from musculo_control.control.minimum_jerk import minimum_jerk, minimum_jerk_profile


def test_profile_ends_and_middle():
    assert minimum_jerk_profile(-1.0, 2.0) == (0.0, 0.0, 0.0)
    assert minimum_jerk_profile(3.0, 2.0) == (1.0, 0.0, 0.0)
    s, ds, _ = minimum_jerk_profile(1.0, 2.0)
    assert s == pytest.approx(0.5) and ds == pytest.approx(15 / 16)  # (30/4 - 60/8 + 30/16) / 2 s


def test_move_boundaries():
    a, b = np.zeros(3), np.array([0.2, 0.0, 0.0])
    p0, v0, acc0 = minimum_jerk(a, b, 2.0, 0.0)
    p1, v1, acc1 = minimum_jerk(a, b, 2.0, 2.0)
    pm, vm, _ = minimum_jerk(a, b, 2.0, 1.0)
    assert np.array_equal(p0, a) and np.array_equal(p1, b)
    assert not np.any(v0) and not np.any(v1) and not np.any(acc0) and not np.any(acc1)
    assert np.allclose(pm, 0.5 * b) and vm[0] == pytest.approx(1.875 * 0.2 / 2.0)


@pytest.mark.parametrize("t_s", [0.13, 0.5, 0.97, 1.4, 1.9])
def test_derivatives_match_finite_differences(t_s):
    a, b, T, h = np.array([0.1, -0.2, 0.3]), np.array([0.3, 0.1, 0.25]), 2.0, 1e-5
    pos, vel, acc = minimum_jerk(a, b, T, t_s)
    pos_p, vel_p, _ = minimum_jerk(a, b, T, t_s + h)
    pos_m, vel_m, _ = minimum_jerk(a, b, T, t_s - h)
    assert np.allclose((pos_p - pos_m) / (2 * h), vel, atol=1e-8)
    assert np.allclose((vel_p - vel_m) / (2 * h), acc, atol=1e-6)
    # the scalar profile is the same move's fraction
    s, ds, dds = minimum_jerk_profile(t_s, T)
    assert np.allclose(a + s * (b - a), pos) and np.allclose(ds * (b - a), vel)
    assert np.allclose(dds * (b - a), acc)
