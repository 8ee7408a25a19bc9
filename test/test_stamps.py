"""Stamps and the ordering rule of message streams (musculo_control.streams)."""

from __future__ import annotations

import math

import pytest

from musculo_control.errors import InputError
from musculo_control.stamps import Stamp
from musculo_control.streams import Latest, StampOrder


def test_seconds_and_nanoseconds_round_trip_exactly():
    s = Stamp.from_seconds(1795311712.25)
    assert s == Stamp(1795311712, 250000000)
    assert Stamp.from_nanoseconds(s.nanoseconds) == s
    with pytest.raises(InputError):
        Stamp.from_seconds(float("nan"))


def test_strict_order_refuses_repeats_earlier_zero_and_nan_stamps():
    order = StampOrder("joint_states")
    assert order.check(1.0) is None
    repeat = order.check(1.0)
    assert repeat is not None and "joint_states" in repeat and "equal" in repeat
    earlier = order.check(0.999999999)
    assert earlier is not None and "before" in earlier and "out of order" in earlier
    assert order.check(1.000001) is None
    assert "zero" in order.check(0.0)
    assert "finite" in order.check(math.nan)


def test_goal_order_allows_equal_and_zero_stamps_without_moving_the_reference():
    order = StampOrder("hand_goal", strict=False, allow_zero=True)
    assert order.check(5.0) is None
    assert order.check(5.0) is None
    assert order.check(0.0) is None  # 'now'
    assert order.check(4.0) is not None  # still compared with 5 s
    order.reset()
    assert order.check(4.0) is None


def test_ros_stamps_near_today_keep_their_order_as_float_seconds():
    a = Stamp(1795311712, 999_000_000).seconds
    b = Stamp(1795311713, 0).seconds  # 1 ms later
    order = StampOrder("x")
    assert order.check(a) is None and order.check(b) is None


def test_latest_keeps_the_newest_in_order_value_and_its_age():
    stream: Latest[str] = Latest("dynamics")
    assert stream.value is None and stream.age_s(1.0) == math.inf
    assert stream.offer(1.0, "a") is None
    assert stream.offer(0.5, "old") is not None
    assert stream.value == "a" and stream.count == 1
    assert stream.age_s(1.25) == pytest.approx(0.25)
    stream.reset()
    assert stream.value is None and stream.offer(0.5, "b") is None
