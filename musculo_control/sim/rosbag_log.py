"""A run's signals as a ROS 2 bag: rosbag2 layout, MCAP storage, the live system's topics.

Written with ``rosbags`` (a maintained pure-Python rosbag2 reader/writer that ships the ROS 2
message definitions and a CDR serialiser), so no ROS installation is needed to write it and
any ROS 2 tool reads it: the folder is what ``ros2 bag record -s mcap`` writes (a
``metadata.yaml`` beside one ``.mcap`` file whose schemas are ``ros2msg`` definitions and whose
messages are CDR). ``ros2 bag play`` (with the rosbag2 MCAP storage plugin), Foxglove and
PlotJuggler's ROS 2 parsers open it as a ROS recording.

The messages are built by :mod:`musculo_control.messages`, the same code the nodes
publish with, on the same topics and types (doc/ros_overview.md, Interface): ``/joint_states``,
``/muscle_states``, ``/muscle_commands``, ``/controller/activations``, ``/controller/goal``,
``/controller/state`` (``musculo_control_msgs/ControllerState``); the mock arm's truth goes on
``/mock/joint_states``, ``/mock/hand``, ``/mock/gauge_force`` as the mock node publishes it,
plus ``/mock/elbow`` and ``/mock/tendon_tensions``, which only the simulation has.

**Stamps are simulated time, shifted to the wall clock of the run's start**: every header
stamp and log time is ``origin + t_sim``, ``origin`` being the Unix time at which the run
started (so tools show a real date, not 1970). The bag's ``metadata.yaml`` ``custom_data``
says so and carries ``origin`` in nanoseconds (run.yaml too); ``t_sim = stamp - origin``.
It may also say which run the bag holds (:class:`BagRun`: experiment, controller, start pose,
the experiment's settings), which ``musculo score`` reads.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control import messages, msg_types
from musculo_control.errors import InputError
from musculo_control.records import RecordLayout
from musculo_control.sim.recorder import Recorder
from musculo_control.stamps import NS_PER_S, Stamp

FloatArray = npt.NDArray[np.float64]

#: custom_data keys of metadata.yaml that label the stamps.
STAMPS_KEY = "musculo_control/stamps"
ORIGIN_KEY = "musculo_control/sim_time_origin_ns"
STAMPS_TEXT = ("simulated time shifted to the wall clock at the run's start: "
               "stamp = origin + t_sim")

JOINT_STATE = "sensor_msgs/msg/JointState"


@dataclass(frozen=True)
class BagRun:
    """Which run a bag holds, in its ``metadata.yaml`` ``custom_data``: the experiment, the
    controller, the start pose (a trajectory run's; '' otherwise) and the experiment's settings
    as it ran (``experiments.yaml`` dotted keys -> values, e.g. ``disturbance.settle_s``)."""

    experiment: str
    controller: str = ""
    start_pose: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)

    PREFIX = "musculo_control/run/"

    def custom_data(self) -> dict[str, str]:
        """The ``custom_data`` entries (strings: rosbag2 keeps only strings there)."""
        p = self.PREFIX
        return {f"{p}experiment": self.experiment, f"{p}controller": self.controller,
                f"{p}start_pose": self.start_pose,
                f"{p}settings": json.dumps(dict(self.settings), sort_keys=True)}

    @classmethod
    def from_custom_data(cls, data: Mapping[str, str]) -> BagRun | None:
        """The run of a bag's ``custom_data``; None when it does not say."""
        p = cls.PREFIX
        if f"{p}experiment" not in data:
            return None
        return cls(data[f"{p}experiment"], data.get(f"{p}controller", ""),
                   data.get(f"{p}start_pose", ""), json.loads(data.get(f"{p}settings", "{}")))


class RosbagsMessages:
    """A :class:`~musculo_control.messages.MessageFactory` of ``rosbags`` classes.

    rosbags ships the ROS 2 Humble message definitions; absent fields get their ROS defaults.
    rosbags holds ``float64[]`` as numpy arrays and ``byte`` as int (rclpy: ``array('d')`` and
    ``bytes``), the two differences the factory abstracts.
    """

    def __init__(self) -> None:
        self.typestore = _humble_typestore()

    def new(self, type_name: str, **fields: Any) -> Any:
        cls = self.typestore.types[type_name]
        _, defs = self.typestore.fielddefs[type_name]
        known = {name for name, _ in defs}
        unknown = set(fields) - known
        if unknown:
            raise TypeError(f"{type_name} has no fields {sorted(unknown)}; it has {sorted(known)}")
        kwargs = {name: fields[name] if name in fields else self._default(desc)
                  for name, desc in defs}
        return cls(**kwargs)

    def _default(self, desc: Any) -> Any:
        from rosbags.typesys.base import Nodetype

        kind, detail = desc
        if kind == Nodetype.BASE:
            name = detail[0]
            if name == "string":
                return ""
            if name == "bool":
                return False
            return 0.0 if name.startswith("float") else 0
        if kind == Nodetype.NAME:
            return self.new(detail)
        (sub_kind, sub_detail), size = detail
        if sub_kind == Nodetype.BASE and sub_detail[0] in _NUMPY:
            return np.zeros(size if kind == Nodetype.ARRAY else 0, dtype=_NUMPY[sub_detail[0]])
        if kind == Nodetype.ARRAY:
            return [self._default((sub_kind, sub_detail)) for _ in range(size)]
        return []

    def float64s(self, values: npt.ArrayLike) -> Any:
        return np.array(values, dtype=np.float64).reshape(-1)

    def byte(self, value: int) -> int:
        return int(value)

    def serialize(self, msg: Any, type_name: str) -> bytes:
        return bytes(self.typestore.serialize_cdr(msg, type_name))

    def deserialize(self, data: bytes, type_name: str) -> Any:
        return self.typestore.deserialize_cdr(data, type_name)

    def round_trip(self, msg: Any, type_name: str) -> Any:
        """Serialise to CDR and back (fails on any field of the wrong type or shape)."""
        return self.typestore.deserialize_cdr(self.serialize(msg, type_name), type_name)


def _humble_typestore() -> Any:
    """rosbags' ROS 2 Humble types, and this project's (:func:`msg_types.bag_typestore`)."""
    return msg_types.bag_typestore()


_NUMPY = {"bool": np.bool_, "byte": np.uint8, "char": np.uint8, "int8": np.int8,
          "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
          "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64, "float32": np.float32,
          "float64": np.float64}

#: (topic, message type, {JointState field: signal}) of the JointState topics; the names are
#: the signal's component labels.
JOINT_STATE_TOPICS: tuple[tuple[str, dict[str, str]], ...] = (
    ("/joint_states", {"position": "q_measured_rad", "velocity": "qd_measured_rad_s"}),
    ("/muscle_states", {"position": "muscle_length_m", "velocity": "muscle_velocity_m_s",
                        "effort": "muscle_tension_measured_n"}),
    ("/muscle_commands", {"effort": "tension_command_n"}),
    ("/controller/activations", {"position": "activation"}),
    ("/mock/joint_states", {"position": "q_rad", "velocity": "qd_rad_s"}),
    ("/mock/tendon_tensions", {"effort": "tension_n"}),
)
#: (topic, signal) of the geometry_msgs/PointStamped topics.
POINT_TOPICS = (("/mock/hand", "hand_m"), ("/mock/elbow", "elbow_m"))


def write_bag(folder: Path, recorder: Recorder, *, frame_id: str, origin_ns: int,
              state_layout: RecordLayout | None = None, run: BagRun | None = None) -> Path:
    """Write ``recorder``'s samples as a rosbag2 folder (MCAP storage); returns the folder.
    ``run``: which run it is, in the metadata (:class:`BagRun`).

    A folder left by an earlier bag (it holds a ``metadata.yaml``) is replaced; any other
    existing path is refused.
    """
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer

    folder = Path(folder)
    if folder.exists():
        if not (folder / "metadata.yaml").is_file():
            raise InputError("bag folder", "a new path or an earlier bag folder", str(folder))
        shutil.rmtree(folder)
    types = RosbagsMessages()
    t = recorder.time_s
    stamps = [Stamp.from_nanoseconds(origin_ns + int(round(ti * NS_PER_S))) for ti in t]
    # per topic: (message type, function sample index -> message)
    topics: list[tuple[str, str, Callable[[int], Any]]] = []
    have = recorder.labels
    for topic, fields in JOINT_STATE_TOPICS:
        if not all(sig in have for sig in fields.values()):
            continue
        names = have[next(iter(fields.values()))]
        arrays = {f: recorder.array(sig) for f, sig in fields.items()}
        topics.append((topic, JOINT_STATE, _joint_state(types, names, arrays, stamps, frame_id)))
    for topic, sig in POINT_TOPICS:
        if sig in have:
            topics.append((topic, "geometry_msgs/msg/PointStamped",
                           _point(types, recorder.array(sig), stamps, frame_id)))
    if "hand_goal_m" in have and "hand_goal_quaternion_xyzw" in have:
        pos, quat = recorder.array("hand_goal_m"), recorder.array("hand_goal_quaternion_xyzw")
        topics.append(("/controller/goal", "geometry_msgs/msg/PoseStamped",
                       lambda i: messages.pose_stamped_msg(types, stamps[i], frame_id, pos[i],
                                                           quat[i])))
    if "gauge_force_n" in have:
        force = recorder.array("gauge_force_n")[:, 0]
        topics.append(("/mock/gauge_force", "std_msgs/msg/Float64",
                       lambda i: types.new("std_msgs/msg/Float64", data=float(force[i]))))
    if "controller_state" in have and state_layout is not None:
        state = recorder.array("controller_state")
        layout = state_layout
        topics.append(("/controller/state", msg_types.CONTROLLER_STATE.type_name,
                       lambda i: msg_types.to_msg(types, msg_types.CONTROLLER_STATE,
                                                  layout.unpack(state[i]), frame_id,
                                                  stamps[i])))
    writer = Writer(folder, version=8, storage_plugin=StoragePlugin.MCAP)
    # zstd chunks inside the MCAP file, as `ros2 bag record -s mcap` writes with its zstd presets
    writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with writer:
        custom = {STAMPS_KEY: STAMPS_TEXT, ORIGIN_KEY: str(int(origin_ns)),
                  **(run.custom_data() if run is not None else {})}
        for key, value in custom.items():
            writer.set_custom_data(key, value)
        conns = [(writer.add_connection(topic, kind, typestore=types.typestore), kind, build)
                 for topic, kind, build in topics]
        for i, stamp in enumerate(stamps):
            for conn, kind, build in conns:
                writer.write(conn, stamp.nanoseconds, types.serialize(build(i), kind))
    return folder


def _joint_state(types: RosbagsMessages, names: tuple[str, ...], arrays: dict[str, FloatArray],
                 stamps: list[Stamp], frame_id: str) -> Callable[[int], Any]:
    def build(i: int) -> Any:
        return messages.joint_state_msg(types, stamps[i], names, frame_id=frame_id,
                                  **{f: a[i] for f, a in arrays.items()})
    return build


def _point(types: RosbagsMessages, points: FloatArray, stamps: list[Stamp],
           frame_id: str) -> Callable[[int], Any]:
    def build(i: int) -> Any:
        return messages.point_stamped_msg(types, stamps[i], frame_id, points[i])
    return build
