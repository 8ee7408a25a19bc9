"""The safety rules as data: what each fault is detected by, how fast, the safe state, how the
system recovers and what it reports; plus the :class:`Finding` every check returns.

:data:`RULES` is the one source of the safety table of doc/safety.md (:func:`rules_markdown`);
the checks in :mod:`musculo_control.safety` name their findings by these rule names, and a test
holds the two together.

Severity: a *warning* is reported and control continues (the supervisor has a better state
than going limp: hold the last good goal, drop a reordered message, go on with a late input up
to its hold bound, clamp a command); a *fault*
calls its stop (:mod:`musculo_control.stopping`: hold, descend or cut) until the condition has
been absent for ``recovery_hold_s``; a *latched* fault also waits for
:meth:`Supervisor.acknowledge` (a broken tendon or a weak actuator does not mend itself, and
re-tensioning it on a guess would make the arm cycle between pulling and going limp).
"""

from __future__ import annotations

from typing import NamedTuple

WARNING = "warning"
FAULT = "fault"


class Finding(NamedTuple):
    """One rule that fired, and why (a sentence naming the joint, tendon or value)."""

    rule: str  # a name in RULES
    message: str


class Rule(NamedTuple):
    """One row of the safety table."""

    name: str
    severity: str  # WARNING or FAULT
    latched: bool  # a fault that waits for acknowledge()
    where: str  # the component that checks it (runner and ROS nodes share the component)
    detected_by: str
    detection: str  # how fast, in terms of config values
    safe_state: str
    recovery: str
    stop: str = ""  # a fault's default stop: hold, descend or cut (safety/stops.py)
    stop_why: str = ""  # why that stop


_MIN = "its stop (column stop; safety.yaml `stops.rules`)"
_HOLD = "after the condition has been absent for `recovery_hold_s`"
_ACK = "latched: after `acknowledge()` (operator) and then `recovery_hold_s`"

#: Every safety rule. Names are stable identifiers (reports, tests, diagnostics keys).
_RULES: tuple[Rule, ...] = (
    Rule("joint_state", FAULT, False, "potentiometer reader + supervisor",
         "a sample with a non-finite count, the wrong number of counts, a count at the ADC rail "
         "(out of range), an angle beyond the joint limits + `limit_margin_rad`, or counts "
         "frozen for `stuck_timeout_s` (if on)",
         "the first control tick after the sample arrives", _MIN, _HOLD),
    Rule("joint_state_late", WARNING, False, "supervisor",
         "newest joint sample older than `inputs.joint_state.late_s` at a control tick (a "
         "delayed stream, a loaded computer; a dropout's first sign)",
         "`inputs.joint_state.late_s` + one control period",
         "reported and counted; control goes on with the newest sample, its angles "
         "extrapolated by its measured velocity over its age",
         "immediate, at the next sample on time"),
    Rule("joint_state_stale", FAULT, False, "supervisor",
         "newest joint sample older than `inputs.joint_state.hold_s` at a control tick "
         "(dropout)", "`inputs.joint_state.hold_s` + one control period", _MIN, _HOLD),
    Rule("tendon_state", FAULT, False, "tendon driver + supervisor",
         "a tendon sample with a non-finite or missing count, or none received yet",
         "the first control tick after the sample arrives", _MIN, _HOLD),
    Rule("tendon_state_late", WARNING, False, "supervisor",
         "newest tendon sample older than `inputs.tendon_state.late_s` (a delayed stream)",
         "`inputs.tendon_state.late_s` + one control period",
         "reported and counted; the tendon checks go on with the newest sample",
         "immediate, at the next sample on time"),
    Rule("tendon_state_stale", FAULT, False, "supervisor",
         "newest tendon sample older than `inputs.tendon_state.hold_s` (dropout)",
         "`inputs.tendon_state.hold_s` + one control period", _MIN, _HOLD),
    Rule("driver_late", WARNING, False, "supervisor",
         "newest output of the tendon driver older than `inputs.driver_output.late_s`",
         "`inputs.driver_output.late_s` + one control period",
         "reported and counted; control goes on", "immediate, at the next output on time"),
    Rule("driver_silent", FAULT, False, "supervisor",
         "no output of the tendon driver (what it sends to the actuators) for "
         "`inputs.driver_output.hold_s`: the driver or its link is gone",
         "`inputs.driver_output.hold_s` + one control period", _MIN + " (the actuator modules' "
         "own watchdog holds their idle tension meanwhile)", _HOLD),
    Rule("driver_not_following", WARNING, False, "supervisor",
         "`follow.samples` outputs of the tendon driver in a row further than "
         "`follow.tolerance_n` outside the span of the commands sent over "
         "`inputs.muscle_commands.hold_s`: the driver stopped on its own (the commands do not "
         "reach it) while the controller runs on",
         "the driver's hold (`stops.hold_s`), then `follow.samples` of its outputs",
         "the goal is kept at the hand, so that commands reaching the arm again hold it where "
         "the driver's stop left it; control goes on",
         "when the driver follows again: the goal returns on the resume ramp, at most "
         "`resume_speed_m_s`"),
    Rule("out_of_order", WARNING, False, "every stage, on each input stream",
         "a message stamped no later than the previous one of its stream (reordered stream)",
         "on arrival", "the late message is dropped, the newest data is kept, control goes on",
         "immediate (next in-order message)"),
    Rule("snapshot_late", WARNING, False, "supervisor",
         "the newest dynamics snapshot older than `inputs.snapshot.late_s` (one late 20 Hz "
         "snapshot)",
         "`inputs.snapshot.late_s` - 50 ms after the snapshot was due + one control period",
         "reported; control goes on with the late snapshot and the fresh joint state",
         "immediate, at the next snapshot"),
    Rule("snapshot_stale", FAULT, False, "supervisor",
         "no dynamics snapshot, the newest older than `inputs.snapshot.hold_s` (two missed "
         "snapshots), or one stamped that far in the future",
         "`inputs.snapshot.hold_s` - 50 ms after the first missed snapshot + one control "
         "period", _MIN, _HOLD),
    Rule("consistency", FAULT, False, "supervisor",
         "measured muscle lengths (winch encoders) against the model's lengths at the measured "
         "joint angles: a change of the mismatch beyond `consistency.tolerance_m` from its slow "
         "baseline (stuck or slipped potentiometer, slipped encoder)",
         "as soon as the joint has moved about tolerance / moment arm (~0.05 rad) away from "
         "the frozen reading; not before (a frozen reading of a still joint is correct)",
         _MIN, _HOLD),
    Rule("tendon_snapped", FAULT, False, "supervisor (tension + consistency)",
         "a load cell below `tendons.slack_tension_n` while its winch has wound in past the "
         "muscle's path (`consistency.snap_margin_m` plus the travel allowance): a winch "
         "can only take in what the path gives back unless the tendon is gone",
         "a few milliseconds of free winding", _MIN,
         _HOLD + " (a snapped tendon stays snapped: the fault stands until it is mended)"),
    Rule("tendon_slack", FAULT, False, "tendon monitor",
         "load cell below `tendons.slack_tension_n` for `tendons.slack_samples` samples on a "
         "tendon slower than `tendons.tracking_max_rate_m_s` while at least the minimum tension "
         "is commanded (unhooked tendon, dead load cell; faster, the winch is at its speed limit "
         "and slack is the motor envelope)", "`slack_samples` tendon samples", _MIN,
         _HOLD + " (a tendon that stays unhooked keeps the fault standing)"),
    Rule("tendon_runaway", FAULT, True, "tendon monitor",
         "muscle length rate above `tendons.max_length_rate_m_s` or length beyond [l_min, "
         "l_max] +- `tendons.length_margin_m` (a snapped tendon's free winch keeps winding; "
         "the consistency check sees it first)", "when the length leaves its range", _MIN,
         _ACK),
    Rule("actuator_tracking", FAULT, True, "tendon monitor",
         "measured tension off the expected one (the sent command, `tendons.command_delay_s` "
         "later, through the actuator lag `tendons.actuator_time_constant_s`) by more than "
         "`tendons.tracking_tolerance_n` below or `tendons.tracking_excess_tolerance_n` above "
         "for `tendons.tracking_samples` samples on a tendon "
         "slower than `tendons.tracking_max_rate_m_s` (actuator saturated below its command, "
         "snapped tendon, load-cell fault), a second time after `actuator_lagging` and "
         "tracking again", "`tracking_samples` tendon samples after the restart", _MIN, _ACK),
    Rule("actuator_lagging", FAULT, False, "tendon monitor",
         "the misses of `actuator_tracking`, the first time (within "
         "`tendons.tracking_confirm_window_s`): commands that reach a module late, or not at "
         "all for a while (a stalled link on a loaded computer), leave it at its last command, "
         "which reads exactly like a weak actuator", "`tracking_samples` tendon samples", _MIN,
         _HOLD + "; a second miss after every tendon tracked again for "
         "`tendons.tracking_clean_s` is `actuator_tracking` (latched)"),
    Rule("actuator_watchdog", FAULT, False, "tendon monitor",
         "the misses of `actuator_tracking`, but every loaded tendon reads as pulled towards "
         "`tendons.watchdog_tension_n` by one common factor at the actuators' lag, or, while "
         "such an episode stands, every tendon reads that tension within "
         "`tendons.watchdog_tolerance_n`: the "
         "modules' own watchdog, because the driver's commands stopped reaching them (a late "
         "or lost link; the modules are healthy)", "`tracking_samples` tendon samples", _MIN,
         _HOLD + " (the readings follow the commands again: the link is back)"),
    Rule("goal_invalid", WARNING, False, "supervisor (goal gate)",
         "a goal with a non-finite value, a wrong shape or a rotation that is not one; a "
         "joint goal for a controller that takes hand goals",
         "the control tick it arrives at",
         "goal rejected, the last accepted goal held (the arm keeps its posture; going limp on "
         "a bad request would drop it)", "immediate, at the next valid goal"),
    Rule("goal_outside_workspace", WARNING, False, "supervisor (goal gate)",
         "a hand goal beyond the reach sphere or the box of controller.yaml `workspace`; a "
         "joint goal outside the model's joint limits",
         "the control tick it arrives at", "goal rejected, the last accepted goal held",
         "immediate, at the next valid goal"),
    Rule("no_goal", WARNING, False, "supervisor (goal gate)",
         "no goal received before the first tick with a usable joint state",
         "that tick", "the goal is the hand where it is (the arm holds its posture)",
         "at the first valid goal"),
    Rule("controller", FAULT, False, "controller + supervisor",
         "the controller's output is not ok: QP not solved (status kept), non-finite result, "
         "a snapshot the controller refuses, any exception in the tick",
         "the control tick it happens in", _MIN, _HOLD),
    Rule("command_invalid", FAULT, False, "supervisor",
         "a command with a non-finite value, the wrong length or a tension below the minimum "
         "(the controller guarantees none; the supervisor does not rely on it)",
         "the control tick it happens in", _MIN, _HOLD),
    Rule("command_saturated", WARNING, False, "supervisor + tendon driver",
         "a commanded tension above the actuator's limit `driver.max_tension_n`",
         "the control tick it happens in",
         "the command is clamped to [min, max] (the driver clamps again); control goes on",
         "immediate"),
    Rule("saturation_persistent", WARNING, False, "supervisor",
         "a tendon commanded above the limit for longer than `saturation_timeout_s`: the task "
         "asks more than the arm can give (the actuator's own current limit protects the "
         "motor; going limp would drop the arm for asking too much)",
         "`saturation_timeout_s`", "the command stays clamped; control goes on",
         "immediate, when the demand falls below the limit"),
    Rule("command_late", WARNING, False, "tendon driver",
         "no command for `inputs.muscle_commands.late_s` (the controller is late), or no "
         "tendon state from the arm for `inputs.tendon_state.late_s`",
         "`late_s` after the last one, at a 500 Hz driver tick",
         "reported; the driver keeps sending the last command", "immediate, at the next one"),
    Rule("foreign_commander", FAULT, False, "tendon driver",
         "a publisher of `muscle_commands` on another node than the controller the driver "
         "serves (the middleware graph's list of the topic's publishers), or one the graph has "
         "not named for `authority.unknown_writer_s`; /diagnostics names its node",
         "the first driver tick (500 Hz) after the graph lists it",
         "no sample of the intruder reaches `hw/tendon_commands`: where each sample carries its "
         "publisher's id (rclpy from Kilted) the controller's still pass; where not (Humble, "
         "Jazzy) they cannot be told apart and " + _MIN,
         "when the foreign publisher is gone; the driver ramps at `driver.rate_limit_n_s`"),
    Rule("foreign_actuator_writer", FAULT, True, "supervisor + mock arm",
         "a publisher of `hw/tendon_commands` on another node than the tendon driver (a "
         "second writer to the actuators); /diagnostics names its node",
         "the first control tick after the graph lists it",
         _MIN + " from the controller; the mock arm applies no command while it is there (its "
         "modules' watchdog holds their idle tension)", _ACK),
    Rule("operator_stop", FAULT, False, "supervisor + tendon driver",
         "`true` on the `operator_stop` topic (std_msgs/Bool), from anyone",
         "the next tick of each commanding node (driver 500 Hz, controller 125 Hz)",
         _MIN + "; goals and `acknowledge` are refused while it is set",
         "only `false` on `operator_stop` releases it; then " + _HOLD + ", on the resume "
         "ramp; the driver ramps at `driver.rate_limit_n_s`"),
    Rule("command_watchdog", FAULT, False, "tendon driver",
         "no command for `inputs.muscle_commands.hold_s` (the controller stopped), no tendon "
         "state from the arm for `inputs.tendon_state.hold_s`, a bad command or a clock fault",
         "`hold_s` after the last command, at a 500 Hz driver tick",
         _MIN, "at the next good command, ramped up at `driver.rate_limit_n_s`"),
)

_INPUT_LOST = ("the controller lost an input, the arm is whole: the tensions in force balanced "
               "it a tick ago and keep its posture while the input may come back; it descends "
               "if it does not")
_SENSOR_WRONG = ("a sensor reads wrong, so neither the controller's commands nor a long hold "
                 "can be trusted; the arm is lowered under control")
_UNBALANCED = ("the arm lost a force the other tensions were balanced against: holding them "
               "swings it, cutting them drops it; lowering them under control does neither "
               "at full speed")
#: The stop each fault calls by default, and why (safety.yaml ``stops.rules`` may change it).
_STOPS: dict[str, tuple[str, str]] = {
    "joint_state": ("hold", _INPUT_LOST),
    "joint_state_stale": ("hold", _INPUT_LOST),
    "tendon_state": ("hold", _INPUT_LOST),
    "tendon_state_stale": ("hold", _INPUT_LOST),
    "snapshot_stale": ("hold", _INPUT_LOST),
    "driver_silent": ("hold", "nothing the controller sends reaches the arm; it keeps "
                              "sending the tensions in force, so that a driver that comes back "
                              "finds the posture's tensions, not a fall"),
    "consistency": ("descend", _SENSOR_WRONG),
    "tendon_snapped": ("descend", _UNBALANCED),
    "tendon_slack": ("descend", _UNBALANCED),
    "tendon_runaway": ("cut", "a winch winding beyond the muscle's range: tension itself is "
                              "the hazard"),
    "actuator_tracking": ("descend", "an actuator does not deliver its command (latched): the "
                                     "other tensions are balanced against a force that is not "
                                     "there"),
    "actuator_lagging": ("hold", "commands reached a module late: holding is what the modules "
                                 "do meanwhile anyway"),
    "actuator_watchdog": ("hold", "the modules' own watchdog took over; holding the tensions "
                                  "in force lets the link come back to the posture's tensions"),
    "controller": ("hold", "a failed solve is mostly one tick's; the last command still "
                           "balances the arm"),
    "command_invalid": ("cut", "a command that is not a number, or an error in the last check "
                               "before the actuators: nothing computed can be trusted"),
    "foreign_commander": ("cut", "someone else commands the tendons and, without sample ids, "
                                 "the controller's commands cannot be told from theirs"),
    "foreign_actuator_writer": ("cut", "a second writer reaches the actuators directly; the "
                                       "mock arm applies nothing while it is there"),
    "operator_stop": ("cut", "the operator stops the arm because of what the tendons do to "
                             "something or someone: the tension goes at once"),
    "command_watchdog": ("hold", "the controller's commands stopped (its process paused or "
                                 "died): the driver holds, then descends, on its own clock; a "
                                 "bad command or a clock fault of its own is a cut"),
}
RULES: tuple[Rule, ...] = tuple(
    r._replace(stop=_STOPS[r.name][0], stop_why=_STOPS[r.name][1]) if r.name in _STOPS else r
    for r in _RULES)

RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULES)
_BY_NAME = {r.name: r for r in RULES}


def rule(name: str) -> Rule:
    """The rule called ``name`` (KeyError lists the known ones)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown safety rule {name!r}; rules are: {list(RULE_NAMES)}") from None


def rules_markdown() -> str:
    """The safety table as Markdown (doc/safety.md holds this text)."""
    lines = ["| rule | severity | checked by | detected by | how fast | stop | safe state "
             "| recovery |",
             "|---|---|---|---|---|---|---|---|"]
    for r in RULES:
        severity = "fault (latched)" if r.latched else r.severity
        cells = [f"`{r.name}`", severity, r.where, r.detected_by, r.detection, r.stop or "-",
                 r.safe_state, r.recovery]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def stops_markdown() -> str:
    """The stop of every fault rule and why, as Markdown (doc/safety.md holds this text)."""
    category = {"hold": 2, "descend": 1, "cut": 0}
    lines = ["| rule | stop | category | why |", "|---|---|---|---|"]
    for r in RULES:
        if r.stop:
            lines.append(f"| `{r.name}` | {r.stop} | {category[r.stop]} | {r.stop_why} |")
    return "\n".join(lines) + "\n"
