"""Safety rules shared by the ROS-free runner and the ROS nodes (no ROS imports here).

- :mod:`~musculo_control.safety.rules`: the rules as data (:data:`RULES`, doc/safety.md's table);
- :mod:`~musculo_control.safety.config`: ``safety.yaml``;
- :mod:`~musculo_control.safety.tendon_monitor`: slack, runaway and tension tracking per tendon;
- :mod:`~musculo_control.safety.consistency`: joint angles against muscle lengths;
- :mod:`~musculo_control.safety.goal_gate`: which hand goals are used;
- :mod:`~musculo_control.safety.supervisor`: all of them around a controller, with a state
  machine and a report.
"""

from musculo_control.safety.config import SafetyConfig, load_safety_config
from musculo_control.safety.goal_gate import GoalGate, GoalRequest
from musculo_control.safety.rules import RULES, Finding, rules_markdown
from musculo_control.safety.supervisor import SafetyReport, SupervisedOutput, Supervisor

__all__ = ["RULES", "Finding", "GoalGate", "GoalRequest", "SafetyConfig", "SafetyReport",
           "SupervisedOutput", "Supervisor", "load_safety_config", "rules_markdown"]
