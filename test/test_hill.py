"""Hill force-length curves at their defining points (paper eq. 3-4, SPEC section 3)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from musculo_control.model.hill import HillParams, active_force, passive_force, tension

P = HillParams()
LO = np.array([0.20])
LR = np.array([0.08])


def fa(length):
    return float(active_force(np.array([length]), LO, LR, P)[0])


def fp(length):
    return float(passive_force(np.array([length]), LO, LR, P)[0])


def test_active_peak_at_optimal_length():
    assert fa(0.20) == P.f1_n


def test_active_zero_at_and_beyond_edges():
    edge = 0.75 * 0.08
    assert abs(fa(0.20 + edge)) < 1e-9
    assert abs(fa(0.20 - edge)) < 1e-9
    assert fa(0.20 + edge + 1e-3) == 0.0
    assert fa(0.20 - edge - 1e-3) == 0.0


def test_active_at_range_ends_is_quarter_of_peak():
    # |l - l_o| = l_range/2 -> cos(2 pi / 3) = -1/2 -> f1/4
    assert np.isclose(fa(0.24), P.f1_n / 4)
    assert np.isclose(fa(0.16), P.f1_n / 4)


def test_passive_below_and_above_optimum():
    assert fp(0.15) == P.f_min_n
    assert fp(0.20) == P.f_min_n
    assert np.isclose(fp(0.24), P.f2_n + P.f_min_n)  # at l_max


@given(st.floats(0.0, 1.0), st.floats(0.0, 50.0))
def test_tension_never_below_f_min(length, activation):
    from musculo_control.model.hill import MuscleForces

    forces = MuscleForces(active_force(np.array([length]), LO, LR, P),
                          passive_force(np.array([length]), LO, LR, P))
    assert tension(np.array([activation]), forces)[0] >= P.f_min_n


@given(st.lists(st.floats(0.05, 0.35), min_size=1, max_size=20))
def test_curves_equal_the_papers_formulas_written_out(lengths):
    """The clamped evaluation (ForceLengthCurves) against eq. 3-4 as the SPEC writes them."""
    from musculo_control.model.hill import ForceLengthCurves

    rng = np.random.default_rng(len(lengths))
    l = np.array(lengths)
    lo = rng.uniform(0.15, 0.25, l.size)
    lr = rng.uniform(0.02, 0.1, l.size)
    forces = ForceLengthCurves(lo, lr, P)(l)
    dl = l - lo
    inside = np.abs(dl) <= 0.75 * lr
    fa_ref = np.where(inside, P.f1_n / 2 * (1 + np.cos(2 * np.pi * dl / (1.5 * lr))), 0.0)
    fp_ref = np.where(l < lo, P.f_min_n, P.f2_n * ((l - lo) / (lr / 2)) ** 2 + P.f_min_n)
    assert np.allclose(forces.active_n, fa_ref, rtol=1e-12, atol=1e-9)
    assert np.allclose(forces.passive_n, fp_ref, rtol=1e-12, atol=0.0)
