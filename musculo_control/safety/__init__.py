"""Safety rules shared by the ROS-free runner and the ROS nodes (no ROS imports here).

- :mod:`~musculo_control.safety.rules`: the rules as data (:data:`RULES`, doc/safety.md's table);
- :mod:`~musculo_control.safety.config`: ``safety.yaml``;
- :mod:`~musculo_control.safety.tendon_monitor`: slack, runaway and tension tracking per tendon;
- :mod:`~musculo_control.safety.consistency`: joint angles against muscle lengths;
- :mod:`~musculo_control.safety.goal_gate`: which hand goals are used;
- :mod:`~musculo_control.safety.supervisor`: all of them around a controller, with a state
  machine (its states: :mod:`~musculo_control.safety.supervisor_state`) and a report.

The names below are loaded on first use: the tendon driver takes only its rules (authority,
operator stop) and must not load the supervisor's controller stack with them.
"""

from __future__ import annotations

import importlib
from typing import Any

#: name -> the module that defines it
_FROM = {"SafetyConfig": "config", "load_safety_config": "config", "GoalGate": "goal_gate",
         "GoalRequest": "goal_gate", "RULES": "rules", "Finding": "rules",
         "rules_markdown": "rules", "SafetyReport": "supervisor",
         "SupervisedOutput": "supervisor", "Supervisor": "supervisor",
         "SupervisorState": "supervisor_state"}

__all__ = sorted(_FROM)


def __getattr__(name: str) -> Any:
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_FROM[name]}"), name)
