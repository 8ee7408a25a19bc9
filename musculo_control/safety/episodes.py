"""Stop episodes: which rules stopped the arm (held, lowered or at minimum tension), when, for
how long.

A run's count of ticks in a stop says that something happened; a user needs to know
what. :class:`EpisodeLog` follows the supervisor's reports tick by tick and groups the ticks
that did not send the controller's command into episodes: from the first such tick to the
first tick running again, with every rule that held the arm there (the faults, the latched
ones waiting for an operator, and ``holding`` for the recovery hold after them). The control
step keeps one, so the runner's files and the QP node's /diagnostics say the same.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from musculo_control.safety.supervisor import SafetyReport
from musculo_control.safety.supervisor_state import SupervisorState


class Episode(NamedTuple):
    """One stretch of ticks in a stop (held, lowered or at minimum tension)."""

    start_s: float  # the first tick in the stop [s]
    end_s: float  # the first tick running again [s] (NaN: not over yet)
    ticks: int  # ticks in the stop
    rules: tuple[str, ...]  # every rule that held the arm there, in the order first seen
    first: str  # what the first tick's report said

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def describe(self) -> str:
        lasting = ("still stopped" if math.isnan(self.end_s)
                   else f"for {1e3 * self.duration_s:.0f} ms")
        return (f"{', '.join(self.rules)} at {self.start_s:.3f} s {lasting} ({self.ticks} "
                f"ticks)")

    def as_dict(self) -> dict[str, Any]:
        return {"start_s": round(self.start_s, 4),
                "duration_s": None if math.isnan(self.end_s) else round(self.duration_s, 4),
                "ticks": self.ticks, "rules": list(self.rules), "first": self.first}


class EpisodeLog:
    """The episodes of one run (see the module docstring); keeps the last ``keep``. With
    ``from_first_tick`` times count from the first tick seen (a node's clock is an epoch time);
    otherwise they are the times given."""

    def __init__(self, keep: int = 1000, from_first_tick: bool = False) -> None:
        self.keep = keep
        self.from_first_tick = from_first_tick
        self.reset()

    def reset(self) -> None:
        self.origin_s: float | None = None if self.from_first_tick else 0.0
        self.episodes: list[Episode] = []
        self.count = 0  # episodes begun, also those no longer kept
        self.ticks = 0  # ticks in a stop, in every episode
        self._open: dict[str, Any] | None = None

    def tick(self, t_s: float, report: SafetyReport) -> None:
        """The report of the tick at ``t_s`` [s]."""
        if self.origin_s is None:
            self.origin_s = t_s
        t_s -= self.origin_s
        if report.state == SupervisorState.RUNNING:
            if self._open is not None:
                self._close(t_s)
            return
        names = [f.rule for f in (*report.faults, *report.latched)]
        if report.state == SupervisorState.HOLDING and not names:
            names = [SupervisorState.HOLDING.value]  # a plain str among the rules' names
        if self._open is None:
            self.count += 1
            self._open = {"start": t_s, "ticks": 0, "rules": {}, "first": report.summary()}
        self._open["ticks"] += 1
        self.ticks += 1
        for name in names:
            self._open["rules"].setdefault(name, None)

    def _close(self, end_s: float) -> None:
        o = self._open
        assert o is not None
        self.episodes.append(Episode(o["start"], end_s, o["ticks"], tuple(o["rules"]),
                                     o["first"]))
        del self.episodes[:-self.keep]
        self._open = None

    def all(self) -> list[Episode]:
        """Every kept episode, the one still open last (with ``end_s`` NaN)."""
        if self._open is None:
            return list(self.episodes)
        o = self._open
        return [*self.episodes, Episode(o["start"], math.nan, o["ticks"], tuple(o["rules"]),
                                        o["first"])]

    def summary(self, most: int = 5) -> str:
        """One line: how many episodes, and the first ``most`` of them."""
        episodes = self.all()
        if not episodes:
            return "never stopped"
        shown = "; ".join(e.describe() for e in episodes[:most])
        more = f"; and {self.count - most} more" if self.count > most else ""
        return f"{self.ticks} ticks in a stop in {self.count} episodes: {shown}{more}"
