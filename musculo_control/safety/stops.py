"""safety.yaml ``stops``: the stop each fault rule calls and how long its phases last (the
stops themselves: :mod:`musculo_control.stopping`; the table with the reasons: doc/safety.md)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from musculo_control.config.parser import spec
from musculo_control.safety.rules import FAULT, RULES
from musculo_control.stopping import STOP_LABELS, Stop, StopSequence

#: The fault rules, each of which names its stop in safety.yaml ``stops.rules``.
FAULT_RULES: tuple[str, ...] = tuple(r.name for r in RULES if r.severity == FAULT)

#: safety.yaml ``stops.rules``: one field per fault rule, its default the table's
#: (:attr:`~musculo_control.safety.rules.Rule.stop`).
RuleStops: Any = dataclasses.make_dataclass(
    "RuleStops",
    [(r.name, str, spec(r.stop, choices=STOP_LABELS, doc=f"the stop of rule {r.name}"))
     for r in RULES if r.severity == FAULT],
    frozen=True, kw_only=True)
RuleStops.__module__ = __name__  # pickled by name with the loop's parts
RuleStops.__doc__ = ("The stop each fault rule calls (``safety.yaml`` key ``stops.rules``; "
                     "hold, descend or cut; doc/safety.md).")


@dataclass(frozen=True, kw_only=True)
class StopConfig:
    """How the stops unfold (``safety.yaml`` key ``stops``)."""

    hold_s: float = spec(0.5, gt=0.0, doc="a hold keeps the tensions in force this long, then "
                                          "descends [s]")
    descend_s: float = spec(3.0, gt=0.0, doc="a descend ramps every tension from where it is to "
                                             "the minimum over this [s]")
    rules: RuleStops = spec(RuleStops(),  # type: ignore[valid-type]
                            doc="the stop each fault rule calls")

    def stop_of(self, rule_name: str) -> Stop:
        """The stop rule ``rule_name`` calls (a rule without one, such as a warning: hold)."""
        return Stop.named(getattr(self.rules, rule_name, "hold"))

    def sequence(self, f_min_n: Any) -> StopSequence:
        """A :class:`~musculo_control.stopping.StopSequence` with these phases."""
        return StopSequence(f_min_n, self.hold_s, self.descend_s)
