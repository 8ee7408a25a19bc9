"""Labelled flat records (musculo_control.records) and the dynamics snapshot codec."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from musculo_control.errors import InputError
from musculo_control.estimation.snapshot_codec import SnapshotCodec
from musculo_control.records import Dim, Field, RecordLayout, layout_from_dims
from musculo_control.stamps import Stamp

LAYOUT = RecordLayout("demo_v1", [Field("m", (2, 3)), Field("v", (4,)), Field("s", ())])


def test_pack_unpack_round_trip_and_dims():
    values = {"m": np.arange(6.0).reshape(2, 3), "v": [9.0, 8.0, 7.0, 6.0], "s": 3.5}
    flat = LAYOUT.pack(values)
    assert flat.shape == (11,)
    back = LAYOUT.unpack(flat)
    np.testing.assert_array_equal(back["m"], values["m"])
    np.testing.assert_array_equal(back["v"], values["v"])
    assert back["s"].shape == () and float(back["s"]) == 3.5
    assert LAYOUT.dims() == [Dim("schema:demo_v1", 0, 0), Dim("m:2x3", 6, 0), Dim("v:4", 4, 6),
                             Dim("s:1", 1, 10)]
    rebuilt = layout_from_dims(LAYOUT.dims())
    assert rebuilt.fields == LAYOUT.fields and rebuilt.schema == "demo_v1"


@pytest.mark.parametrize("values", [
    {"m": np.zeros((2, 3)), "v": np.zeros(4)},  # missing s
    {"m": np.zeros((2, 3)), "v": np.zeros(4), "s": 0.0, "x": 1.0},  # unknown x
    {"m": np.zeros((3, 2)), "v": np.zeros(4), "s": 0.0},  # wrong shape
])
def test_pack_refuses_missing_unknown_or_misshapen_fields(values):
    with pytest.raises(InputError):
        LAYOUT.pack(values)


@pytest.mark.parametrize("dims, offset", [
    ([Dim("schema:other_v1", 0, 0)] + LAYOUT.dims()[1:], 0),  # another record type
    (LAYOUT.dims()[:-1], 0),  # a field short
    (LAYOUT.dims()[:2] + [Dim("v:4", 4, 7)] + LAYOUT.dims()[3:], 0),  # wrong offset
    (LAYOUT.dims(), 1),  # data_offset
    ([], 0),
])
def test_check_dims_refuses_any_other_layout(dims, offset):
    with pytest.raises(InputError):
        LAYOUT.check_dims(dims, offset)


def test_unpack_refuses_the_wrong_length():
    with pytest.raises(InputError):
        LAYOUT.unpack(np.zeros(10))


# -- the dynamics snapshot --------------------------------------------------------------------
@pytest.fixture()
def snapshot(estimator, robot):
    q = robot.home_pose_rad + 0.05
    return estimator.compute(q, np.linspace(-0.3, 0.3, robot.arm.n_joints), 1795311712.123456789)


@pytest.fixture()
def codec(robot, task):
    return SnapshotCodec(robot.arm.n_joints, robot.n_muscles, len(task.rows))


def _through(codec, snapshot, stamp, transport):
    """``snapshot`` encoded and decoded: as the DynamicsSnapshot message, through rclpy's
    bytes, or as the Float64MultiArray record."""
    if transport == "record":
        return codec.decode(codec.dims(), codec.encode(snapshot, stamp))
    from musculo_control_msgs.msg import DynamicsSnapshot as Msg
    from rclpy.serialization import deserialize_message, serialize_message

    from musculo_control.messages import RclpyMessages

    msg = codec.to_msg(RclpyMessages(), snapshot, "base", stamp)
    return codec.from_msg(deserialize_message(serialize_message(msg), Msg))


@pytest.mark.parametrize("transport", ["message", "record"])
def test_snapshot_round_trip_is_exact(codec, snapshot, transport):
    stamp = Stamp(1795311712, 123456789)
    snap, got_stamp = _through(codec, snapshot, stamp, transport)
    assert got_stamp == stamp
    assert snap.stamp_s == stamp.seconds
    for f in dataclasses.fields(snapshot):
        a, b = getattr(snapshot, f.name), getattr(snap, f.name)
        if f.name == "stamp_s":
            continue
        if isinstance(a, np.ndarray):
            assert a.shape == b.shape, f.name
            np.testing.assert_array_equal(a, b, err_msg=f.name)
        else:
            assert a == b, f.name


def test_snapshot_stamp_defaults_to_the_snapshots_time(codec, snapshot):
    _, stamp = codec.decode(codec.dims(), codec.encode(snapshot))
    assert abs(stamp.seconds - snapshot.stamp_s) < 1e-6


def test_a_snapshot_message_with_nan_or_of_another_arm_is_refused(codec, snapshot, robot, task):
    from musculo_control.messages import RclpyMessages

    msg = codec.to_msg(RclpyMessages(), snapshot, "base", Stamp(10, 0))
    msg.mass_matrix[3] = float("nan")
    with pytest.raises(InputError, match="finite"):
        codec.from_msg(msg)
    msg = codec.to_msg(RclpyMessages(), snapshot, "base", Stamp(10, 0))
    other = SnapshotCodec(robot.arm.n_joints, robot.n_muscles + 1, len(task.rows))
    with pytest.raises(InputError, match="muscle_length_m"):
        other.from_msg(msg)


def test_snapshot_decode_refuses_nan_bad_stamp_and_other_arms(codec, snapshot, robot, task):
    data = codec.encode(snapshot, Stamp(10, 0))
    bad = data.copy()
    bad[5] = np.nan
    with pytest.raises(InputError, match="finite"):
        codec.decode(codec.dims(), bad)
    bad = data.copy()
    bad[1] = 2e9  # nanosec out of range
    with pytest.raises(InputError, match="stamp"):
        codec.decode(codec.dims(), bad)
    other = SnapshotCodec(robot.arm.n_joints, robot.n_muscles + 1, len(task.rows))
    with pytest.raises(InputError):
        other.decode(codec.dims(), data)
