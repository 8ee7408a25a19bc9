"""The safety supervisor's states (:class:`~musculo_control.safety.supervisor.Supervisor`).

A module of its own, importing nothing, so that what only reads a state (the controller-state
record, the soak, the graph tests that parse /diagnostics) need not load the supervisor's
controller stack.
"""

from __future__ import annotations

import enum


class SupervisorState(str, enum.Enum):
    """The state of the supervisor's state machine; a ``str`` whose value is the state's name,
    so that reports, /diagnostics text and JSON read ``running`` etc. (``str()`` and f-strings
    give the value, as :class:`enum.StrEnum` does from Python 3.11).

    - ``RUNNING``: the controller's command goes out, clamped to [min, max] tension;
    - ``FAULT``: a fault finding is active; the severest stop its rules call unfolds;
    - ``HOLDING``: no fault for less than ``recovery_hold_s``; the stop goes on;
    - ``LATCHED``: a latched fault's condition is gone but nobody has acknowledged it yet; its
      stop goes on.
    """

    RUNNING = "running"
    FAULT = "fault"
    HOLDING = "holding"
    LATCHED = "latched"

    def __str__(self) -> str:
        return str(self.value)
