"""JointState streams as bytes (musculo_control.serialized): the fixed layout against the libraries'
own serializers (rosbags' Humble definitions; rclpy's when installed). The oracle is the library:
what is written here must deserialize to the message meant, and what is read here must equal what
the library's message gives through messages.read_joint_state, for messages of the stream's
shape (read from their bytes) and of any other (read by the library)."""

from __future__ import annotations

import numpy as np
import pytest
from rosbags_messages import RosbagsMessages

from musculo_control import messages
from musculo_control.serialized import (
    JOINT_STATE,
    JointStateLayout,
    SerializedJointStateReader,
    SerializedJointStateWriter,
    Shape,
    shape_of,
)
from musculo_control.stamps import Stamp

NAMES = ("shoulder_p", "r", "elbow_pitch_joint", "wrist", "ellbogen_\u00fc")
SHAPES = [Shape(NAMES, frame, lengths) for frame in ("", "base_link", "abc")
          for lengths in ((5, 5, 5), (5, 0, 5), (0, 0, 5), (5, 5, 0), (5, 0, 0), (0, 0, 0))]


def _factories() -> list:
    out = [RosbagsMessages()]
    try:
        import rclpy  # noqa: F401
    except ImportError:
        return out
    return out + [messages.RclpyMessages()]


FACTORIES = _factories()
IDS = [type(f).__name__ for f in FACTORIES]


def _message(types, shape: Shape, rng, stamp=None, names=None):
    values = [rng.normal(size=n) for n in shape.lengths]
    return messages.joint_state_msg(types, stamp or Stamp(int(rng.integers(0, 2**31)),
                                                    int(rng.integers(0, 10**9))),
                              names or shape.names, *values, frame_id=shape.frame_id)


def _arrays_equal(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return a.stamp == b.stamp and all(np.array_equal(x, y, equal_nan=True)
                                      for x, y in zip(a[1:], b[1:]))


@pytest.mark.parametrize("types", FACTORIES, ids=IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_a_message_written_from_the_layout_is_the_one_meant(types, shape):
    layout = JointStateLayout.of(types, shape)
    assert layout is not None
    rng = np.random.default_rng(len(shape.frame_id) + sum(shape.lengths))
    for _ in range(5):
        msg = _message(types, shape, rng)
        data = layout.write(messages.stamp_of(msg), *(messages.float_array(getattr(msg, f))
                                                for f in ("position", "velocity", "effort")))
        back = types.deserialize(data, JOINT_STATE)
        assert shape_of(back) == shape and messages.stamp_of(back) == messages.stamp_of(msg)
        for f in ("position", "velocity", "effort"):
            np.testing.assert_array_equal(messages.float_array(getattr(back, f)),
                                          messages.float_array(getattr(msg, f)))
        # and the library's own bytes of it have the layout, stamp and values where it says
        theirs = bytes(types.serialize(msg, JOINT_STATE))
        assert layout.matches(theirs) and layout.stamp(theirs) == messages.stamp_of(msg)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_only_alignment_padding_is_left_uncompared(shape):
    """rosbags writes zeros where the CDR rules pad: every byte of its serialization that the
    layout neither compares nor reads as stamp or value is zero (so no name, length or frame
    byte escapes the comparison)."""
    types = RosbagsMessages()
    layout = JointStateLayout.of(types, shape)
    data = np.frombuffer(bytes(types.serialize(_message(types, shape, np.random.default_rng(1)),
                                               JOINT_STATE)), np.uint8)
    free = np.ones(data.size, dtype=bool)
    free[layout._fixed] = False
    free[layout._stamp_at:layout._stamp_at + 8] = False
    for at, n in zip(layout._values_at, shape.lengths):
        if at is not None:
            free[at:at + 8 * n] = False
    assert not np.any(data[free]), np.flatnonzero(free & (data != 0))


@pytest.mark.parametrize("types", FACTORIES, ids=IDS)
def test_the_reader_gives_what_the_library_and_read_joint_state_give(types):
    rng = np.random.default_rng(7)
    order = messages.NameOrder("topic", NAMES, "joint name")
    required = ("position", "effort")
    reader = SerializedJointStateReader(types, order, required, finite=True)
    stream = Shape(NAMES, "", (5, 0, 5))
    other_order = tuple(reversed(NAMES))
    cases = [_message(types, stream, rng) for _ in range(4)]
    bad = _message(types, stream, rng)
    bad.effort[2] = np.nan
    cases += [
        bad,
        _message(types, Shape(NAMES, "", (5, 5, 5)), rng),  # another shape, still valid
        _message(types, Shape(NAMES, "base", (5, 0, 5)), rng),  # another frame id
        _message(types, stream, rng, names=other_order),  # names in another order
        _message(types, Shape(NAMES, "", (5, 0, 0)), rng),  # effort missing: refused
        _message(types, Shape(NAMES[:4], "", (4, 0, 4)), rng),  # a name missing: refused
        _message(types, stream, rng, names=("x",) + NAMES[1:]),  # unknown name: refused
    ]
    for msg in cases + cases:  # twice: the second time every stream-shaped one is fast
        data = bytes(types.serialize(msg, JOINT_STATE))
        want = messages.read_joint_state(types.deserialize(data, JOINT_STATE), order, required, True)
        assert _arrays_equal(reader.read(data), want)
        assert reader.stamp_s(data) == messages.stamp_of(msg).seconds
    assert reader.fast >= 5  # the stream's shape was read from its bytes


def test_a_big_endian_message_and_garbage_are_read_by_the_library_or_refused():
    types = RosbagsMessages()
    order = messages.NameOrder("topic", NAMES)
    reader = SerializedJointStateReader(types, order)
    msg = _message(types, Shape(NAMES, "", (5, 5, 5)), np.random.default_rng(3))
    little = bytes(types.serialize(msg, JOINT_STATE))
    reader.read(little)
    big = bytes(types.typestore.serialize_cdr(msg, JOINT_STATE, little_endian=False))
    fast = reader.fast
    assert _arrays_equal(reader.read(big), messages.read_joint_state(msg, order))
    assert reader.fast == fast  # not the stream's layout: the library read it
    refused = reader.read(b"\x00\x01\x00\x00\xff\xff")
    assert isinstance(refused, str) and refused.startswith("topic: ")
    assert reader.stamp_s(b"junk") == -np.inf


def test_padding_bytes_do_not_matter_but_every_name_byte_does():
    types = RosbagsMessages()
    order = messages.NameOrder("topic", NAMES)
    shape = Shape(NAMES, "", (5, 5, 5))
    reader = SerializedJointStateReader(types, order)
    msg = _message(types, shape, np.random.default_rng(4))
    data = bytearray(types.serialize(msg, JOINT_STATE))
    reader.read(bytes(data))
    layout = reader._layout
    padding = [i for i in range(len(data)) if data[i] == 0 and i not in set(layout._fixed)
               and not layout._stamp_at <= i < layout._stamp_at + 8]
    padding = [i for i in padding if not any(at is not None and at <= i < at + 8 * n
                                             for at, n in zip(layout._values_at, shape.lengths))]
    assert padding  # names of several lengths: there is padding to fill
    for i in padding:
        data[i] = 0xA5  # what a serializer may leave there
    fast = reader.fast
    assert _arrays_equal(reader.read(bytes(data)), messages.read_joint_state(msg, order))
    assert reader.fast == fast + 1
    i = bytes(data).index(b"elbow")
    data[i] = ord("E")
    assert reader.read(bytes(data)) == messages.read_joint_state(
        types.deserialize(bytes(data), JOINT_STATE), order)
    assert isinstance(reader.read(bytes(data)), str)


@pytest.mark.parametrize("types", FACTORIES, ids=IDS)
def test_the_writer_writes_what_joint_state_writer_would(types):
    writer = SerializedJointStateWriter(types, NAMES, "base_link")
    plain = messages.JointStateWriter(types, NAMES, "base_link")
    x = np.linspace(-1.0, 1.0, 5)
    for fields in ((x, None, None), (x, 2 * x, 3 * x), (None, None, x)):
        data = writer.write(Stamp(3, 4), *fields)
        back = types.deserialize(data, JOINT_STATE)
        want = plain.write(Stamp(3, 4), *fields)
        assert shape_of(back) == shape_of(want) and messages.stamp_of(back) == Stamp(3, 4)
        for f in ("position", "velocity", "effort"):
            np.testing.assert_array_equal(messages.float_array(getattr(back, f)),
                                          messages.float_array(getattr(want, f)))
    with pytest.raises(ValueError):
        writer.write(Stamp(0, 0), x[:3])


@pytest.mark.parametrize("types", FACTORIES, ids=IDS)
def test_the_point_writer_writes_the_stamped_point_meant(types):
    from musculo_control.serialized import SerializedPointWriter

    writer = SerializedPointWriter(types, "base_link")
    assert writer._layout is not None
    for stamp, point in ((Stamp(1, 2), [0.1, -0.2, 0.3]), (Stamp(2**31 - 1, 999_999_999),
                                                           [1e9, -0.0, np.pi])):
        back = types.deserialize(writer.write(stamp, point), "geometry_msgs/msg/PointStamped")
        assert messages.stamp_of(back) == stamp and back.header.frame_id == "base_link"
        np.testing.assert_array_equal(messages.read_point(back.point), point)
    with pytest.raises(ValueError):
        writer.write(Stamp(0, 0), [1.0, 2.0])
