"""Command authority: who may write a command stream, and what a stage does when someone else
does (one commander per stream, as ros2_control's resource claiming gives one controller per
command interface).

A :class:`WriterWatch` judges the writers of one stream (``muscle_commands`` at the tendon
driver, ``hw/tendon_commands`` at the controller and at the mock arm) against the nodes
authorised to write it. What it is shown comes from the middleware's graph: each writer's node
(fully qualified name) and its endpoint id. The graph may list a writer before it knows the
writer's node (discovery of the endpoint and of its node's name are separate); such an
*unnamed* writer is not trusted: its stream is withheld while it stays unnamed, and a writer
unnamed for longer than ``authority.unknown_writer_s`` is itself a foreign writer.

Where each sample comes with its writer's id and that id is one the graph lists (rclpy from
Kilted on, doc/ros.md "Command authority"), :meth:`WriterWatch.admits` passes exactly the
authorised writers' samples, also while a foreign writer is there. Otherwise (Humble and Jazzy
give no id with a sample; a middleware whose sample ids differ from its graph's) the samples of
a stream that has a foreign writer cannot be told apart, so none is used
(:attr:`WriterVerdict.admit` false: the tendon driver sends minimum tension).

Pure logic on explicit times; nothing here reads a clock or imports rclpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from musculo_control.config.parser import spec

#: The rules of a foreign writer (:mod:`musculo_control.safety.rules`): of ``muscle_commands``,
#: at the tendon driver; of ``hw/tendon_commands``, at the controller's supervisor.
FOREIGN_COMMANDER = "foreign_commander"
FOREIGN_ACTUATOR_WRITER = "foreign_actuator_writer"


@dataclass(frozen=True, kw_only=True)
class AuthorityConfig:
    """``safety.yaml`` key ``authority``: who writes the command streams."""

    unknown_writer_s: float = spec(
        2.0, gt=0.0, doc="a writer of a command stream that the graph lists without its node's "
                         "name (discovery still under way) is withheld; unnamed this long, it "
                         "is a foreign writer [s] (the nodes judge it on the wall clock, on "
                         "which discovery runs)")


class Writer(NamedTuple):
    """One writer of a stream as the graph lists it."""

    node: str  # fully qualified node name ("/ns/name"); "" while the graph does not know it
    gid: bytes  # the endpoint's id in the middleware (unique per publisher)


class WriterVerdict(NamedTuple):
    """What a :class:`WriterWatch` found at one look."""

    admit: bool  # the stream's samples may be used (every writer authorised and named)
    foreign: tuple[str, ...]  # the foreign writers, by node name (or "an unnamed node (...)")
    withheld: tuple[str, ...]  # writers still unnamed, not yet foreign

    @property
    def message(self) -> str:
        """A sentence for /diagnostics ("" when every writer is authorised)."""
        if self.foreign:
            return f"foreign writer(s) {', '.join(self.foreign)}"
        if self.withheld:
            return f"writer(s) not yet named by the graph: {', '.join(self.withheld)}"
        return ""


def node_name(namespace: str, name: str) -> str:
    """The fully qualified name of a node (``"/"`` + name in the root namespace); "" when the
    graph does not know it (rmw's ``_NODE_NAME_UNKNOWN_`` placeholders)."""
    if name.startswith("_NODE_NAME_UNKNOWN") or namespace.startswith("_NODE_NAMESPACE_UNKNOWN"):
        return ""
    return namespace.rstrip("/") + "/" + name


def _id(gid: bytes) -> bytes:
    """An endpoint id without the zero padding of rmw's fixed-size storage (24 bytes on
    Humble, 16 from Jazzy on; Fast DDS fills 16)."""
    return gid.rstrip(b"\0")


def _short_gid(gid: bytes) -> str:
    return gid.hex(".")[:23]


class WriterWatch:
    """The writers of one stream against the authorised ones (see the module docstring)."""

    def __init__(self, topic: str, authorised: Iterable[str], config: AuthorityConfig) -> None:
        """``authorised``: fully qualified node names allowed to write ``topic``."""
        self.topic = topic
        self.authorised = frozenset(authorised)
        self.config = config
        self._unnamed_since: dict[bytes, float] = {}  # gid -> first seen unnamed [s]
        self._listed: dict[bytes, bool] = {}  # gid of each listed writer -> authorised
        #: the last sample given to :meth:`admits` was judged by its writer's id
        self.identified = False
        #: a sample's id has matched a listed writer: the middleware's sample ids are its
        #: graph's, so an id the graph does not list is a writer it has not listed yet
        self.ids_match = False
        self.verdict = WriterVerdict(True, (), ())
        self.foreign_seen: list[str] = []  # every foreign writer named so far, in order

    def judge(self, writers: Sequence[Writer], now_s: float) -> WriterVerdict:
        """The verdict on the writers listed at ``now_s`` [s]."""
        foreign: list[str] = []
        withheld: list[str] = []
        listed = {}
        unnamed = {}
        for w in writers:
            listed[_id(w.gid)] = w.node in self.authorised
            if w.node in self.authorised:
                pass
            elif w.node:
                foreign.append(w.node)
            else:
                since = self._unnamed_since.get(w.gid, now_s)
                unnamed[w.gid] = since
                label = f"an unnamed node (endpoint {_short_gid(w.gid)})"
                if now_s - since >= self.config.unknown_writer_s:
                    foreign.append(label)
                else:
                    withheld.append(label)
        self._unnamed_since = unnamed
        self._listed = listed
        for name in foreign:
            if name not in self.foreign_seen:
                self.foreign_seen.append(name)
        self.verdict = WriterVerdict(not foreign and not withheld, tuple(sorted(set(foreign))),
                                     tuple(withheld))
        return self.verdict

    def admits(self, sample_gid: bytes | None) -> bool:
        """Whether a sample may be used, after the last :meth:`judge`: when its writer's id
        (``sample_gid``) is one the graph lists, exactly when that writer is authorised;
        otherwise (no id, or one the graph does not list) only if every writer listed is
        authorised and named. Once ids have matched the graph's (:attr:`ids_match`), an id the
        graph does not list is refused: its writer is newer than the graph's list (its samples
        can come before discovery lists it), so nothing says it is the controller."""
        authorised = self._lookup(sample_gid)
        self.identified = authorised is not None
        if authorised is not None:
            self.ids_match = True
        return self._admit(sample_gid, authorised)

    def from_authorised(self, sample_gid: bytes | None) -> bool:
        """:meth:`admits` without its bookkeeping: whether a sample is known to come from an
        authorised writer (for a reader that only follows a stream's progress, as the mock
        arm's lockstep does)."""
        return self._admit(sample_gid, self._lookup(sample_gid))

    def _lookup(self, sample_gid: bytes | None) -> bool | None:
        """Whether the listed writer of ``sample_gid`` is authorised; None if not listed."""
        return self._listed.get(_id(sample_gid)) if sample_gid is not None else None

    def _admit(self, sample_gid: bytes | None, authorised: bool | None) -> bool:
        if authorised is None:
            if sample_gid is not None and self.ids_match:
                return False
            return self.verdict.admit
        return authorised
