"""What a stage says about itself: a level, a sentence, a few values, and refused inputs.

The payload of the stage's ``/diagnostics`` status in a node, and what the runner's fault
matrix reads in simulated time: one object, so a fault is reported with the same words in
both. Levels are those of ``diagnostic_msgs/DiagnosticStatus``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from musculo_control.loop.rejections import Rejections

OK, WARN, ERROR, STALE = 0, 1, 2, 3
# a number inside a sentence (ages, counts, tensions): not part of what the sentence is about
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?")
LEVEL_NAMES = {OK: "OK", WARN: "WARN", ERROR: "ERROR", STALE: "STALE"}


class Health:
    """The status of one stage (see the module docstring).

    ``on_change(level, message, t_s)`` is called whenever the level or the subject changes (a
    node publishes its diagnostics at once then; the runner records the transition).
    ``warnings`` collects the throttled sentences about refused inputs, for the node to log.
    """

    def __init__(self, name: str, throttle_s: float = 1.0) -> None:
        self.name = name
        self.level = STALE
        self.message = "starting"
        self.since_s = float("nan")  # when the level last changed [s]
        self._key: object = None
        self._auto: tuple[str, str] | None = None  # the last sentence and its masked key
        self.refusals = Rejections(throttle_s)
        self.warnings: list[str] = []  # to be logged by the node, oldest first
        self.on_change: Callable[[int, str, float], None] | None = None
        #: called with (topic, reason, t_s) for every refused input message
        self.on_refuse: Callable[[str, str, float], None] | None = None

    def set(self, level: int, message: str, t_s: float, key: object = None) -> None:
        """The status at ``t_s`` [s]; ``key`` names what it is about (the rules that fired,
        say; by default the sentence with its numbers masked): a new level or a new key is a
        change, a new number in the same sentence is not."""
        if key is None:
            auto = self._auto
            if auto is not None and auto[0] == message:  # the same sentence (sample rate)
                key = auto[1]
            else:
                key = _NUMBER.sub("#", message)
                self._auto = (message, key)
        changed = level != self.level or key != self._key
        self.level, self.message, self._key = level, message, key
        if changed:
            self.since_s = t_s
            if self.on_change is not None:
                self.on_change(level, message, t_s)

    def refuse(self, topic: str, reason: str, t_s: float) -> None:
        """An input message on ``topic`` was refused at ``t_s`` [s] for ``reason``."""
        text = self.refusals.refuse(topic, reason, t_s)
        if text is not None:
            self.warnings.append(text)
        if self.on_refuse is not None:
            self.on_refuse(topic, reason, t_s)

    def take_warnings(self) -> list[str]:
        out, self.warnings = self.warnings, []
        return out

    def values(self) -> dict[str, str]:
        return self.refusals.summary()
