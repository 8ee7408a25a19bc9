"""The tendon monitor's window of sent commands against a plain list of them."""

from __future__ import annotations

import math

import numpy as np

from musculo_control.safety.command_window import CommandWindow


def _naive(entries: list[tuple[float, np.ndarray, np.ndarray]], first: int,
           upto: float) -> tuple[np.ndarray, np.ndarray]:
    low, high = entries[first][1].copy(), entries[first][2].copy()
    for stamp, least, most in entries[first + 1:]:
        if stamp > upto:
            break
        low, high = np.minimum(low, least), np.maximum(high, most)
    return low, high


def test_window_bounds_match_a_plain_list_through_growth_and_compaction() -> None:
    rng = np.random.default_rng(7)
    m = 5
    window = CommandWindow(m, capacity=4)  # small: grows and compacts many times
    f0 = rng.uniform(5.0, 50.0, m)
    window.reset(-math.inf, f0)
    entries = [(-math.inf, f0.copy(), f0.copy())]
    first = 0
    t = 0.0
    for _ in range(600):
        t += float(rng.choice([0.002, 0.002, 0.004, 0.0005]))
        least = rng.uniform(0.0, 100.0, m)
        most = least + (rng.uniform(0.0, 20.0, m) if rng.random() < 0.1 else 0.0)
        window.append(t, least, most)
        entries.append((t, least.copy(), most.copy()))
        if rng.random() < 0.7:
            cut = t - float(rng.uniform(0.0, 0.03))
            window.drop_before(cut)
            while first + 1 < len(entries) and entries[first + 1][0] <= cut:
                first += 1
        assert len(window) == len(entries) - first
        upto = t - float(rng.uniform(0.0, 0.02))
        low, high = window.bounds_upto(upto, np.full((2, m), np.nan))
        want_low, want_high = _naive(entries, first, upto)
        np.testing.assert_array_equal(low, want_low)
        np.testing.assert_array_equal(high, want_high)
        np.testing.assert_array_equal(window.newest_most(), entries[-1][2])


def test_first_entry_stays_when_every_command_is_older() -> None:
    window = CommandWindow(2)
    window.reset(-math.inf, np.array([5.0, 5.0]))
    window.append(0.0, np.array([10.0, 1.0]), np.array([10.0, 1.0]))
    window.drop_before(1.0)  # the newest entry is in effect: it becomes the first, and stays
    window.drop_before(2.0)
    assert len(window) == 1
    low, high = window.bounds_upto(-1.0, np.zeros((2, 2)))  # nothing newer: the first entry's
    np.testing.assert_array_equal(low, [10.0, 1.0])
    np.testing.assert_array_equal(high, [10.0, 1.0])
