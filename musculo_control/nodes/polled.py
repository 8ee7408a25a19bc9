"""Polled inputs (:class:`PolledInputs`). rclpy's executor costs a few hundred microseconds of
CPU per wake-up on the 2-core test machine, so a node that would wake for every one of 500
joint states per second only to keep the newest spends a quarter of a core on nothing. A node
that acts at its own tick (dynamics at 20 Hz, the QP at 125 Hz, the drivers' output ticks)
instead takes the newest sample of such a stream at the tick, from a subscription that the
executor never waits on: DDS keeps the newest sample (KEEP_LAST 1) in its own thread, and the
tick takes it with the call rclpy's executor and ``wait_for_message`` use themselves. The
subscriptions live on a hidden helper node (``_<node>_inputs``, same namespace) that is never
spun; command-line topic remaps do not apply to it (use namespaces instead).

On simulated time in lockstep a tick may first wait for a sample the clock says was sent
(:meth:`PolledSubscription.await_stamp`, :mod:`musculo_control.loop.lockstep`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from musculo_control.messages import JointArrays
from musculo_control.nodes.writers import writer_of
from musculo_control.serialized import SerializedJointStateReader

#: Poll period of :meth:`PolledSubscription.await_stamp` [s] (wall): a sample in flight
#: arrives within a fraction of a millisecond on an idle machine.
_AWAIT_POLL_S = 0.0002


def _never_called(msg: Any) -> None:  # the executor never spins the input node
    return None


class PolledSubscription:
    """The newest message of one topic, taken when asked (see :class:`PolledInputs`)."""

    def __init__(self, node: Node, msg_type: Any, topic: str, qos: QoSProfile,
                 stamp_of: Callable[[Any], float] | None = None, raw: bool = False) -> None:
        self.topic = topic
        self._sub = node.create_subscription(msg_type, topic, _never_called, qos, raw=raw)
        self._type = msg_type
        self._raw = raw  # take the serialized bytes (musculo_control.serialized)
        self._stamp_of = stamp_of  # a message's stamp [s] (needed by await_stamp)
        # taken while waiting (await_stamp), for the next take: (message, publisher id or None)
        self._kept: list[tuple[Any, bytes | None]] = []
        self._newest_s = -float("inf")  # stamp of the newest message taken
        #: the stamp a wait timed out on: no more waits until a message that new comes (the
        #: publisher stopped, or its stream runs behind, e.g. delayed: one wait, not one a tick)
        self._stalled_at = float("inf")

    def take_newest(self) -> Any | None:
        """The newest message received since the last call, or ``None``."""
        taken = self.take_all()
        return taken[-1] if taken else None

    def take_all(self) -> list[Any]:
        """Every message queued since the last call (at most the QoS depth), oldest first."""
        if self._kept or self._stamp_of is not None:
            return [msg for msg, _ in self.take_all_from()]
        # the common case, without the publisher ids nobody asked for
        out = []
        handle = self._sub.handle
        with handle:
            while True:
                got = handle.take_message(self._type, self._raw)
                if got is None:
                    return out
                out.append(got[0])

    def take_all_from(self) -> list[tuple[Any, bytes | None]]:
        """As :meth:`take_all`, each message with its publisher's id where rclpy gives one
        (:func:`~musculo_control.nodes.writers.writer_of`), else ``None``."""
        out, self._kept = self._kept, []
        return out + self._take()

    def await_stamp(self, due_s: float, wait_s: float) -> bool:
        """Wait (wall time, at most ``wait_s``) until a message stamped ``due_s`` or later has
        been received; messages taken meanwhile stay for the next take. Once a wait times out
        (the publisher stopped, its stream runs behind, or the lockstep gave up on it) none is
        waited for again until the stream is on time (a message as new as the last stamp asked
        for while it was not). A stream that has sent nothing yet is not waited for: its
        publisher may still be starting while the clock runs, and a tick held that long would
        act on a clock reading the rest of the graph has left behind. Whether such a message
        is here."""
        if not math.isfinite(due_s):
            return False  # no stamp to wait for
        deadline = time.monotonic() + wait_s
        while True:
            self._kept += self._take()
            if self._newest_s >= due_s - 1e-9:
                return True
            if self._newest_s == -float("inf"):
                return False
            if self._stalled_at < float("inf") or time.monotonic() >= deadline:
                # the newest stamp asked for while stalled: waits resume once the stream is on
                # time again, not each time it catches up with an older one
                self._stalled_at = due_s if self._stalled_at == float("inf") \
                    else max(self._stalled_at, due_s)
                return False
            time.sleep(_AWAIT_POLL_S)

    def _take(self) -> list[tuple[Any, bytes | None]]:
        out: list[tuple[Any, bytes | None]] = []
        handle = self._sub.handle
        with handle:
            while True:
                got = handle.take_message(self._type, self._raw)
                if got is None:
                    break
                out.append((got[0], writer_of(got[1])))
        if out and self._stamp_of is not None:
            self._newest_s = max(self._newest_s, max(self._stamp_of(m) for m, _ in out))
            if self._newest_s >= self._stalled_at - 1e-9:
                self._stalled_at = float("inf")
        return out


class PolledInputs:
    """A hidden, never-spun node holding a node's polled subscriptions."""

    def __init__(self, owner: Node) -> None:
        self.node = Node(f"_{owner.get_name()}_inputs", namespace=owner.get_namespace(),
                         context=owner.context, use_global_arguments=False,
                         start_parameter_services=False, enable_rosout=False)

    def subscribe(self, msg_type: Any, topic: str, depth: int = 1,
                  qos: QoSProfile | None = None,
                  stamp_of: Callable[[Any], float] | None = None,
                  raw: bool = False) -> PolledSubscription:
        """Best-effort, keep-last ``depth`` (1: only the newest matters), unless ``qos``;
        ``stamp_of`` (a message's stamp [s], -inf if it has none) enables ``await_stamp``;
        ``raw``: messages are taken as their serialized bytes."""
        return PolledSubscription(self.node, msg_type, topic, qos or self.qos(depth), stamp_of,
                                  raw)

    @staticmethod
    def qos(depth: int = 1) -> QoSProfile:
        """An input's QoS: best effort (a lost sample is one the next makes obsolete), keep
        the last ``depth``, volatile."""
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                          reliability=ReliabilityPolicy.BEST_EFFORT,
                          durability=DurabilityPolicy.VOLATILE)

    def destroy(self) -> None:
        self.node.destroy_node()


class JointStateInput:
    """A polled ``JointState`` stream taken as bytes and read by a
    :class:`~musculo_control.serialized.SerializedJointStateReader`: each take gives the
    messages' arrays in the consumer's name order, or why a message is refused (a sentence
    naming the topic), without building rclpy's message objects."""

    def __init__(self, sub: PolledSubscription, reader: SerializedJointStateReader) -> None:
        self.sub = sub
        self.reader = reader
        self.topic = sub.topic

    def take_all(self) -> list[JointArrays | str]:
        """Every message queued since the last take, oldest first."""
        read = self.reader.read
        return [read(data) for data in self.sub.take_all()]

    def take_newest(self) -> JointArrays | str | None:
        """The newest message queued since the last take, or None."""
        taken = self.sub.take_all()
        return self.reader.read(taken[-1]) if taken else None

    def take_all_from(self) -> list[tuple[JointArrays | str, bytes | None]]:
        """As :meth:`take_all`, each with its publisher's id where rclpy gives one."""
        read = self.reader.read
        return [(read(data), writer) for data, writer in self.sub.take_all_from()]
