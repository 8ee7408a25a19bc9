"""Every conversion between ROS messages and numpy, in one place, importable without ROS.

The message classes come in through a :class:`MessageFactory`, so the same code builds rclpy
messages in the nodes and ``rosbags`` messages in the tests (rosbags ships the real ROS 2
message definitions, so the tests check every field name and type by serialising to CDR).

Two representation differences between the two are handled here and nowhere else:

- ``float64[]`` fields: rclpy accepts ``list`` or ``array.array('d')`` and rejects a numpy
  array in its field setters (an ``AssertionError`` in debug mode); rosbags holds numpy arrays.
  :meth:`MessageFactory.float64s` makes the right container; reading goes through
  :func:`float_array`, which accepts either.
- ``byte`` fields (``DiagnosticStatus.level``): rclpy wants ``bytes`` of length 1, rosbags an
  int. :meth:`MessageFactory.byte` makes the right one; :func:`byte_value` reads either.

Reading a ``JointState`` checks its structure against the names a consumer expects
(:class:`NameOrder`): the same number of names, no duplicates, no unknown or missing names,
every value array as long as the names. The names may come in any order; the result is in
the consumer's order. Any fault is returned as a sentence naming the topic, never raised.
"""

from __future__ import annotations

import array
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from musculo_control.arrays import finite as finite_values
from musculo_control.errors import InputError
from musculo_control.records import Dim
from musculo_control.stamps import Stamp

if TYPE_CHECKING:  # the codec comes in from its user: no model loaded here
    from musculo_control.estimation.snapshot_codec import SnapshotCodec

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: visualization_msgs/Marker constants used here.
MARKER_LINE_STRIP = 4
MARKER_ADD = 0


# -- message classes ------------------------------------------------------------------------------
class MessageFactory(Protocol):
    """Builds messages by ROS type name (``'sensor_msgs/msg/JointState'``) from keyword fields.

    ``new`` must accept any subset of the fields and give the rest their defaults.
    """

    def new(self, type_name: str, **fields: Any) -> Any: ...

    def float64s(self, values: npt.ArrayLike) -> Any: ...

    def byte(self, value: int) -> Any: ...


class RclpyMessages:
    """The rclpy message classes (imported on first use, so this module stays ROS-free)."""

    def __init__(self) -> None:
        self._classes: dict[str, Any] = {}

    def cls(self, type_name: str) -> Any:
        try:
            return self._classes[type_name]
        except KeyError:
            import importlib

            package, kind, name = type_name.split("/")
            module = importlib.import_module(f"{package}.{kind}")
            self._classes[type_name] = getattr(module, name)
            return self._classes[type_name]

    def new(self, type_name: str, **fields: Any) -> Any:
        return self.cls(type_name)(**fields)

    def float64s(self, values: npt.ArrayLike) -> array.array[float]:
        """A float64[] field value: ``array('d')`` straight from the numpy buffer."""
        flat = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
        return array.array("d", flat.tobytes())

    def byte(self, value: int) -> bytes:
        return bytes((int(value),))

    def serialize(self, msg: Any, type_name: str) -> bytes:
        """The middleware's bytes (CDR) of ``msg``, as a publisher sends them."""
        return self._serialization().serialize_message(msg)  # type: ignore[no-any-return]

    def deserialize(self, data: bytes, type_name: str) -> Any:
        """The message of type ``type_name`` that ``data`` (CDR) holds."""
        return self._serialization().deserialize_message(data, self.cls(type_name))

    @staticmethod
    def _serialization() -> Any:
        """``rclpy.serialization``, imported on first use (as the message classes are)."""
        import importlib

        return importlib.import_module("rclpy.serialization")


def float_array(values: Any) -> FloatArray:
    """A float64[] field (``array('d')``, list or numpy) as a float64 numpy array (a copy)."""
    return np.array(values, dtype=np.float64).reshape(-1)


def byte_value(value: Any) -> int:
    """A ``byte`` field (``bytes`` of length 1 or an int) as an int."""
    if isinstance(value, (bytes, bytearray)):
        return value[0] if value else 0
    return int(value)


# -- time and headers -----------------------------------------------------------------------------
def stamp_of(msg: Any) -> Stamp:
    """The ``header.stamp`` of a stamped message."""
    st = msg.header.stamp
    return Stamp(int(st.sec), int(st.nanosec))


def time_msg(types: MessageFactory, stamp: Stamp) -> Any:
    return types.new("builtin_interfaces/msg/Time", sec=int(stamp.sec),
                     nanosec=int(stamp.nanosec))


def header_msg(types: MessageFactory, stamp: Stamp, frame_id: str = "") -> Any:
    return types.new("std_msgs/msg/Header", stamp=time_msg(types, stamp), frame_id=frame_id)


def clock_msg(types: MessageFactory, stamp: Stamp) -> Any:
    """A ``rosgraph_msgs/Clock`` (the ``/clock`` topic of simulated time)."""
    return types.new("rosgraph_msgs/msg/Clock", clock=time_msg(types, stamp))


# -- JointState -----------------------------------------------------------------------------------
def joint_state_msg(types: MessageFactory, stamp: Stamp, names: Sequence[str],
                    position: npt.ArrayLike | None = None,
                    velocity: npt.ArrayLike | None = None,
                    effort: npt.ArrayLike | None = None, frame_id: str = "") -> Any:
    """A ``sensor_msgs/JointState``; absent value arrays are empty, as the message allows."""
    empty = np.empty(0)
    return types.new(
        "sensor_msgs/msg/JointState",
        header=header_msg(types, stamp, frame_id),
        name=list(names),
        position=types.float64s(empty if position is None else position),
        velocity=types.float64s(empty if velocity is None else velocity),
        effort=types.float64s(empty if effort is None else effort),
    )


class JointStateWriter:
    """One reusable ``JointState`` for a stream with fixed names: only the stamp and the
    values change per message.

    Building an rclpy message costs tens of microseconds (its constructor imports and
    validates every nested field); refilling one costs a few. rclpy serialises a message
    during ``publish``, so the same object can be refilled right after.
    """

    def __init__(self, types: MessageFactory, names: Sequence[str], frame_id: str = "") -> None:
        self._types = types
        self._empty = types.float64s(np.empty(0))
        self.msg = joint_state_msg(types, Stamp(0, 0), names, frame_id=frame_id)

    def write(self, stamp: Stamp, position: npt.ArrayLike | None = None,
              velocity: npt.ArrayLike | None = None,
              effort: npt.ArrayLike | None = None) -> Any:
        msg = self.msg
        st = msg.header.stamp
        st.sec, st.nanosec = int(stamp.sec), int(stamp.nanosec)
        f = self._types.float64s
        msg.position = self._empty if position is None else f(position)
        msg.velocity = self._empty if velocity is None else f(velocity)
        msg.effort = self._empty if effort is None else f(effort)
        return msg


class NameOrder:
    """Maps the names of an incoming message onto the order a consumer expects.

    The index of the last name list seen is cached, so a stream that always sends the same
    names in the same order costs one tuple comparison per message.
    """

    def __init__(self, topic: str, expected: Sequence[str], what: str = "name") -> None:
        self.topic = topic
        self.expected: tuple[str, ...] = tuple(expected)
        self.what = what
        self._position = {n: i for i, n in enumerate(self.expected)}
        self._cached_names: tuple[str, ...] | None = None
        self._cached_index: IntArray = np.arange(len(self.expected))

    def index(self, names: Sequence[str]) -> IntArray | str:
        """``idx`` with ``values[idx]`` in expected order, or why the names are refused."""
        got = tuple(names)
        if got == self._cached_names:
            return self._cached_index
        n = len(self.expected)
        if len(got) != n:
            return (f"{self.topic}: {len(got)} {self.what}s, expected {n} "
                    f"{list(self.expected)}")
        if len(set(got)) != len(got):
            dup = sorted({x for x in got if got.count(x) > 1})
            return f"{self.topic}: duplicate {self.what}s {dup}"
        unknown = [x for x in got if x not in self._position]
        if unknown:
            return (f"{self.topic}: unknown {self.what}s {unknown}; known are "
                    f"{list(self.expected)}")
        # n names, distinct, all known: a permutation of the expected ones
        where = {x: i for i, x in enumerate(got)}
        idx = np.array([where[x] for x in self.expected], dtype=np.intp)
        self._cached_names, self._cached_index = got, idx
        return idx


#: The value fields of a ``JointState``, in message order.
JOINT_STATE_FIELDS = ("position", "velocity", "effort")


class JointArrays(NamedTuple):
    """The value arrays of one JointState, in the consumer's name order."""

    stamp: Stamp
    position: FloatArray
    velocity: FloatArray
    effort: FloatArray


def read_joint_state(msg: Any, order: NameOrder, required: Sequence[str] = ("position",),
                     finite: bool = False) -> JointArrays | str:
    """The arrays of a ``JointState`` in ``order``'s names, or why the message is refused.

    ``required`` fields must be as long as the names; the others must be that long or empty
    (then they come back empty). ``finite``: refuse NaN or infinity in the required fields.
    """
    idx = order.index(msg.name)
    if isinstance(idx, str):
        return idx
    return joint_arrays(order, stamp_of(msg), (float_array(msg.position),
                                               float_array(msg.velocity),
                                               float_array(msg.effort)), required, finite, idx)


def joint_arrays(order: NameOrder, stamp: Stamp,
                 fields: tuple[FloatArray, FloatArray, FloatArray],
                 required: Sequence[str] = ("position",), finite: bool = False,
                 idx: IntArray | None = None) -> JointArrays | str:
    """The checks of :func:`read_joint_state` on a message's position, velocity and effort
    arrays (in the message's name order; ``idx`` puts them in ``order``'s, None: they are in
    it), or why they are refused."""
    n = len(order.expected)
    out: list[FloatArray] = []
    for field, values in zip(JOINT_STATE_FIELDS, fields):
        if values.shape[0] == 0 and field not in required:
            out.append(values)
            continue
        if values.shape[0] != n:
            return (f"{order.topic}: {values.shape[0]} {field} values for {n} "
                    f"{order.what}s")
        if idx is not None:
            values = values[idx]
        if finite and field in required and not finite_values(values):
            bad = [order.expected[i] for i in np.flatnonzero(~np.isfinite(values))]
            return f"{order.topic}: non-finite {field} for {bad}"
        out.append(values)
    return JointArrays(stamp, out[0], out[1], out[2])


# -- poses and points -----------------------------------------------------------------------------
class PoseData(NamedTuple):
    """A ``geometry_msgs/PoseStamped`` as numbers."""

    stamp: Stamp
    frame_id: str
    position_m: FloatArray  # (3,)
    quaternion_xyzw: FloatArray  # (4,)


def read_pose_stamped(msg: Any) -> PoseData:
    p, o = msg.pose.position, msg.pose.orientation
    return PoseData(stamp_of(msg), str(msg.header.frame_id),
                    np.array([p.x, p.y, p.z], dtype=float),
                    np.array([o.x, o.y, o.z, o.w], dtype=float))


def pose_msg(types: MessageFactory, position_m: npt.ArrayLike,
             quaternion_xyzw: npt.ArrayLike) -> Any:
    p = [float(v) for v in np.asarray(position_m, dtype=float).reshape(3)]
    q = [float(v) for v in np.asarray(quaternion_xyzw, dtype=float).reshape(4)]
    return types.new(
        "geometry_msgs/msg/Pose",
        position=types.new("geometry_msgs/msg/Point", x=p[0], y=p[1], z=p[2]),
        orientation=types.new("geometry_msgs/msg/Quaternion", x=q[0], y=q[1], z=q[2], w=q[3]))


def pose_stamped_msg(types: MessageFactory, stamp: Stamp, frame_id: str,
                     position_m: npt.ArrayLike, quaternion_xyzw: npt.ArrayLike) -> Any:
    return types.new("geometry_msgs/msg/PoseStamped", header=header_msg(types, stamp, frame_id),
                     pose=pose_msg(types, position_m, quaternion_xyzw))


def point_stamped_msg(types: MessageFactory, stamp: Stamp, frame_id: str,
                      point_m: npt.ArrayLike) -> Any:
    x, y, z = (float(v) for v in np.asarray(point_m, dtype=float).reshape(3))
    return types.new("geometry_msgs/msg/PointStamped", header=header_msg(types, stamp, frame_id),
                     point=types.new("geometry_msgs/msg/Point", x=x, y=y, z=z))


def vector3_stamped_msg(types: MessageFactory, stamp: Stamp, frame_id: str,
                        vector: npt.ArrayLike) -> Any:
    x, y, z = (float(v) for v in np.asarray(vector, dtype=float).reshape(3))
    return types.new("geometry_msgs/msg/Vector3Stamped", header=header_msg(types, stamp, frame_id),
                     vector=types.new("geometry_msgs/msg/Vector3", x=x, y=y, z=z))


# -- hand goals with their feed-forward ---------------------------------------------------------
class GoalPoint(NamedTuple):
    """One hand goal with velocity and acceleration (paper eq. 14), as numbers."""

    stamp: Stamp
    frame_id: str
    position_m: FloatArray  # (3,)
    quaternion_xyzw: FloatArray  # (4,)
    velocity_m_s: FloatArray  # (3,) linear part of the twist
    acceleration_m_s2: FloatArray  # (3,) linear part of the acceleration


def _vector3(types: MessageFactory, v: npt.ArrayLike) -> Any:
    x, y, z = (float(c) for c in np.asarray(v, dtype=float).reshape(3))
    return types.new("geometry_msgs/msg/Vector3", x=x, y=y, z=z)


def goal_trajectory_msg(types: MessageFactory, stamp: Stamp, frame_id: str, point_name: str,
                        position_m: npt.ArrayLike, quaternion_xyzw: npt.ArrayLike,
                        velocity_m_s: npt.ArrayLike, acceleration_m_s2: npt.ArrayLike) -> Any:
    """A ``trajectory_msgs/MultiDOFJointTrajectory`` holding one point: the goal's pose,
    velocity and acceleration (angular parts zero), ``point_name`` its one joint name."""
    p = np.asarray(position_m, dtype=float).reshape(3)
    q = [float(c) for c in np.asarray(quaternion_xyzw, dtype=float).reshape(4)]
    zero = np.zeros(3)
    transform = types.new(
        "geometry_msgs/msg/Transform", translation=_vector3(types, p),
        rotation=types.new("geometry_msgs/msg/Quaternion", x=q[0], y=q[1], z=q[2], w=q[3]))
    point = types.new(
        "trajectory_msgs/msg/MultiDOFJointTrajectoryPoint", transforms=[transform],
        velocities=[types.new("geometry_msgs/msg/Twist", linear=_vector3(types, velocity_m_s),
                              angular=_vector3(types, zero))],
        accelerations=[types.new("geometry_msgs/msg/Twist",
                                 linear=_vector3(types, acceleration_m_s2),
                                 angular=_vector3(types, zero))],
        time_from_start=types.new("builtin_interfaces/msg/Duration", sec=0, nanosec=0))
    return types.new("trajectory_msgs/msg/MultiDOFJointTrajectory",
                     header=header_msg(types, stamp, frame_id), joint_names=[point_name],
                     points=[point])


def read_goal_trajectory(msg: Any, topic: str) -> GoalPoint | str:
    """The goal of a one-point ``MultiDOFJointTrajectory``, or why it is refused (a sentence
    naming ``topic``). Missing velocities or accelerations count as zero."""
    names = list(msg.joint_names)
    points = list(msg.points)
    if len(names) != 1 or len(points) != 1:
        return (f"{topic}: expected one joint name and one point (the goal now), received "
                f"{len(names)} names and {len(points)} points")
    point = points[0]
    if len(point.transforms) != 1 or len(point.velocities) > 1 or len(point.accelerations) > 1:
        return (f"{topic}: expected one transform and at most one velocity and acceleration, "
                f"received {len(point.transforms)}, {len(point.velocities)} and "
                f"{len(point.accelerations)}")
    t = point.transforms[0]
    o = t.rotation
    velocity = read_point(point.velocities[0].linear) if point.velocities else np.zeros(3)
    acceleration = (read_point(point.accelerations[0].linear) if point.accelerations
                    else np.zeros(3))
    return GoalPoint(stamp_of(msg), str(msg.header.frame_id), read_point(t.translation),
                     np.array([o.x, o.y, o.z, o.w], dtype=float), velocity, acceleration)


def read_point(msg: Any) -> FloatArray:
    """A ``geometry_msgs/Point`` or ``Vector3`` as a (3,) array."""
    return np.array([msg.x, msg.y, msg.z], dtype=float)


def quaternion_from_rotation(rotation: npt.ArrayLike) -> FloatArray:
    """Unit quaternion (x, y, z, w) of a proper rotation matrix (Shepperd's method)."""
    r = np.asarray(rotation, dtype=float).reshape(3, 3)
    tr = float(np.trace(r))
    if tr > 0.0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + r[i, i] - r[j, j] - r[k, k])
        q = [0.0, 0.0, 0.0, (r[k, j] - r[j, k]) / s]
        q[i] = 0.25 * s
        q[j] = (r[j, i] + r[i, j]) / s
        q[k] = (r[k, i] + r[i, k]) / s
    out = np.array(q)
    out /= np.linalg.norm(out)
    return out if out[3] >= 0.0 else -out


# -- Float64MultiArray records --------------------------------------------------------------------
def float64_multiarray_msg(types: MessageFactory, dims: Sequence[Dim],
                           data: npt.ArrayLike) -> Any:
    """A ``std_msgs/Float64MultiArray`` with a labelled record layout."""
    layout = types.new(
        "std_msgs/msg/MultiArrayLayout",
        dim=[types.new("std_msgs/msg/MultiArrayDimension", label=d.label, size=int(d.size),
                       stride=int(d.stride)) for d in dims],
        data_offset=0)
    return types.new("std_msgs/msg/Float64MultiArray", layout=layout, data=types.float64s(data))


class RecordWriter:
    """One reusable ``Float64MultiArray`` with a fixed record layout: only the data changes."""

    def __init__(self, types: MessageFactory, dims: Sequence[Dim]) -> None:
        self._types = types
        self.msg = float64_multiarray_msg(types, dims, np.empty(0))

    def write(self, data: npt.ArrayLike) -> Any:
        self.msg.data = self._types.float64s(data)
        return self.msg


def read_float64_multiarray(msg: Any) -> tuple[list[Dim], FloatArray, int]:
    """(dims, data, data_offset) of a ``Float64MultiArray``."""
    dims = [Dim(str(d.label), int(d.size), int(d.stride)) for d in msg.layout.dim]
    return dims, float_array(msg.data), int(msg.layout.data_offset)


def snapshot_stamp_s(codec: SnapshotCodec, msg: Any) -> float:
    """The stamp [s] a dynamics message (``musculo_control_msgs/DynamicsSnapshot``) carries;
    -inf if it does not decode (its consumer refuses it when it takes it). What a consumer in
    lockstep waits for (:mod:`musculo_control.loop.lockstep`)."""
    try:
        return codec.from_msg(msg)[0].stamp_s
    except InputError:
        return -float("inf")


# -- markers ------------------------------------------------------------------------------------
def muscle_marker_array_msg(types: MessageFactory, stamp: Stamp, frame_id: str,
                            paths_m: Sequence[FloatArray], colours_rgba: npt.ArrayLike,
                            names: Sequence[str], line_width_m: float,
                            namespace: str = "muscles") -> Any:
    """One LINE_STRIP per muscle (ids 0..m-1, stable) through its via-points, in its colour.

    ``paths_m[i]`` is (k_i, 3) world points [m]; ``colours_rgba`` (m, 4) in [0, 1].
    """
    colours = np.asarray(colours_rgba, dtype=float)
    header = header_msg(types, stamp, frame_id)
    zero_pose = pose_msg(types, np.zeros(3), (0.0, 0.0, 0.0, 1.0))
    markers = []
    for i, (path, name) in enumerate(zip(paths_m, names)):
        r, g, b, a = (float(v) for v in colours[i])
        markers.append(types.new(
            "visualization_msgs/msg/Marker",
            header=header, ns=namespace, id=i, type=MARKER_LINE_STRIP, action=MARKER_ADD,
            pose=zero_pose,
            scale=types.new("geometry_msgs/msg/Vector3", x=float(line_width_m), y=0.0, z=0.0),
            color=types.new("std_msgs/msg/ColorRGBA", r=r, g=g, b=b, a=a),
            points=[types.new("geometry_msgs/msg/Point", x=float(p[0]), y=float(p[1]),
                              z=float(p[2])) for p in np.asarray(path, dtype=float)],
            text=name))
    return types.new("visualization_msgs/msg/MarkerArray", markers=markers)


# -- diagnostics ----------------------------------------------------------------------------------
class Status(NamedTuple):
    """One ``diagnostic_msgs/DiagnosticStatus``, ROS-free."""

    level: int  # OK, WARN, ERROR or STALE
    name: str  # e.g. 'musculo_control: activation_qp_node'
    message: str
    hardware_id: str = ""
    values: Mapping[str, str] = MappingProxyType({})  # key -> value, shown by rqt


def diagnostic_array_msg(types: MessageFactory, stamp: Stamp,
                         statuses: Sequence[Status]) -> Any:
    return types.new("diagnostic_msgs/msg/DiagnosticArray",
                     header=header_msg(types, stamp),
                     status=[types.new("diagnostic_msgs/msg/DiagnosticStatus",
                                       level=types.byte(s.level), name=s.name,
                                       message=s.message, hardware_id=s.hardware_id,
                                       values=[types.new("diagnostic_msgs/msg/KeyValue",
                                                         key=str(k), value=str(v))
                                               for k, v in s.values.items()])
                             for s in statuses])


def read_diagnostic_array(msg: Any) -> list[Status]:
    return [Status(byte_value(s.level), str(s.name), str(s.message), str(s.hardware_id),
                   {str(kv.key): str(kv.value) for kv in s.values}) for s in msg.status]

