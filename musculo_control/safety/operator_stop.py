"""The operator stop: a latch that an operator sets and only an operator's release clears.

Every commanding stage holds one (the controller's supervisor and the tendon driver, in the
node graph and in the ROS-free runner alike): while it is set every tendon is at the minimum
tension, and neither a new goal nor an acknowledge restarts the arm. After the release the
controller resumes on its resume ramp (``safety.yaml`` ``resume_ramp_s``, after
``recovery_hold_s``) and the driver passes the controller's commands again, ramped at
``driver.rate_limit_n_s``.

Pure logic on explicit times.
"""

from __future__ import annotations

import math

#: The topic (std_msgs/Bool: true sets the stop, false releases it) every commanding node reads.
STOP_TOPIC = "operator_stop"
#: What the stop says when the request gave no reason.
DEFAULT_REASON = "operator stop"


class OperatorStop:
    """See the module docstring."""

    def __init__(self) -> None:
        self.stopped = False
        self.reason = ""
        self.since_s = math.nan  # when the stop was set [s]
        self.stops = 0  # how many times it was set
        self.refused: dict[str, int] = {}  # what was refused while stopped (goal, acknowledge)

    def stop(self, t_s: float, reason: str = DEFAULT_REASON) -> None:
        """Set the stop at ``t_s`` [s] (again: keeps the first time and reason)."""
        if not self.stopped:
            self.stopped = True
            self.reason = reason or DEFAULT_REASON
            self.since_s = t_s
            self.stops += 1

    def release(self, t_s: float) -> bool:
        """Clear the stop; whether it was set."""
        was = self.stopped
        self.stopped = False
        self.reason = ""
        self.since_s = math.nan
        return was

    def refuse(self, what: str) -> bool:
        """Whether ``what`` (``"goal"``, ``"acknowledge"``) must be refused now; counted."""
        if self.stopped:
            self.refused[what] = self.refused.get(what, 0) + 1
        return self.stopped

    def message(self) -> str:
        """The sentence for a report while stopped."""
        refused = ", ".join(f"{n} {what}(s) refused" for what, n in self.refused.items() if n)
        return (f"{self.reason} since t = {self.since_s:.3f} s; release it on its own topic"
                + (f" ({refused})" if refused else ""))
