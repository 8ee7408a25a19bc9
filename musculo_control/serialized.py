"""JointState streams as serialized bytes: stamp and values at fixed offsets (ROS-free).

Why: taking a message, rclpy builds Python objects of it twice over (one to take into, one to
hand back), and publishing one converts it back; for a ``JointState`` of 18 names that is about
70 microseconds a message taken on the 2-core test machine against 10 for its bytes, and the
loop's nodes take and send about 1600 such messages a second (doc/timing.md, "Fewer
conversions"). Every state and command stream of the loop has fixed names, frame id and array
lengths, so in its serialized form (CDR, what the middleware sends) the stamp and the values
sit at fixed byte offsets: writing a message is copying the values into a template, reading one
is checking its other bytes against the template and viewing the values.

The layout follows the CDR rules the ROS 2 middlewares use (a 4-byte encapsulation header
naming the byte order, then each primitive aligned to its size from the end of that header;
a string is its length, its characters and a NUL) and is checked against the library when it
is made: its template is the library's serialization of the shape, a message written through
it must read back equal through the library's deserializer, and a layout that fails is not
used. A message of another shape (other names or order, another frame id or byte order, a
missing field) is read by the library and :func:`~musculo_control.messages.read_joint_state`,
the one reading of a JointState, with the same result; the bytes the CDR rules leave as
alignment padding (serializers fill them with whatever was in the buffer) are not compared.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from musculo_control import messages
from musculo_control.stamps import Stamp

FloatArray = npt.NDArray[np.float64]

JOINT_STATE = "sensor_msgs/msg/JointState"
FIELDS = messages.JOINT_STATE_FIELDS
#: CDR encapsulation identifiers (first two bytes): big- and little-endian plain CDR.
_CDR_BE, _CDR_LE = b"\x00\x00", b"\x00\x01"
#: Shapes whose layout a reader or writer keeps (a stream has one; a foreign writer may add one).
_MAX_SHAPES = 4


class Serializer(Protocol):
    """A message factory that also turns messages into the middleware's bytes and back
    (:class:`~musculo_control.messages.RclpyMessages`, the tests' rosbags factory)."""

    def new(self, type_name: str, **fields: Any) -> Any: ...

    def float64s(self, values: npt.ArrayLike) -> Any: ...

    def byte(self, value: int) -> Any: ...

    def serialize(self, msg: Any, type_name: str) -> bytes: ...

    def deserialize(self, data: bytes, type_name: str) -> Any: ...


class Shape(NamedTuple):
    """What fixes a JointState's layout: names, frame id and each value field's length."""

    names: tuple[str, ...]
    frame_id: str
    lengths: tuple[int, int, int]  # position, velocity, effort


def shape_of(msg: Any) -> Shape:
    """The shape of a JointState message (rclpy or rosbags)."""
    return Shape(tuple(str(n) for n in msg.name), str(msg.header.frame_id),
                 tuple(len(getattr(msg, f)) for f in FIELDS))  # type: ignore[arg-type]


def _cdr_offsets(data: bytes, shape: Shape) -> tuple[int, list[int | None], list[bool]] | None:
    """Walk the CDR of a JointState of ``shape``: (stamp offset, value offsets per field, which
    bytes are data rather than padding), or None when the bytes do not have that shape."""
    if data[:2] == _CDR_LE:
        order = "<"
    elif data[:2] == _CDR_BE:
        order = ">"
    else:
        return None
    used = [True] * 4 + [False] * (len(data) - 4)  # the encapsulation header counts
    pos = 4

    def align(size: int) -> None:
        nonlocal pos
        pos += (-(pos - 4)) % size

    def take(size: int) -> int:
        nonlocal pos
        align(size)
        at = pos
        if at + size > len(data):
            raise IndexError(at)
        used[at:at + size] = [True] * size
        pos += size
        return at

    def string(expected: str) -> bool:
        at = take(4)
        length = struct.unpack_from(order + "I", data, at)[0]
        text = expected.encode() + b"\x00"
        if length != len(text) or data[pos:pos + length] != text:
            return False
        used[pos:pos + length] = [True] * length
        return advance(length)

    def advance(size: int) -> bool:
        nonlocal pos
        pos += size
        return pos <= len(data)

    try:
        stamp_at = take(4)
        take(4)  # nanosec
        if not string(shape.frame_id):
            return None
        if struct.unpack_from(order + "I", data, take(4))[0] != len(shape.names):
            return None
        for name in shape.names:
            if not string(name):
                return None
        values: list[int | None] = []
        for length in shape.lengths:
            if struct.unpack_from(order + "I", data, take(4))[0] != length:
                return None
            if length == 0:
                values.append(None)
                continue
            values.append(take(8))
            used[pos:pos + 8 * (length - 1)] = [True] * (8 * (length - 1))
            if not advance(8 * (length - 1)):
                return None
    except (IndexError, struct.error):
        return None
    # a serializer may leave bytes after the data (rmw_fastrtps does after an empty sequence)
    return stamp_at, values, used


class JointStateLayout:
    """Where a JointState of one :class:`Shape` keeps its stamp and values in its serialized
    bytes (see the module docstring). Made by :meth:`of`, which checks it against the
    library."""

    def __init__(self, shape: Shape, template: bytes, stamp_at: int,
                 values_at: Sequence[int | None], used: Sequence[bool]) -> None:
        self.shape = shape
        self.template = bytes(template)
        self._order = "<" if template[:2] == _CDR_LE else ">"
        self._stamp = struct.Struct(self._order + "iI")
        self._stamp_at = stamp_at
        self._values_at = tuple(values_at)
        self._dtype = np.dtype(self._order + "f8")
        # the bytes that identify the shape: every byte of data but the stamp and the values
        fixed = np.array(used, dtype=bool)
        fixed[stamp_at:stamp_at + 8] = False
        for at, n in zip(self._values_at, shape.lengths):
            if at is not None:
                fixed[at:at + 8 * n] = False
        self._fixed = np.flatnonzero(fixed)
        self._fixed_bytes = np.frombuffer(self.template, np.uint8)[self._fixed].tobytes()
        # what write() fills: one buffer, a view of each value field in it
        self._buf = bytearray(self.template)
        self._views = [None if at is None else np.frombuffer(self._buf, self._dtype, n, at)
                       for at, n in zip(self._values_at, shape.lengths)]

    @classmethod
    def of(cls, types: Serializer, shape: Shape) -> JointStateLayout | None:
        """The layout of ``shape`` in ``types``' serialization, or None when the library's bytes
        do not follow it (the library's path is then used: slower, never wrong)."""
        marked = _marked(types, shape, 0)
        template = bytes(types.serialize(marked, JOINT_STATE))
        walked = _cdr_offsets(template, shape)
        if walked is None:
            return None
        layout = cls(shape, template, *walked)
        # a second marked message written here must read back equal through the library
        check = _marked(types, shape, 1)
        written = layout.write(messages.stamp_of(check),
                               *(messages.float_array(getattr(check, f)) for f in FIELDS))
        try:
            back = types.deserialize(written, JOINT_STATE)
        except Exception:  # noqa: BLE001 - any failure of the library means: not this layout
            return None
        same = (messages.stamp_of(back) == messages.stamp_of(check) and shape_of(back) == shape
                and all(np.array_equal(messages.float_array(getattr(back, f)),
                                       messages.float_array(getattr(check, f))) for f in FIELDS))
        return layout if same and layout.matches(written) else None

    def matches(self, data: bytes) -> bool:
        """Whether ``data`` is a JointState of this layout's shape (and byte order)."""
        return (len(data) == len(self.template)
                and np.frombuffer(data, np.uint8)[self._fixed].tobytes() == self._fixed_bytes)

    def stamp(self, data: bytes) -> Stamp:
        sec, nanosec = self._stamp.unpack_from(data, self._stamp_at)
        return Stamp(sec, nanosec)

    def values(self, data: bytes) -> tuple[FloatArray, FloatArray, FloatArray]:
        """position, velocity, effort (empty where the shape has none), as native arrays."""
        out = []
        for at, n in zip(self._values_at, self.shape.lengths):
            out.append(np.empty(0) if at is None else
                       np.frombuffer(data, self._dtype, n, at).astype(np.float64))
        return out[0], out[1], out[2]

    def write(self, stamp: Stamp, position: npt.ArrayLike, velocity: npt.ArrayLike,
              effort: npt.ArrayLike) -> bytes:
        """The serialized message of this shape with ``stamp`` and these values."""
        buf = self._buf
        self._stamp.pack_into(buf, self._stamp_at, int(stamp.sec), int(stamp.nanosec))
        for view, values in zip(self._views, (position, velocity, effort)):
            if view is not None:
                view[:] = values  # a wrong length raises ValueError
        return bytes(buf)


def _marked(types: Serializer, shape: Shape, k: int) -> Any:
    """A JointState of ``shape`` whose stamp and values are distinct and recognisable."""
    position, velocity, effort = (np.arange(1, n + 1, dtype=np.float64) * (10.0 + k)
                                  + 0.25 * (f + 1) for f, n in enumerate(shape.lengths))
    return messages.joint_state_msg(types, Stamp(1_234_567 + k, 987_654_321 - k), shape.names,
                              position, velocity, effort, frame_id=shape.frame_id)


class _Layouts:
    """The layouts of the shapes met so far (a few; a shape the library does not fit is kept
    as None so that it is not tried again)."""

    def __init__(self, types: Serializer) -> None:
        self.types = types
        self._known: dict[Shape, JointStateLayout | None] = {}

    def get(self, shape: Shape) -> JointStateLayout | None:
        if shape not in self._known:
            if len(self._known) >= _MAX_SHAPES:
                self._known.pop(next(iter(self._known)))
            self._known[shape] = JointStateLayout.of(self.types, shape)
        return self._known[shape]


class SerializedJointStateWriter:
    """:class:`~musculo_control.messages.JointStateWriter` for a publisher of serialized
    messages: the same ``write``, answering the message's bytes."""

    def __init__(self, types: Serializer, names: Sequence[str], frame_id: str = "") -> None:
        self.names = tuple(names)
        self.frame_id = frame_id
        self._types = types
        self._fallback = messages.JointStateWriter(types, self.names, frame_id)
        # by which fields are given (their length is the names'): a layout, or None
        self._layouts: dict[tuple[bool, bool, bool], JointStateLayout | None] = {}

    def write(self, stamp: Stamp, position: npt.ArrayLike | None = None,
              velocity: npt.ArrayLike | None = None,
              effort: npt.ArrayLike | None = None) -> bytes:
        given = (position is not None, velocity is not None, effort is not None)
        if given not in self._layouts:
            n = len(self.names)
            self._layouts[given] = JointStateLayout.of(self._types, Shape(
                self.names, self.frame_id, (n * given[0], n * given[1], n * given[2])))
        layout = self._layouts[given]
        if layout is not None:
            return layout.write(stamp, *(() if v is None else v
                                         for v in (position, velocity, effort)))
        msg = self._fallback.write(stamp, position, velocity, effort)
        return bytes(self._types.serialize(msg, JOINT_STATE))


class SerializedJointStateReader:
    """Reads one stream's serialized JointStates into the consumer's name order: the stamp and
    values straight from the bytes when they have the stream's layout, otherwise through the
    library and :func:`~musculo_control.messages.read_joint_state`; the same result either way,
    a refusal as a sentence naming the topic."""

    def __init__(self, types: Serializer, order: messages.NameOrder,
                 required: Sequence[str] = ("position",), finite: bool = False) -> None:
        self.types = types
        self.order = order
        self.required = tuple(required)
        self.finite = finite
        self._layouts = _Layouts(types)
        self._layout: JointStateLayout | None = None  # the stream's, once one message came
        self.fast = 0  # messages read straight from their bytes (for tests and diagnostics)

    def read(self, data: bytes) -> messages.JointArrays | str:
        layout = self._layout
        if layout is not None and layout.matches(data):
            self.fast += 1
            return messages.joint_arrays(self.order, layout.stamp(data), layout.values(data),
                                   self.required, self.finite)
        msg = self._decode(data)
        if isinstance(msg, str):
            return msg
        return messages.read_joint_state(msg, self.order, self.required, self.finite)

    def stamp_s(self, data: bytes) -> float:
        """The message's stamp [s] (-inf if it does not decode)."""
        layout = self._layout
        if layout is not None and layout.matches(data):
            return layout.stamp(data).seconds
        msg = self._decode(data)
        return -float("inf") if isinstance(msg, str) else messages.stamp_of(msg).seconds

    def _decode(self, data: bytes) -> Any:
        """The library's message of ``data`` (or why not); a message with the consumer's names
        in its order gives the stream's layout, so that the next ones are read from their
        bytes (the fast path applies the same checks: the same result)."""
        try:
            msg = self.types.deserialize(data, JOINT_STATE)
        except Exception as exc:  # noqa: BLE001 - a publisher's bytes must never stop the tick
            return f"{self.order.topic}: a message that does not decode as a JointState ({exc})"
        shape = shape_of(msg)
        if shape.names == self.order.expected:
            self._layout = self._layouts.get(shape) or self._layout
        return msg


class ValueLayout:
    """A message of fixed structure whose only variable parts are float64 values (and, maybe,
    a header stamp): their byte offsets found by serializing a message with distinct marker
    values and looking for the markers' bytes, checked by reading a second one back through
    the library. For the writers below; nothing is read this way."""

    def __init__(self, template: bytes, stamp_at: int | None, values_at: Sequence[int],
                 little: bool) -> None:
        self._buf = bytearray(template)
        self._stamp_at = stamp_at
        order = "<" if little else ">"
        self._stamp = struct.Struct(order + "iI")
        dtype = np.dtype(order + "f8")
        # the values in runs of consecutive offsets (an array field is one run)
        self._runs: list[tuple[int, int, Any]] = []  # (first value, count, view)
        start = 0
        for i in range(1, len(values_at) + 1):
            if i == len(values_at) or values_at[i] != values_at[i - 1] + 8:
                n = i - start
                self._runs.append((start, n, np.frombuffer(self._buf, dtype, n,
                                                           values_at[start])))
                start = i
        self.n_values = len(values_at)

    @classmethod
    def of(cls, types: Serializer, type_name: str, n_values: int, stamped: bool,
           build: Callable[[Stamp, FloatArray], Any],
           read_back: Callable[[Any], tuple[Stamp | None, FloatArray] | None]
           ) -> ValueLayout | None:
        """The layout of the messages ``build(stamp, values)`` makes (``n_values`` values),
        or None if the library's bytes do not show one; ``read_back``: a message's stamp
        (None if unstamped) and values, or None when its fixed parts are not the ones built."""
        stamp = Stamp(1_234_567, 987_654_321)
        marks = 1000.0 + np.arange(n_values, dtype=np.float64) * 1.0625 + 0.0001220703125
        template = bytes(types.serialize(build(stamp, marks), type_name))
        little = template[:2] == _CDR_LE
        if not little and template[:2] != _CDR_BE:
            return None
        order = "<" if little else ">"
        values_at = [template.find(struct.pack(order + "d", v)) for v in marks]
        stamp_at = template.find(struct.pack(order + "iI", *stamp)) if stamped else None
        if min(values_at, default=0) < 0 or (stamped and stamp_at is not None and stamp_at < 0):
            return None
        layout = cls(template, stamp_at, values_at, little)
        check_stamp = Stamp(7_654_321, 123_456_789)
        check = np.linspace(-3.5, 2.25, n_values)
        try:
            back = read_back(types.deserialize(layout.write(check, check_stamp), type_name))
        except Exception:  # noqa: BLE001 - any failure of the library means: not this layout
            return None
        if back is None or not np.array_equal(back[1], check):
            return None
        return layout if back[0] == (check_stamp if stamped else None) else None

    def write(self, values: npt.ArrayLike, stamp: Stamp | None = None) -> bytes:
        flat = np.asarray(values, dtype=np.float64).reshape(-1)
        if flat.shape[0] != self.n_values:
            raise ValueError(f"{flat.shape[0]} values for a message of {self.n_values}")
        buf = self._buf
        if self._stamp_at is not None and stamp is not None:
            self._stamp.pack_into(buf, self._stamp_at, int(stamp.sec), int(stamp.nanosec))
        for first, n, view in self._runs:
            view[:] = flat[first:first + n]
        return bytes(buf)


POINT_STAMPED = "geometry_msgs/msg/PointStamped"


class SerializedPointWriter:
    """``geometry_msgs/PointStamped`` in one frame, as serialized bytes."""

    def __init__(self, types: Serializer, frame_id: str) -> None:
        self.frame_id = frame_id
        self._types = types

        def read_back(msg: Any) -> tuple[Stamp, FloatArray] | None:
            if str(msg.header.frame_id) != frame_id:
                return None
            return messages.stamp_of(msg), messages.read_point(msg.point)

        self._layout = ValueLayout.of(types, POINT_STAMPED, 3, True, self._message, read_back)

    def _message(self, stamp: Stamp, point_m: npt.ArrayLike) -> Any:
        return messages.point_stamped_msg(self._types, stamp, self.frame_id, point_m)

    def write(self, stamp: Stamp, point_m: npt.ArrayLike) -> bytes:
        if self._layout is not None:
            return self._layout.write(point_m, stamp)
        return bytes(self._types.serialize(self._message(stamp, point_m), POINT_STAMPED))
