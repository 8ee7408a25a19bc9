"""Stamps and the ordering rule of message streams."""

from __future__ import annotations

import pytest

from musculo_control.errors import InputError
from musculo_control.stamps import Stamp, StampOrder


def test_seconds_and_nanoseconds_round_trip_exactly():
    s = Stamp.from_seconds(1795311712.25)
    assert s == Stamp(1795311712, 250000000)
    assert Stamp.from_nanoseconds(s.nanoseconds) == s
    with pytest.raises(InputError):
        Stamp.from_seconds(float("nan"))


def test_strict_order_refuses_repeats_and_earlier_stamps():
    order = StampOrder("joint_states")
    assert order.check(Stamp(1, 0)) is None
    repeat = order.check(Stamp(1, 0))
    assert repeat is not None and "joint_states" in repeat and "equal" in repeat
    earlier = order.check(Stamp(0, 999_999_999))
    assert earlier is not None and "before" in earlier and "out of order" in earlier
    assert order.check(Stamp(1, 1)) is None
    assert "zero" in order.check(Stamp(0, 0))


def test_goal_order_allows_equal_and_zero_stamps_without_moving_the_reference():
    order = StampOrder("hand_goal", strict=False, allow_zero=True)
    assert order.check(Stamp(5, 0)) is None
    assert order.check(Stamp(5, 0)) is None
    assert order.check(Stamp(0, 0)) is None  # 'now'
    assert order.check(Stamp(4, 0)) is not None  # still compared with 5 s
    order.reset()
    assert order.check(Stamp(4, 0)) is None
