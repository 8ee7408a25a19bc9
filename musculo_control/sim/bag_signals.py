"""A run's signals read back from a rosbag2 bag, at its control ticks, ROS-free.

What ``musculo score`` scores with the experiments' own scoring
(:func:`musculo_control.sim.experiments.score_signals`): the signals of
:class:`~musculo_control.sim.signals.RunSignals` that the score reads, by the same names, from
a bag the runner wrote (:mod:`musculo_control.sim.rosbag_log`) or a lab's ``ros2 bag record``
of the node graph's topics (doc/ros.md, Interface), MCAP or SQLite storage, read with
``rosbags`` and this project's message types.

- **Ticks**: the header stamps of ``/controller/state``; t = 0 is the bag's ``custom_data``
  origin (a runner's bag: the experiment's t = 0) or else the first tick.
- **Hand**: a ground-truth topic when the bag has one (``hand_topic``, e.g. a motion-capture
  PointStamped or PoseStamped; else ``/mock/hand``), otherwise the controller's forward
  kinematics: ``/controller/state`` ``hand_position_m``, and at the ticks that sent a stop
  (whose state carries no hand) the robot model's of ``/joint_states``.
- **Goal**: ``/controller/goal``, the goal the controller accepted (what the runner records as
  the goal: the score compares the hand with what was asked); without it
  ``hand_position_m + hand_error_m`` of ``/controller/state``, the goal in force (x_des; after
  a start-up or a resume it comes from the hand to the accepted one, the first ticks of a
  mock run 0.3 mm apart), held over the ticks that sent a stop.
- **Elbow**: ``/mock/elbow``, else the robot model's (robot.yaml ``poses.elbow_frame``) of
  ``/joint_states``.
- **Gauge force**: ``force_topic`` or ``/mock/gauge_force`` (std_msgs/Float64, or the norm of
  a WrenchStamped's force); without one, NaN (the score says "not measured").
- **Commands, ||a||, the drifting joint**: ``/muscle_commands``, ``/controller/state``,
  ``/mock/joint_states`` (else ``/joint_states``).

A topic sampled at other instants than the ticks is interpolated linearly between its two
neighbours (commands: the latest at or before the tick), its first and last values held
outside its span; a message without a header (Float64) is placed by its log time, mapped onto
the stamps' clock through ``/controller/state``'s log times. The ticks in a stop
come from the state's ``ok``, their episodes from its ``supervisor_state`` (the rules' names
are not in the bag).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from musculo_control import messages
from musculo_control.errors import InputError
from musculo_control.loop.state_record import STATE_CODES
from musculo_control.model.robot import Robot
from musculo_control.safety.episodes import Episode
from musculo_control.safety.supervisor_state import SupervisorState
from musculo_control.sim.rosbag_log import JOINT_STATE, ORIGIN_KEY, BagRun, RosbagsMessages
from musculo_control.stamps import NS_PER_S

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Decode = Callable[[Any], FloatArray]

STATE = "/controller/state"
GOAL = "/controller/goal"
JOINTS = "/joint_states"
COMMANDS = "/muscle_commands"
TRUE_JOINTS = "/mock/joint_states"
TRUE_HAND = "/mock/hand"
TRUE_ELBOW = "/mock/elbow"
TRUE_FORCE = "/mock/gauge_force"
#: the fields of /controller/state read, in the columns of its samples
_STATE_COLUMNS = ("ok", "supervisor_state", "activation_norm", "hand_position_m",
                  "hand_error_m")
_STATE_NAMES = {int(code): state for state, code in STATE_CODES.items()}


def _point(msg: Any) -> FloatArray:
    return messages.read_point(msg.point)


def _pose(msg: Any) -> FloatArray:
    return messages.read_point(msg.pose.position)


def _float(msg: Any) -> FloatArray:
    return np.array([msg.data], dtype=float)


def _wrench(msg: Any) -> FloatArray:
    return np.array([np.linalg.norm(messages.read_point(msg.wrench.force))])


def _state(msg: Any) -> FloatArray:
    return np.array([float(msg.ok), float(msg.supervisor_state), msg.activation_norm,
                     *messages.float_array(msg.hand_position_m),
                     *messages.float_array(msg.hand_error_m)])


POSITION_TYPES: dict[str, Decode] = {"geometry_msgs/msg/PointStamped": _point,
                                     "geometry_msgs/msg/PoseStamped": _pose}
FORCE_TYPES: dict[str, Decode] = {"std_msgs/msg/Float64": _float,
                                  "geometry_msgs/msg/WrenchStamped": _wrench}
STATE_TYPES: dict[str, Decode] = {"musculo_control_msgs/msg/ControllerState": _state}


def _joint_types(topic: str, names: Sequence[str], field: str) -> dict[str, Decode]:
    order = messages.NameOrder(topic, names)

    def decode(msg: Any) -> FloatArray:
        got = messages.read_joint_state(msg, order, required=(field,))
        if isinstance(got, str):
            raise InputError(topic, f"a JointState with {field} for {list(names)}", got)
        return np.asarray(getattr(got, field), dtype=float)

    return {JOINT_STATE: decode}


@dataclass(frozen=True)
class TopicSamples:
    """One topic's messages: stamps from the bag's t = 0 [s] and values (K, width)."""

    t_s: FloatArray
    values: FloatArray
    frames: frozenset[str]  # the header frame_ids seen ('' for a message without a header)


@dataclass(frozen=True)
class BagSignals:
    """The signals of one bag at its control ticks (see the module docstring); ``array`` and
    ``time_s`` as :class:`~musculo_control.sim.recorder.Recorder` has them."""

    bag: Path
    time_s: FloatArray  # (K,) ticks from t = 0 [s]
    arrays: Mapping[str, FloatArray]  # name -> (K, components)
    sources: Mapping[str, str]  # name (and 'time_s') -> where it came from, in words
    unsafe_ticks: int  # ticks whose state is not running (in a stop)
    episodes: tuple[Episode, ...]
    run: BagRun | None  # what the bag's metadata says of its run
    mock: bool  # the bag holds the mock arm's truth (a /mock/ topic)

    def array(self, name: str) -> FloatArray:
        if name not in self.arrays:
            raise InputError(f"bag {self.bag}: signal", f"one of {sorted(self.arrays)}", name)
        return self.arrays[name].copy()


def deserialize_cdr(typestore: Any, data: bytes, type_name: str) -> Any:
    """A CDR message read by rosbags' ``typestore``, a few bytes left after its last field
    allowed: Fast CDR (ROS 2 Kilted's rmw_fastrtps) sizes a message as if each empty float64[]
    (a JointState without efforts) were padded to 8 bytes and sends that many, the last ones
    unused; rosbags allows 3 bytes at the end, so a bag recorded from the live graph would not
    read. Allowed: 4 bytes per field of the message, and 3."""
    from rosbags.serde import SerdeError

    try:
        return typestore.deserialize_cdr(data, type_name)
    except SerdeError as exc:
        if "size mismatch" not in str(exc):
            raise
    msgdef = typestore.get_msgdef(type_name)
    read = msgdef.deserialize_cdr_le if data[1] else msgdef.deserialize_cdr_be
    message, used = read(data[4:], 0, msgdef.cls, typestore)
    if len(data) - (used + 4) > 4 * len(msgdef.fields) + 3:  # not this message's padding
        raise SerdeError(f"CDR message size mismatch for {type_name!r}: {len(data)} bytes, "
                         f"{used + 4} read")
    return message


class _Bag:
    """An open bag's topics (name -> message type), its metadata and its reading."""

    def __init__(self, bag: Path) -> None:
        from rosbags.highlevel import AnyReader

        self.path = Path(bag)
        try:
            self.reader = AnyReader([self.path], default_typestore=RosbagsMessages().typestore)
        except Exception as exc:  # rosbags raises its own error types for unreadable bags
            raise InputError(f"bag {bag}", "a rosbag2 folder (metadata.yaml and .mcap or .db3)",
                             f"{type(exc).__name__}: {exc}") from None
        self.custom = _custom_data(self.path)
        self.types: dict[str, str] = {}  # topic -> message type, once open
        self.t0 = ""  # what t = 0 is, once read
        #: what t = 0 is when the metadata (or the caller) gives it
        self.origin_said = f"the run's t = 0 (custom_data {ORIGIN_KEY})"

    def __enter__(self) -> _Bag:
        self.reader.__enter__()
        self.types = {c.topic: c.msgtype for c in self.reader.connections}
        return self

    def __exit__(self, *exc: Any) -> None:
        self.reader.__exit__(*exc)

    def missing(self, topic: str, what: str, types: Sequence[str]) -> InputError:
        """The error of a bag without ``topic``, needed for ``what``."""
        return InputError(f"bag {self.path}", f"a topic {topic} ({' or '.join(types)}) for "
                          f"{what}", f"topics {sorted(self.types)}")

    def read(self, wanted: Mapping[str, Mapping[str, Decode]]) -> dict[str, TopicSamples]:
        """The ``wanted`` topics the bag has (topic -> {message type: decoder}), one pass;
        stamps as header stamps or log times [ns]."""
        reader = self.reader
        conns = [c for c in reader.connections if c.topic in wanted]
        for c in conns:
            if c.msgtype not in wanted[c.topic]:
                raise InputError(f"bag {self.path}: {c.topic}",
                                 f"a message type among {sorted(wanted[c.topic])}", c.msgtype)
        raw: dict[str, tuple[list[int], list[int], list[FloatArray], set[str]]] = {}
        for conn, log_ns, data in reader.messages(connections=conns):
            msg = deserialize_cdr(reader.typestore, data, conn.msgtype)
            stamps, logs, values, frames = raw.setdefault(conn.topic, ([], [], [], set()))
            header = getattr(msg, "header", None)
            stamps.append(messages.stamp_of(msg).nanoseconds if header is not None else -1)
            logs.append(log_ns)
            try:
                values.append(wanted[conn.topic][conn.msgtype](msg))
            except InputError as exc:  # a message unlike the robot's (names, sizes)
                raise InputError(f"bag {self.path}: {exc.what}", exc.expected,
                                 exc.received) from None
            frames.add(str(header.frame_id) if header is not None else "")
        if STATE not in raw:
            raise self.missing(STATE, "the control ticks, the goal, ||a|| and the ticks at "
                                      "minimum tension", list(STATE_TYPES))
        origin = int(self.custom.get(ORIGIN_KEY, raw[STATE][0][0]))
        self.t0 = (self.origin_said if ORIGIN_KEY in self.custom
                   else f"the first {STATE} tick")
        state_log = _seconds(np.array(raw[STATE][1]), origin)
        state_t = _seconds(np.array(raw[STATE][0]), origin)
        back = np.flatnonzero(np.diff(state_t) <= 0.0)
        if back.size:
            raise InputError(f"bag {self.path}: {STATE} header.stamp",
                             "control ticks whose stamps rise from message to message",
                             f"{state_t[back[0] + 1]:.6f} s after {state_t[back[0]]:.6f} s "
                             f"(message {int(back[0]) + 1}; {back.size} such step(s))")
        out = {}
        for topic, (stamps, logs, values, frames) in raw.items():
            t = _seconds(np.array(stamps), origin)
            if stamps[0] < 0:  # no header: the log time on the stamps' clock
                t = _sample(state_log, state_t[:, None], _seconds(np.array(logs), origin),
                            hold=False)[:, 0]
            out[topic] = TopicSamples(t, np.array(values), frozenset(frames))
        return out


def _custom_data(bag: Path) -> dict[str, str]:
    """``custom_data`` of a rosbag2 folder's ``metadata.yaml`` (empty when it has none)."""
    path = bag / "metadata.yaml"
    info = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    custom = (info or {}).get("rosbag2_bagfile_information", {}).get("custom_data")
    return {str(k): str(v) for k, v in (custom or {}).items()}


def _seconds(stamps_ns: IntArray, origin_ns: int) -> FloatArray:
    """Integer stamps [ns] as seconds from ``origin_ns`` (subtracted as integers: a stamp
    near today's epoch as a float is good to 256 ns only)."""
    return (stamps_ns.astype(np.int64) - np.int64(origin_ns)) / NS_PER_S


def _sample(t_src: FloatArray, values: FloatArray, t: FloatArray, *, hold: bool) -> FloatArray:
    """``values`` (K, w) at ``t_src`` resampled at ``t``: linear between the two neighbours
    (``hold``: the latest at or before), the first and last values held outside; a sample at
    an instant of ``t_src`` is that message's value exactly."""
    order = np.argsort(t_src, kind="stable")
    t_src, values = t_src[order], values[order]
    i = np.clip(np.searchsorted(t_src, t, side="right") - 1, 0, len(t_src) - 1)
    if hold or len(t_src) == 1:
        return values[i]
    j = np.minimum(i + 1, len(t_src) - 1)
    span = t_src[j] - t_src[i]
    w = np.clip((t - t_src[i]) / np.where(span > 0.0, span, 1.0), 0.0, 1.0)
    w[span <= 0.0] = 0.0
    out = values[i] + w[:, None] * (values[j] - values[i])
    exact = w == 0.0  # (a NaN neighbour does not spoil a sample taken at a message)
    out[exact] = values[i][exact]
    return out


class _AtTicks:
    """The topics of one bag sampled at its ticks, and each signal from its first source."""

    def __init__(self, bag: _Bag, topics: Mapping[str, TopicSamples], robot: Robot, *,
                 hand_topic: str, force_topic: str) -> None:
        self.bag, self.topics, self.robot = bag, topics, robot
        self.hand_topic, self.force_topic = hand_topic, force_topic
        self.t = topics[STATE].t_s
        self.state = topics[STATE].values  # (K, 9): _STATE_COLUMNS
        self.ok = self.state[:, 0] > 0.5

    def at(self, topic: str, *, hold: bool = False, frame: bool = False) -> FloatArray | None:
        """``topic``'s values at the ticks (None: not in the bag); ``frame``: its points must
        be in the robot's base frame."""
        s = self.topics.get(topic)
        if s is None:
            return None
        base = self.robot.arm.base_frame
        if frame and not s.frames <= {base}:
            raise InputError(f"bag {self.bag.path}: {topic} header.frame_id",
                             f"the robot's base frame '{base}' (robot.yaml arm.base_frame)",
                             sorted(s.frames))
        return _sample(s.t_s, s.values, self.t, hold=hold)

    def measured_q(self, what: str) -> FloatArray:
        q = self.at(JOINTS)
        if q is None:
            raise self.bag.missing(JOINTS, what, [JOINT_STATE])
        return q

    def hand_m(self) -> tuple[FloatArray, str]:
        truth = self.hand_topic
        seen = self.at(truth, frame=True)
        if seen is not None:
            return seen, f"{truth} (ground truth)"
        hand = self.state[:, 3:6].copy()
        stop = ~self.ok  # a stop's state carries no hand: the model's of the joints instead
        if stop.any():
            q = self.at(JOINTS)
            hand[stop] = np.nan if q is None else _through(
                lambda qi: self.robot.arm.hand_pose(qi)[0], q[stop])
        return hand, f"{STATE} hand_position_m (the controller's forward kinematics)"

    def hand_goal_m(self) -> tuple[FloatArray, str]:
        accepted = self.at(GOAL, hold=True, frame=True)
        if accepted is not None:
            return accepted, f"{GOAL} (the goal accepted)"
        if not self.ok.any():
            raise InputError(f"bag {self.bag.path}: {STATE} ok",
                             f"a tick that sent the controller's command (its hand error gives "
                             f"the goal; the bag has no {GOAL})", "none")
        ticks = np.arange(len(self.t))
        last_ok = np.maximum.accumulate(np.where(self.ok, ticks, -1))
        last_ok[last_ok < 0] = int(np.argmax(self.ok))
        goal = self.state[:, 3:6] + self.state[:, 6:9]  # x + (x_des - x)
        return goal[last_ok], f"{STATE} hand_position_m + hand_error_m (the goal in force)"

    def elbow_m(self) -> tuple[FloatArray, str]:
        seen = self.at(TRUE_ELBOW, frame=True)
        if seen is not None:
            return seen, f"{TRUE_ELBOW} (ground truth)"
        poses = self.robot.poses
        if poses is None:
            raise InputError(f"bag {self.bag.path}", f"a topic {TRUE_ELBOW}, or robot.yaml "
                             f"poses.elbow_frame to place the elbow from {JOINTS}",
                             f"topics {sorted(self.bag.types)}")
        q = self.measured_q(f"the elbow (no {TRUE_ELBOW})")
        return (_through(poses.elbow_position, q),
                f"{JOINTS} through the robot model (robot.yaml poses.elbow_frame)")

    def gauge_force_n(self) -> tuple[FloatArray, str]:
        topic = self.force_topic
        seen = self.at(topic)
        if seen is None:
            return np.full((len(self.t), 1), np.nan), f"not measured (no {topic})"
        return seen, topic

    def tension_command_n(self) -> tuple[FloatArray, str]:
        seen = self.at(COMMANDS, hold=True)
        if seen is None:
            raise self.bag.missing(COMMANDS, "the commanded tensions", [JOINT_STATE])
        return seen, f"{COMMANDS} effort"

    def activation_norm(self) -> tuple[FloatArray, str]:
        return self.state[:, 2:3].copy(), f"{STATE} activation_norm"

    def q_rad(self) -> tuple[FloatArray, str]:
        seen = self.at(TRUE_JOINTS)
        if seen is not None:
            return seen, f"{TRUE_JOINTS} (ground truth)"
        return self.measured_q("the joint angles"), f"{JOINTS} (measured)"


def _through(kinematics: Callable[[FloatArray], FloatArray], q: FloatArray) -> FloatArray:
    """(K, 3) points of the robot model at the joint angles ``q`` (K, n); NaN where a joint
    angle is not finite."""
    out = np.full((len(q), 3), np.nan)
    for k, qk in enumerate(q):
        if np.all(np.isfinite(qk)):
            out[k] = kinematics(qk)
    return out


def _sources(hand_topic: str, force_topic: str) -> dict[str, tuple[str, ...]]:
    """The topics each signal may come from, beside /controller/state (the module docstring)."""
    return {"hand_m": (hand_topic, JOINTS), "hand_goal_m": (GOAL,),
            "elbow_m": (TRUE_ELBOW, JOINTS), "gauge_force_n": (force_topic,),
            "tension_command_n": (COMMANDS,), "activation_norm": (),
            "q_rad": (TRUE_JOINTS, JOINTS)}


def read_bag_signals(bag: Path, robot: Robot, names: Sequence[str], *,
                     hand_topic: str | None = None, force_topic: str | None = None,
                     origin_ns: int | None = None,
                     until_s: float | None = None) -> BagSignals:
    """The signals ``names`` of ``bag`` at its control ticks (see the module docstring).

    ``hand_topic``: the hand's ground truth (PointStamped or PoseStamped in the robot's base
    frame; default ``/mock/hand``, FK when absent); ``force_topic``: the gauge force (Float64
    or WrenchStamped; default ``/mock/gauge_force``, NaN when absent). A topic given here that
    the bag lacks is an error, as is a signal none of whose topics is in the bag.
    ``origin_ns``: the run's t = 0 on the bag's clock [ns], instead of its metadata's. With a
    t = 0 known, the ticks before it (the move to the start pose) are not the run's and are
    left out; ``until_s``: the run's length [s], the ticks after it (a recording that went on)
    left out too.
    """
    hand, force = hand_topic or TRUE_HAND, force_topic or TRUE_FORCE
    sources = _sources(hand, force)
    unknown = [n for n in names if n not in sources]
    if unknown:
        raise InputError("read_bag_signals: names", f"signals among {sorted(sources)}", unknown)
    decoders = {STATE: STATE_TYPES, GOAL: POSITION_TYPES, hand: POSITION_TYPES,
                TRUE_ELBOW: POSITION_TYPES, force: FORCE_TYPES,
                JOINTS: _joint_types(JOINTS, robot.arm.joint_names, "position"),
                TRUE_JOINTS: _joint_types(TRUE_JOINTS, robot.arm.joint_names, "position"),
                COMMANDS: _joint_types(COMMANDS, robot.muscle_names, "effort")}
    with _Bag(bag) as b:
        if origin_ns is not None:
            b.custom = {**b.custom, ORIGIN_KEY: str(int(origin_ns))}
            b.origin_said = f"the run's t = 0 given, {origin_ns * 1e-9:.6f} s on the bag's clock"
        for topic, types in ((hand_topic, POSITION_TYPES), (force_topic, FORCE_TYPES)):
            if topic is not None and topic not in b.types:
                raise b.missing(topic, "the option that names it", list(types))
        wanted = {STATE, *(topic for n in names for topic in sources[n])}
        topics = b.read({t: decoders[t] for t in wanted})
    ticks = _AtTicks(b, topics, robot, hand_topic=hand, force_topic=force)
    arrays, said = {}, {"time_s": b.t0}
    for name in names:
        arrays[name], said[name] = getattr(ticks, name)()
    # the run's own ticks: from its t = 0 when the bag (or the caller) says where that is
    run = ticks.t >= -1e-9 if ORIGIN_KEY in b.custom else np.ones(len(ticks.t), dtype=bool)
    if until_s is not None:
        run &= ticks.t <= until_s + 1e-9
    arrays = {name: values[run] for name, values in arrays.items()}
    t, ok, state = ticks.t[run], ticks.ok[run], ticks.state[run]
    return BagSignals(b.path, t, arrays, said, int(np.count_nonzero(~ok)),
                      _episodes(t, state[:, 1]), BagRun.from_custom_data(b.custom),
                      any(t.startswith("/mock/") for t in b.types))


def recorded_run(bag: Path) -> BagRun | None:
    """What ``bag``'s metadata says of its run
    (:class:`~musculo_control.sim.rosbag_log.BagRun`), None when it does not say; reads no
    message."""
    return BagRun.from_custom_data(_Bag(bag).custom)


def _episodes(t_s: FloatArray, codes: FloatArray) -> tuple[Episode, ...]:
    """The stretches of ticks not running (as :class:`~musculo_control.safety.episodes.
    EpisodeLog` groups them), named by the supervisor's states."""
    out: list[Episode] = []
    start, ticks = 0.0, 0
    states: dict[str, None] = {}  # the states seen in the episode, in order
    for t, code in zip(t_s, codes):
        state = _STATE_NAMES.get(int(code), SupervisorState.FAULT)
        if state == SupervisorState.RUNNING:
            if ticks:
                out.append(Episode(start, float(t), ticks, tuple(states), "from the bag"))
                ticks, states = 0, {}
            continue
        if not ticks:
            start = float(t)
        ticks += 1
        states.setdefault(str(state))
    if ticks:
        out.append(Episode(start, float("nan"), ticks, tuple(states), "from the bag"))
    return tuple(out)
