"""Counting refused input messages and throttling the warnings about them, per topic.

ROS-free. rclpy's own ``throttle_duration_sec`` throttles per call site, so one helper that
warns about every topic would silence all topics after the first; this keeps one throttle per
topic and says how many warnings it held back.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class _TopicCount:
    total: int = 0
    suppressed: int = 0
    last_warned_s: float = float("-inf")
    last_reason: str = ""


@dataclass
class Rejections:
    """Per-topic counts of refused messages; :meth:`refuse` says whether to log now."""

    throttle_s: float
    _topics: dict[str, _TopicCount] = field(default_factory=dict)

    def refuse(self, topic: str, reason: str, now_s: float) -> str | None:
        """Record a refusal; returns the warning text to log now, or ``None`` (throttled)."""
        c = self._topics.setdefault(topic, _TopicCount())
        c.total += 1
        c.last_reason = reason
        if now_s - c.last_warned_s < self.throttle_s:
            c.suppressed += 1
            return None
        more = f" ({c.suppressed} more refused since the last warning)" if c.suppressed else ""
        c.suppressed = 0
        c.last_warned_s = now_s
        prefix = f"{topic}: "
        text = reason.removeprefix(prefix)
        return f"refused a message on {topic}: {text}{more}"

    def total(self, topic: str | None = None) -> int:
        if topic is not None:
            return self._topics[topic].total if topic in self._topics else 0
        return sum(c.total for c in self._topics.values())

    def summary(self) -> dict[str, str]:
        """topic -> 'N refused, last: reason' (for diagnostics key-values)."""
        return {f"refused {t}": f"{c.total}, last: {c.last_reason}"
                for t, c in self._topics.items()}
