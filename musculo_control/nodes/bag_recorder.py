"""A rosbag2 recorder inside a node: what ``ros2 bag record -s mcap`` writes, without the CLI.

For a program that drives the node graph (the paper's experiments) and must record it where
``ros2 bag`` is not installed (the ROS 2 wheels of PyPI have no rosbag2).
:class:`BagRecorder` subscribes to the topics it is given on the caller's node, with
``raw=True`` (the serialized CDR bytes: no message is deserialized), and writes them with
``rosbags`` as ``ros2 bag record -s mcap`` lays a bag out: a folder holding ``metadata.yaml``
and one ``.mcap`` file (zstd chunks, ``ros2msg`` schemas, CDR messages, the publishers'
offered QoS per channel), the same layout as the runner's bags
(:mod:`musculo_control.sim.rosbag_log`), so ``musculo score``, ``ros2 bag play``, Foxglove and
PlotJuggler read it.

**Log time** is the receive time on the node's clock, as ``ros2 bag record`` takes it: ROS time,
that is the simulated time of ``/clock`` when the node has ``use_sim_time`` (a message received
before the first ``/clock`` gets 0). Header stamps are the publishers', untouched.

**Off the executor's path.** A message's callback reads the clock, counts it and puts the bytes
on a queue; a thread of the recorder writes them. :meth:`BagRecorder.close` stops recording,
writes what is queued and finalizes the bag (the MCAP index and ``metadata.yaml``).

**QoS, as rosbag2 chooses it.** Each topic's reader asks for what its publishers offer
(``node.get_publishers_info_by_topic``): RELIABLE when every publisher is reliable, else
BEST_EFFORT; TRANSIENT_LOCAL when every one is, else VOLATILE (rosbag2's
``adapt_request_to_offers``); RELIABLE and VOLATILE when no publisher is seen yet; always
KEEP_LAST :data:`DEPTH` (rosbag2 keeps 10; a Python executor can be late by more than 10
samples of a 500 Hz stream). ``qos_overrides`` fixes a topic's reader instead (as
``--qos-profile-overrides-path``): best effort, for instance, on a computer whose load could
leave a reliable reader unacknowledged and so stall the node publishing to it (doc/timing.md).

**A publisher that appears later** is recorded (rosbag2 only warns when it cannot hear one):
every :data:`RECHECK_PERIOD_S` (a steady-clock timer, so it runs when simulated time stands
still) the recorder looks at the publishers again and replaces a topic's reader when one of
them cannot talk to it (a best-effort publisher and a reliable reader; a volatile publisher and
a transient-local reader), or when nothing has been heard on the topic yet and the offers ask
for another QoS (a transient-local publisher's last messages then arrive). Chosen over one
reader compatible with every publisher (best effort, volatile) because that one would lose what
rosbag2 keeps: retransmissions of the reliable streams and the last messages of the latched
ones. In a handover the new reader is made before the old one goes, and the old one's messages
are kept until the new one brings its first; the new one's first :data:`DEDUPE_WINDOW` messages
are dropped when they equal one the old one brought, so nothing is lost or recorded twice while
the two readers deliver within that many messages of each other (a header-less message, such as
a Float64, that repeats a value within that window is dropped too). The old reader is destroyed
at the next check (or after :data:`HANDOVER_TIMEOUT_S` if the new one hears nothing).

The recorder's subscriptions and its timer share one mutually exclusive callback group; readers
are replaced and destroyed in that timer's callback, on the caller's executor thread (an rclpy
executor must not find an entity it waits on destroyed by another thread): :meth:`close` waits
for it up to :data:`CLOSE_WAIT_S` and destroys them itself only when the node is not spun.
Spin the node with the EventsExecutor where rclpy has it (:mod:`musculo_control.nodes.executors`):
the single-threaded executor's cost of a wake-up is paid for every message, and the recorder's
callback itself is a few microseconds.

The bag's types come from rosbags' ROS 2 Humble store plus this project's
(:mod:`musculo_control.msg_types`), built here as :mod:`musculo_control.sim.rosbag_log` builds
its own (a node may not import the simulation: test/test_ros_free.py); the tests check that the
two give every recorded type the same definition hash.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import queue
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosbags.interfaces import (
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer

from musculo_control import msg_types
from musculo_control.errors import InputError
from musculo_control.stamps import NS_PER_S

#: Depth of every reader's queue (KEEP_LAST) [messages].
DEPTH = 100
#: How often the publishers are looked at again [s] (steady clock; rosbag2 polls at 0.1 s).
RECHECK_PERIOD_S = 0.2
#: How long a replaced reader is kept when its successor hears nothing [s].
HANDOVER_TIMEOUT_S = 5.0
#: The new reader's first messages compared with the old reader's last ones, in a handover.
DEDUPE_WINDOW = 8
#: Wall time :meth:`BagRecorder.close` waits for the executor to destroy the readers [s].
CLOSE_WAIT_S = 2.0


#: rosbags' typestore of every type a bag may hold (:func:`msg_types.bag_typestore`)
bag_typestore = msg_types.bag_typestore


def requested_qos(offers: Sequence[QoSProfile]) -> QoSProfile:
    """The reader's QoS for publishers offering ``offers``, as rosbag2 adapts it (see the
    module docstring); RELIABLE and VOLATILE when there is no offer."""
    reliable = all(o.reliability == ReliabilityPolicy.RELIABLE for o in offers)
    latched = bool(offers) and all(o.durability == DurabilityPolicy.TRANSIENT_LOCAL
                                   for o in offers)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=DEPTH,
                      reliability=(ReliabilityPolicy.RELIABLE if reliable
                                   else ReliabilityPolicy.BEST_EFFORT),
                      durability=(DurabilityPolicy.TRANSIENT_LOCAL if latched
                                  else DurabilityPolicy.VOLATILE))


def hears(reader: QoSProfile, writer: QoSProfile) -> bool:
    """Whether a reader of QoS ``reader`` matches a writer of ``writer`` (reliability and
    durability: the recorder asks for no deadline and automatic liveliness)."""
    deaf = ((reader.reliability == ReliabilityPolicy.RELIABLE
             and writer.reliability == ReliabilityPolicy.BEST_EFFORT)
            or (reader.durability == DurabilityPolicy.TRANSIENT_LOCAL
                and writer.durability == DurabilityPolicy.VOLATILE))
    return not deaf


def bag_qos(profile: QoSProfile) -> Qos:
    """``profile`` as rosbags writes it in the metadata (the rmw enums' values)."""
    def span(duration: Any) -> QosTime:
        return QosTime(*divmod(int(duration.nanoseconds), NS_PER_S))

    return Qos(QosHistory(int(profile.history)), int(profile.depth),
               QosReliability(int(profile.reliability)), QosDurability(int(profile.durability)),
               span(profile.deadline), span(profile.lifespan),
               QosLiveliness(int(profile.liveliness)), span(profile.liveliness_lease_duration),
               bool(profile.avoid_ros_namespace_conventions))


@dataclass
class _Topic:
    """One recorded topic: its reader, the one being replaced and what was heard."""

    name: str
    type_name: str
    msg_class: Any
    override: QoSProfile | None
    subscription: Any = None
    qos: QoSProfile | None = None
    generation: int = 0  # of the current reader; a message of an older one is the old reader's
    retiring: list[tuple[Any, float]] = field(default_factory=list)  # (reader, since [s])
    switched: bool = True  # the current reader has brought a message (or replaced none)
    recent_old: deque[bytes] = field(default_factory=lambda: deque(maxlen=DEDUPE_WINDOW))
    dedupe_left: int = 0
    received: int = 0
    offers: list[Qos] = field(default_factory=list)  # the publishers' QoS, for the metadata


class BagRecorder:
    """Record ``topics`` (name -> ROS type, e.g. ``{"/joint_states":
    "sensor_msgs/msg/JointState"}``) heard by ``node`` into the new rosbag2 folder ``folder``
    (MCAP storage). The caller spins ``node``; ``close()`` (or leaving a ``with`` block)
    finalizes the bag. ``custom_data``: strings written into ``metadata.yaml``
    ``custom_data``; ``qos_overrides``: topic -> the QoS of its reader instead of the one the
    publishers' offers give. See the module docstring."""

    def __init__(self, node: Node, folder: Path | str, topics: Mapping[str, str], *,
                 custom_data: Mapping[str, str] | None = None,
                 qos_overrides: Mapping[str, QoSProfile] | None = None) -> None:
        overrides = dict(qos_overrides or {})
        unknown = sorted(set(overrides) - set(topics))
        if unknown:
            raise InputError("qos_overrides", f"topics recorded ({sorted(topics)})", unknown)
        for key, value in (custom_data or {}).items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise InputError("custom_data", "str keys and values (rosbag2 keeps strings)",
                                 {key: value})
        self._topics = {name: _Topic(name, kind, _message_class(name, kind), overrides.get(name))
                        for name, kind in topics.items()}
        folder = Path(folder)
        if folder.exists():
            raise InputError("bag folder", "a path that does not exist yet", str(folder))
        self.folder = folder
        self._node = node
        self._clock = node.get_clock()
        self._writer = Writer(folder, version=8, storage_plugin=StoragePlugin.MCAP)
        # zstd chunks inside the MCAP file, as `ros2 bag record -s mcap` writes by default
        self._writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
        for key, value in (custom_data or {}).items():
            self._writer.set_custom_data(key, value)
        self._writer.open()
        self._queue: queue.SimpleQueue[tuple[_Topic, int, bytes] | None] = queue.SimpleQueue()
        self._closing = False
        self._closed = False
        self._released = threading.Event()
        self._release_lock = threading.Lock()
        self._spin_thread: int | None = None  # the executor thread that ran our timer
        self.error: BaseException | None = None  # what stopped the writing thread
        self._group = MutuallyExclusiveCallbackGroup()
        for topic in self._topics.values():
            self._subscribe(topic, self._offers(topic))
        self._timer = node.create_timer(RECHECK_PERIOD_S, self._recheck,
                                        callback_group=self._group,
                                        clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._thread = threading.Thread(target=self._write_all, name="bag_recorder", daemon=True)
        self._thread.start()

    # -- readers (on the executor's thread) ---------------------------------------------------
    def _offers(self, topic: _Topic) -> list[QoSProfile]:
        infos = self._node.get_publishers_info_by_topic(topic.name)
        offers = [i.qos_profile for i in infos if i.topic_type == topic.type_name]
        topic.offers = [bag_qos(o) for o in offers]  # a new list: the writer reads it whole
        return offers

    def _subscribe(self, topic: _Topic, offers: Sequence[QoSProfile]) -> None:
        qos = topic.override if topic.override is not None else requested_qos(offers)
        callback = functools.partial(self._on_message, topic, topic.generation)
        topic.subscription = self._node.create_subscription(
            topic.msg_class, topic.name, callback, qos, callback_group=self._group, raw=True)
        topic.qos = qos

    def _on_message(self, topic: _Topic, generation: int, data: bytes) -> None:
        if self._closing:
            return
        t_ns = self._clock.now().nanoseconds
        if generation != topic.generation:  # a reader being replaced
            if topic.switched:
                return
            topic.recent_old.append(data)
        elif topic.dedupe_left > 0:
            topic.switched = True
            topic.dedupe_left -= 1
            if data in topic.recent_old:  # both readers brought it
                return
        if topic.received == 0 and not topic.offers:  # a publisher found since: the metadata's
            self._offers(topic)
        topic.received += 1
        self._queue.put((topic, t_ns, data))

    def _recheck(self) -> None:
        self._spin_thread = threading.get_ident()
        if self._closing:
            self._release()
            return
        now = time.monotonic()
        for topic in self._topics.values():
            if topic.retiring and (topic.switched
                                   or now - topic.retiring[-1][1] > HANDOVER_TIMEOUT_S):
                for reader, _ in topic.retiring:
                    self._node.destroy_subscription(reader)
                topic.retiring.clear()
            offers = self._offers(topic)
            if topic.override is not None or not offers or topic.qos is None:
                continue
            wanted = requested_qos(offers)
            if (wanted.reliability, wanted.durability) == (topic.qos.reliability,
                                                           topic.qos.durability):
                continue
            deaf = not all(hears(topic.qos, o) for o in offers)
            if deaf or (topic.received == 0 and not topic.retiring):
                self._replace(topic, offers)

    def _replace(self, topic: _Topic, offers: Sequence[QoSProfile]) -> None:
        old = topic.qos
        topic.retiring.append((topic.subscription, time.monotonic()))
        topic.generation += 1
        topic.switched = False
        topic.recent_old.clear()
        topic.dedupe_left = DEDUPE_WINDOW
        self._subscribe(topic, offers)
        new = topic.qos
        if old is not None and new is not None:
            self._node.get_logger().info(
                f"bag: {topic.name} now read {_qos_text(new)} (was {_qos_text(old)}): "
                f"{len(offers)} publisher(s) offer {[_qos_text(o) for o in offers]}")

    def _release(self) -> None:
        """Destroy the readers and the timer (once)."""
        with self._release_lock:
            if self._released.is_set():
                return
            self._timer.cancel()
            for topic in self._topics.values():
                for reader in [topic.subscription, *(r for r, _ in topic.retiring)]:
                    self._node.destroy_subscription(reader)
                topic.retiring.clear()
            self._node.destroy_timer(self._timer)
            self._released.set()

    # -- writing (on the recorder's thread) ---------------------------------------------------
    def _write_all(self) -> None:
        store = bag_typestore()
        connections: dict[str, Any] = {}

        def connection(topic: _Topic) -> Any:
            if topic.name not in connections:
                connections[topic.name] = self._writer.add_connection(
                    topic.name, topic.type_name, typestore=store,
                    offered_qos_profiles=topic.offers)
            return connections[topic.name]

        try:
            while (item := self._queue.get()) is not None:
                topic, t_ns, data = item
                self._writer.write(connection(topic), t_ns, data)
            for topic in self._topics.values():  # the topics never heard are in the bag too
                connection(topic)
            self._writer.close()
        except Exception as exc:  # noqa: BLE001 - raised again by close()
            self.error = exc
            self._closing = True  # nothing more is queued
            self._node.get_logger().error(f"bag {self.folder}: writing stopped: {exc!r}")

    # -- the caller's side ----------------------------------------------------------------------
    def set_custom_data(self, key: str, value: str) -> None:
        """One more ``metadata.yaml`` ``custom_data`` entry, written when the bag is closed
        (a value known only once recording runs: the run's t = 0)."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise InputError("custom_data", "str keys and values (rosbag2 keeps strings)",
                             {key: value})
        self._writer.set_custom_data(key, value)

    def stats(self) -> dict[str, int]:
        """Messages recorded so far, per topic."""
        return {name: topic.received for name, topic in self._topics.items()}

    def reader_qos(self, topic: str) -> QoSProfile:
        """The QoS of ``topic``'s current reader."""
        recorded = self._topics.get(topic)
        if recorded is None or recorded.qos is None:
            raise InputError("topic", f"one of {sorted(self._topics)}", topic)
        return recorded.qos

    def close(self) -> dict[str, int]:
        """Stop recording, write what is queued, finalize the bag; the messages per topic.
        Raises what stopped the writing, if anything did. Idempotent."""
        if not self._closed:
            self._closing = True
            # the readers go on the executor's thread (the timer's next run) if it spins
            if threading.get_ident() == self._spin_thread or \
                    not self._released.wait(CLOSE_WAIT_S):
                self._release()
            self._queue.put(None)
            self._thread.join()
            self._closed = True
        if self.error is not None:
            raise self.error
        return self.stats()

    def __enter__(self) -> BagRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _message_class(topic: str, type_name: str) -> Any:
    """The rclpy class of ``type_name`` (``package/msg/Name``), after checking ``topic``'s
    name and that the bag's typestore knows the type."""
    if not topic.startswith("/"):
        raise InputError("topic name", "an absolute name (starting with '/')", topic)
    known = bag_typestore().types
    if type_name not in known:
        close = difflib.get_close_matches(type_name, list(known), n=3)
        hint = f" (close: {', '.join(close)})" if close else ""
        raise InputError(f"type of {topic}",
                         f"a type of ROS 2 Humble or musculo_control_msgs{hint}", type_name)
    package, kind, name = type_name.split("/")
    try:
        return getattr(importlib.import_module(f"{package}.{kind}"), name)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"type of {topic}", f"{type_name} importable here ({exc})",
                         type_name) from exc


def _qos_text(qos: QoSProfile) -> str:
    return f"{qos.reliability.name}/{qos.durability.name}"
