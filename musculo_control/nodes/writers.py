"""The publishers of a topic as the middleware's graph lists them, for a
:class:`~musculo_control.safety.authority.WriterWatch` (doc/ros.md "Command authority").

``Node.get_publishers_info_by_topic`` gives each publisher's node name, namespace and endpoint
id on Humble, Jazzy and Kilted alike. Building that list costs tens of microseconds, so a tick
first asks the cheaper count of publishers and reads the list only when the count changed or
the last list was not all authorised and named (then until it is). An unnamed writer's grace
(``authority.unknown_writer_s``) is judged on :attr:`GraphWriters.read_s`, the wall clock:
discovery runs on it, while simulated time may stand, leap or run faster. The count is asked of the
node's handle with the topic name expanded once (``Node.count_publishers`` expands and
validates it in Python at every call: three times the cost).
"""

from __future__ import annotations

import time
from typing import Any

from rclpy.expand_topic_name import expand_topic_name
from rclpy.node import Node

from musculo_control.safety.authority import Writer, node_name

#: The key of a sample's publisher id in the message info of ``take_message``: rclpy of Kilted
#: gives ``{"implementation_identifier": str, "data": bytes}``; Humble and Jazzy have no such
#: key (doc/ros.md "Command authority").
PUBLISHER_GID = "publisher_gid"


def writer_of(info: Any) -> bytes | None:
    """A sample's publisher id from the message info rclpy gave with it, or ``None``."""
    if not isinstance(info, dict):
        return None
    gid = info.get(PUBLISHER_GID)
    if isinstance(gid, dict):
        gid = gid.get("data")
    if isinstance(gid, (bytes, bytearray, list, tuple)):
        return bytes(gid)
    return None


def fully_qualified(node: Node, name: str) -> str:
    """A node name relative to ``node``'s namespace, made absolute (an absolute one as is)."""
    if name.startswith("/"):
        return name
    return node_name(node.get_namespace(), name)


class GraphWriters:
    """The publishers of one topic, read from ``node``'s graph (see the module docstring)."""

    def __init__(self, node: Node, topic: str) -> None:
        self.node = node
        self.topic = topic
        # expanded once: Node.count_publishers expands and validates the name at every call
        self._name = expand_topic_name(topic, node.get_name(), node.get_namespace())
        self._count = -1
        self._writers: list[Writer] = []
        self.reads = 0  # full reads of the list
        self._judged = -1  # the read last handed out by :meth:`to_judge`
        #: when :meth:`to_judge` last handed out a list (monotonic wall clock) [s]: the time to
        #: judge it at
        self.read_s = 0.0

    def writers(self, clean: bool) -> list[Writer]:
        """The publishers now; ``clean``: the last list was all authorised and named (so an
        unchanged count means an unchanged list)."""
        handle = self.node.handle
        with handle:
            count = handle.get_count_publishers(self._name)
        if count != self._count or not clean:
            self._count = count
            self.reads += 1
            self._writers = [Writer(node_name(i.node_namespace, i.node_name),
                                    bytes(i.endpoint_gid))
                             for i in self.node.get_publishers_info_by_topic(self.topic)]
        return self._writers

    def to_judge(self, clean: bool) -> list[Writer] | None:
        """The publishers now if they must be judged, else None. ``clean``: the last verdict
        admitted every writer. A list unchanged since it was last handed out and judged clean
        would be judged clean again, at the same verdict (no unnamed writer's grace period
        runs), so it is not handed out; a list read again, or any list while the verdict is not
        clean, is."""
        writers = self.writers(clean)
        if clean and self.reads == self._judged:
            return None
        self.read_s = time.monotonic()
        self._judged = self.reads
        return writers
