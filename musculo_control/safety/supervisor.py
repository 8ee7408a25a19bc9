"""The safety supervisor: every rule of :data:`~musculo_control.safety.rules.RULES` applied at
each control tick around one controller, with a small state machine and a report.

States (:class:`~musculo_control.safety.supervisor_state.SupervisorState`, as in upkie's spine:
start-up, running, fault, and a guarded way back):

- ``running``: the controller's command goes out, clamped to [min, max] tension;
- ``fault``: a fault finding is active; the severest stop its rules call
  (:mod:`musculo_control.safety.stops`: hold, descend or cut) unfolds from the tensions in force;
- ``holding``: no fault for less than ``recovery_hold_s``; the stop goes on, so a flickering
  condition cannot chatter the arm between control and its stop;
- ``latched``: a latched fault's condition is gone but nobody has called
  :meth:`Supervisor.acknowledge` yet; its stop goes on.

Warnings (a rejected goal, a dropped out-of-order message, a clamped command) are reported
and change nothing else. The controller is ticked whenever its inputs are usable, also during a
fault, so its own failures are seen and its answer is ready when control resumes.

Inputs arrive as in the QP node (:class:`~musculo_control.loop.control_step.ControlStep`
feeds them, in the runner and in the node alike): :meth:`Supervisor.tendon_sample` for each
tendon state, :meth:`Supervisor.driver_sent` for what the driver sends (the tendon monitor),
:meth:`Supervisor.offer_goal` for each goal, and :meth:`Supervisor.tick` at 125 Hz with the
newest joint state, tendon state and snapshot. Before any goal arrived, the goal is the hand
where it was at the first tick with a usable joint state (rule ``no_goal``, a warning). Nothing
here reads a clock.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections import deque
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.arrays import any_true, finite, smallest
from musculo_control.control.fresh_state import FreshStateEstimator
from musculo_control.control.goal import HandGoal, WorkspaceConfig
from musculo_control.control.output import ControlOutput, safe_output
from musculo_control.control.tick_base import Controller
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.hardware.potentiometer import PotentiometerReading
from musculo_control.hardware.tendon_driver import TendonDriverConfig, TendonState
from musculo_control.model.robot import Robot
from musculo_control.safety.config import SafetyConfig
from musculo_control.safety.consistency import ConsistencyMonitor
from musculo_control.safety.follow import CommandFollow
from musculo_control.safety.goal_gate import GoalGate
from musculo_control.safety.operator_stop import OperatorStop
from musculo_control.safety.resume import ResumeRamp
from musculo_control.safety.rules import WARNING, Finding, rule
from musculo_control.safety.supervisor_state import SupervisorState
from musculo_control.safety.tendon_monitor import TendonMonitor
from musculo_control.stopping import Stop
from musculo_control.streams import LATE, ON_TIME, STALE, OwnPause

_log = logging.getLogger(__name__)
FloatArray = npt.NDArray[np.float64]

#: The warnings of a late input, counted per rule (:attr:`Supervisor.late_ticks`).
_LATE_RULES = frozenset({"joint_state_late", "tendon_state_late", "driver_late",
                         "snapshot_late"})
#: A moment arm above this [m/rad] means the muscle spans the joint (consistency check).
_SPANS_M = 1e-4
#: Slack below the Hill f_min tolerated in a command (rounding of a f_a + f_p) [N].
_TENSION_SLACK_N = 1e-9


def _graded(add: Any, rule_prefix: str, what: str, age_s: float, bounds: Any,
            late_note: str = "") -> bool:
    """Grade a sample's age (doc/safety.md "Late inputs"; the supervisor's own pause left out,
    :class:`~musculo_control.streams.OwnPause`): stale, a finding ``<rule_prefix>_stale`` and
    False; late, a finding ``<rule_prefix>_late`` (with ``late_note``) and True; on time,
    True."""
    grade = bounds.grade(age_s)
    if grade == ON_TIME:
        return True
    text = (f"newest {what} is {age_s * 1e3:.2f} ms old (late beyond "
            f"{bounds.late_s * 1e3:.1f} ms, stale at {bounds.hold_s * 1e3:.1f} ms)")
    if grade != LATE:
        add(Finding(f"{rule_prefix}_stale", text))
        return False
    add(Finding(f"{rule_prefix}_late", text + late_note))
    return True


def _shaped(state: TendonState, m: int) -> bool:
    """Every array of a tendon state has one value per muscle."""
    return (np.shape(state.length_m) == (m,) and np.shape(state.velocity_m_s) == (m,)
            and np.shape(state.tension_n) == (m,))


class SafetyReport(NamedTuple):
    """What the supervisor found at one tick (the payload of a /diagnostics status)."""

    t_s: float
    state: SupervisorState  # running | fault | holding | latched
    faults: tuple[Finding, ...]  # fault findings active at this tick
    warnings: tuple[Finding, ...]
    latched: tuple[Finding, ...]  # latched faults waiting for acknowledge()
    #: what the stop does at this tick: hold, descend or cut ('' while running)
    stop: str = ""

    @property
    def ok(self) -> bool:
        """True when the controller's command went out."""
        return self.state == SupervisorState.RUNNING

    @property
    def level(self) -> int:
        """diagnostic_msgs/DiagnosticStatus level: 0 OK, 1 WARN, 2 ERROR.

        A fault or a latch is an ERROR. The recovery hold after a fault is a WARN: the arm is
        still at minimum tension, but nothing is wrong any more, and the fault that caused it
        was reported at ERROR when it happened."""
        if self.state == SupervisorState.HOLDING:
            return 1
        if not self.ok:
            return 2
        return 1 if self.warnings else 0

    @property
    def rules(self) -> frozenset[str]:
        """Names of every rule that fired or is latched."""
        return frozenset(f.rule for f in (*self.faults, *self.warnings, *self.latched))

    def summary(self) -> str:
        parts = [f"{f.rule}: {f.message}" for f in (*self.faults, *self.warnings)]
        parts += [f"{f.rule} (latched, acknowledge to resume): {f.message}"
                  for f in self.latched if f not in self.faults]
        head = f"{self.state} ({self.stop})" if self.stop else self.state
        return head + (": " + "; ".join(parts) if parts else "")


class SupervisedOutput(NamedTuple):
    """The command to send and the report that goes with it."""

    output: ControlOutput
    report: SafetyReport


class Transition(NamedTuple):
    """A change of state, kept in a bounded log."""

    t_s: float
    from_state: SupervisorState
    to_state: SupervisorState
    reason: str


class Supervisor:
    """Applies the safety rules around one controller (see the module docstring)."""

    def __init__(self, robot: Robot, config: SafetyConfig, workspace: WorkspaceConfig,
                 driver: TendonDriverConfig, *, use_goal_orientation: bool = True,
                 goal_extrapolation_s: float = 0.0) -> None:
        self.robot = robot
        self.config = config
        self.m = robot.n_muscles
        #: robot.yaml hill.f_min_n: the QP's lower bound, the safe state and the driver's floor
        self.tension_min_n = robot.hill.f_min_n
        self.tension_max_n = driver.max_tension_n
        self.monitor = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m,
                                     config.tendons)
        self.consistency = ConsistencyMonitor(robot.muscle_names, config.consistency)
        m, n = robot.n_muscles, robot.arm.n_joints
        self._abs_jm = np.zeros((m, n))  # scratch of the consistency check's joint-wise rate
        self._abs_qd = np.zeros(n)
        self._joint_rate = np.zeros(m)  # sum_j |Jm_ij qd_j| [m/s]
        self._spans = np.zeros((m, n))  # 1 where a muscle spans a joint (a moment arm)
        self._turn_rate = np.zeros(m)  # sum_j over the joints spanned of |qd_j| [rad/s]
        self.goals = GoalGate(workspace, robot.arm.base_frame, use_goal_orientation,
                              goal_extrapolation_s)
        self._hand = FreshStateEstimator(robot)  # the hand's state when control resumes
        self.transitions: deque[Transition] = deque(maxlen=config.log_length)
        #: the operator stop: survives reset(), only its own release clears it
        self.stop = OperatorStop()
        #: the stop the faults call (hold, descend, cut), from the tensions in force
        self.stopping = config.stops.sequence(self.tension_min_n)
        #: the supervisor's own pauses (its ticks far apart): inputs that aged with it are not late
        self.pause = OwnPause(config.inputs.own_pause_s)
        #: whether the tendon driver applies what this supervisor sends
        self.follow = CommandFollow(config.follow, config.inputs.muscle_commands.hold_s)
        self.reset()

    def reset(self, stamp_s: float = 0.0, tension_n: npt.ArrayLike | None = None) -> None:
        """Start afresh with the actuators at ``tension_n`` [N] (default minimum) at ``stamp_s``."""
        self.state = SupervisorState.RUNNING
        self.report: SafetyReport | None = None
        self._pending: dict[str, Finding] = {}  # sensor-rate findings since the last tick
        self._latched: dict[str, Finding] = {}
        self._conditions: dict[str, Finding] = {}  # faults standing until cleared (condition())
        self._last_fault_t = -math.inf
        self._saturated_since = np.full(self.m, np.nan)
        self._ramp: ResumeRamp | None = None
        #: the findings of the last comparison of tendon lengths with the joints' (consistency,
        #: tendon_snapped): they stand at the ticks that bring no new pair to compare
        self._compared: tuple[Finding, ...] = ()
        #: (m,) tendons found snapped and reading slack since (rule tendon_snapped)
        self._snapped = np.zeros(self.m, dtype=bool)
        #: control ticks at which each input was late (on with the newest sample), per rule
        self.late_ticks: dict[str, int] = {}
        self.monitor.reset(stamp_s, self.tension_min_n if tension_n is None else tension_n)
        #: the tensions in force: the last command sent, or the standing stop's [N]
        self._in_force = np.full(self.m, self.tension_min_n) if tension_n is None else \
            np.maximum(np.asarray(tension_n, dtype=float), self.tension_min_n)
        self.stopping.clear()
        self.pause.reset()
        self.follow.reset()
        self.consistency.reset()
        self.goals.reset()
        self.transitions.clear()

    # -- sensor-rate inputs -----------------------------------------------------------------------
    def offer_goal(self, goal: object, stamp_s: float, now_s: float,
                   frame_id: str | None = None) -> bool:
        """A goal received at ``now_s`` [s] (see :class:`GoalGate`); whether it was accepted.

        A refusal is reported at the next tick (rules ``goal_invalid``,
        ``goal_outside_workspace``); the last accepted goal stays in force. Refused while
        the operator stop is set (counted in its report)."""
        if self.stop.refuse("goal"):
            return False
        finding = self.goals.offer(goal, stamp_s, now_s, frame_id)
        if finding is not None:
            self._pending[finding.rule] = finding
            return False
        return True

    def offer_joint_goal(self, q_rad: npt.ArrayLike, controller: Controller) -> bool:
        """A joint goal for ``controller`` (paper: the baselines of eq. 16-17 take "goal input as
        joint pose"); whether it was accepted and handed to it. Refused, reported at the next
        tick as a hand goal is (rules ``goal_invalid``, ``goal_outside_workspace``), when it
        is not ``n`` finite angles, lies outside the model's joint limits, the controller takes
        hand goals, or the operator stop is set."""
        if self.stop.refuse("goal"):
            return False
        finding = self._joint_goal_refusal(q_rad, controller)
        if finding is not None:
            self._pending[finding.rule] = finding
            return False
        controller.set_joint_target(np.asarray(q_rad, dtype=float))  # type: ignore[attr-defined]
        return True

    def _joint_goal_refusal(self, q_rad: npt.ArrayLike, controller: Controller) -> Finding | None:
        arm = self.robot.arm
        q = np.asarray(q_rad, dtype=float)
        if not hasattr(controller, "set_joint_target"):
            return Finding("goal_invalid", f"a joint goal for controller '{controller.name}', "
                                           f"which takes hand goals: ignored")
        if q.shape != (arm.n_joints,) or not finite(q):
            return Finding("goal_invalid", f"joint goal {np.round(q, 4).tolist()}: expected "
                                           f"{arm.n_joints} finite angles [rad]")
        outside = [f"{name} {v:.3f} not in [{lo:.3f}, {hi:.3f}]" for name, v, lo, hi
                   in zip(arm.joint_names, q, arm.lower_rad, arm.upper_rad)
                   if not lo <= v <= hi]
        if outside:
            return Finding("goal_outside_workspace",
                           "joint goal outside the joint limits [rad]: " + ", ".join(outside))
        return None

    def tendon_sample(self, state: TendonState, track: bool = True) -> None:
        """Run the tendon monitor on one tendon state (a faulted sample is skipped; ``track``
        false: the driver's outputs up to it are not known, no tracking check)."""
        if state.ok and _shaped(state, self.m):
            for f in self.monitor.check(state, track):
                self._pending[f.rule] = f

    def driver_sent(self, stamp_s: float, tension_n: FloatArray) -> None:
        """The tendon driver sent ``tension_n`` [N] at ``stamp_s`` [s]."""
        self.monitor.sent(stamp_s, tension_n)
        self.follow.driver(stamp_s, tension_n)

    def condition(self, name: str, message: str) -> None:
        """A fault of rule ``name`` that stands from now on at every tick until the same call
        with an empty ``message`` (a foreign writer on a command stream, say)."""
        if message:
            self._conditions[name] = Finding(name, message)
        else:
            self._conditions.pop(name, None)

    @property
    def resuming(self) -> bool:
        """Control is ramping the goal back from where a stop left the hand."""
        return self._ramp is not None

    @property
    def tension_in_force_n(self) -> FloatArray:
        """The tensions in force: the last command sent (a copy) [N]."""
        return self._in_force.copy()

    def switch_refusal(self) -> str:
        """Why a controller may not be switched in now ('' when it may): only while the
        controller's own commands go out, not during a stop or the resume after one."""
        if self.state != SupervisorState.RUNNING:
            summary = self.report.summary() if self.report is not None else ""
            return f"the supervisor is {self.state.value}" + (f": {summary}" if summary else "")
        if self.resuming:
            return "control is resuming after a stop (the goal is on its ramp back)"
        return ""

    def hold_hand_at(self, t_s: float, q_rad: npt.ArrayLike) -> HandGoal:
        """From ``t_s`` [s] the goal in force is to hold the hand where the joints ``q_rad``
        put it (a controller switched in starts from where the arm is)."""
        q = np.asarray(q_rad, dtype=float)
        hand = self._hand.hand_state(q, np.zeros_like(q))
        goal = HandGoal.hold(hand.position_m, hand.rotation)
        self.goals.hold(goal, t_s)
        return goal

    def acknowledge(self) -> tuple[Finding, ...]:
        """An operator clears the latched faults (they latch again if their condition stands);
        refused (nothing cleared) while the operator stop is set."""
        if self.stop.refuse("acknowledge"):
            return ()
        cleared = tuple(self._latched.values())
        self._latched.clear()
        self.consistency.reset()
        self._compared = ()
        return cleared

    # -- the tick ---------------------------------------------------------------------------------
    def tick(self, t_s: float, controller: Controller, *, joints: PotentiometerReading | None,
             tendons: TendonState | None, snapshot: DynamicsSnapshot | None,
             driver_stamp_s: float | None = None,
             joint_faults: Sequence[str] = (),
             recent_joints: Sequence[PotentiometerReading] = ()) -> SupervisedOutput:
        """One control tick: check every input, tick the controller, check its command.

        ``driver_stamp_s``: the stamp of the tendon driver's newest output received (-inf:
        none yet; ``None``: not watched). ``recent_joints``: the last few joint readings, oldest
        first, so that the consistency check pairs the newest tendon sample with the joint
        sample of its instant when the newest joint sample is of another (joints and tendons
        reach a node by different hops). Never raises: an exception inside (a bug) is itself
        a fault, with minimum tension."""
        try:
            return self._tick(float(t_s), controller, joints, tendons, snapshot, driver_stamp_s,
                              joint_faults, recent_joints)
        # the last check before the actuators: any bug in it (or in the controller's own net)
        # means minimum tension, and its traceback in the log
        except Exception as exc:  # noqa: BLE001
            _log.exception("safety supervisor: unexpected error in a tick; minimum tension")
            finding = Finding("command_invalid", f"supervisor error {type(exc).__name__}: {exc}")
            t = float(t_s) if isinstance(t_s, (int, float)) else math.nan
            self._last_fault_t = t if math.isfinite(t) else self._last_fault_t
            report = SafetyReport(t, SupervisorState.FAULT, (finding,), (),
                                  tuple(self._latched.values()))
            output, report = self._stopped(t, report, None)
            if self.state != SupervisorState.FAULT:
                self.transitions.append(Transition(t, self.state, SupervisorState.FAULT,
                                                   report.summary()))
                self.state = SupervisorState.FAULT
            self.report = report
            return SupervisedOutput(output, report)

    def _paired_joints(self, joints: PotentiometerReading, tendons: TendonState,
                       recent: Sequence[PotentiometerReading]) -> PotentiometerReading | None:
        """The joint sample taken with the newest tendon sample (within
        ``consistency.max_stamp_skew_s``): the newest one, or one of ``recent``; ``None`` when
        there is none, or when that instant was compared already."""
        skew = self.config.consistency.max_stamp_skew_s
        if tendons.stamp_s < self.consistency.last_stamp_s:
            return None  # never compare backwards in time
        if abs(joints.stamp_s - tendons.stamp_s) <= skew:
            return joints
        for reading in reversed(recent):
            if abs(reading.stamp_s - tendons.stamp_s) <= skew:
                return reading if reading.ok else None
        return None

    def _tick(self, t: float, controller: Controller, joints: PotentiometerReading | None,
              tendons: TendonState | None, snapshot: DynamicsSnapshot | None,
              driver_stamp_s: float | None, joint_faults: Sequence[str],
              recent_joints: Sequence[PotentiometerReading] = ()) -> SupervisedOutput:
        """One control tick (see :meth:`tick`): the findings standing since the last tick, the
        check of every input, the controller on the usable ones, and the state machine's step
        with the command or the stop that goes out (:meth:`_conclude`)."""
        faults: dict[str, Finding] = {}
        warnings: dict[str, Finding] = {}

        def add(f: Finding) -> None:
            (warnings if rule(f.rule).severity == WARNING else faults)[f.rule] = f

        paused = self.pause.tick(t)
        self._add_standing(add)
        joints_ok = self._check_joints(t, joints, joint_faults, add)
        if self.goals.accepted is None and joints_ok and joints is not None:
            self._hold_the_hand(t, joints, add)
        goal_now = self.goals.goal_at(t)
        tendons_ok = self._check_tendons(t, tendons, add)
        snapshot_ok = self._check_snapshot(t, snapshot, add)
        if driver_stamp_s is not None:
            self._check_driver(t, driver_stamp_s, add)
        if self.config.consistency.enabled and joints_ok and tendons_ok \
                and joints is not None and tendons is not None:
            self._check_consistency(joints, tendons, recent_joints, add)
        out: ControlOutput | None = None
        adrift = not self.follow.following
        if adrift:
            add(Finding("driver_not_following", self.follow.message(self.robot.muscle_names)))
        if joints_ok and snapshot_ok and goal_now is not None and joints is not None:
            out = self._control(t, controller, snapshot, joints, goal_now, not faults,
                                paused or adrift, add)
        return self._conclude(t, faults, warnings, out)

    def _add_standing(self, add: Any) -> None:
        """Pass on to ``add`` what stands at this tick whatever the inputs: the sensor-rate
        findings since the last tick (the tendon monitor, refused goals), the conditions
        (:meth:`condition`) and the operator stop."""
        for f in self._pending.values():
            add(f)
        self._pending.clear()
        for f in self._conditions.values():
            add(f)
        if self.stop.stopped:
            add(Finding("operator_stop", self.stop.message()))

    def _hold_the_hand(self, t: float, joints: PotentiometerReading, add: Any) -> None:
        """Rule ``no_goal``: before any goal arrived, hold the hand where ``joints`` put it at
        ``t`` [s]."""
        hand = self._hand.hand_state(joints.q_rad, np.zeros_like(joints.q_rad))
        self.goals.hold(HandGoal.hold(hand.position_m, hand.rotation), t)
        add(Finding("no_goal", f"no hand goal received yet: holding the hand where it is, "
                               f"{np.round(hand.position_m, 3).tolist()} m"))

    def _check_driver(self, t: float, driver_stamp_s: float, add: Any) -> None:
        """Rules ``driver_late`` and ``driver_silent``: the age at ``t`` [s] of the tendon
        driver's newest output received, stamped ``driver_stamp_s`` [s] (-inf: none yet),
        against ``inputs.driver_output`` (the supervisor's own pause left out)."""
        bounds = self.config.inputs.driver_output
        age = self.pause.age_s(t, driver_stamp_s, bounds)
        grade = bounds.grade(age)
        if grade == ON_TIME:
            return
        limits = (f"late beyond {bounds.late_s * 1e3:.1f} ms, "
                  f"silent at {bounds.hold_s * 1e3:.1f} ms")
        if grade == LATE:
            add(Finding("driver_late", f"newest tendon driver output is "
                                       f"{age * 1e3:.2f} ms old ({limits})"))
        else:
            add(Finding("driver_silent", "no output of the tendon driver received yet"
                        if driver_stamp_s == -math.inf else
                        f"newest tendon driver output is {age * 1e3:.2f} ms old "
                        f"({limits})"))

    def _check_consistency(self, joints: PotentiometerReading, tendons: TendonState,
                           recent_joints: Sequence[PotentiometerReading], add: Any) -> None:
        """Rules ``consistency`` (:class:`ConsistencyMonitor`) and ``tendon_snapped``
        (:meth:`_check_snapped`): the newest tendon lengths against the model's at the joint sample
        of their instant (:meth:`_paired_joints`), each muscle's motion weighed by the
        joints' motion it spans (SPEC section 2: the muscle Jacobian Jm = dl/dq)."""
        paired = self._paired_joints(joints, tendons, recent_joints)
        if paired is None:
            # no new instant to compare: the last verdict stands (a fault is not cleared by a
            # tick that could not look; the stale-input rules cover a comparison that never
            # comes)
            for f in self._compared:
                add(f)
            return
        found: list[Finding] = []
        # exact model lengths at the measured angles (~20 us): a first-order step from a
        # snapshot 50 ms old misses millimetres when a light joint whips
        kin = self.robot.geometry.kinematics_at(paired.q_rad)
        # each joint's share of each muscle's motion, summed unsigned: a moment-arm error
        # shows against the joints' motion, which can cancel in the muscle's net change
        np.abs(kin.jacobian, out=self._abs_jm)
        np.abs(paired.qd_rad_s, out=self._abs_qd)
        np.matmul(self._abs_jm, self._abs_qd, out=self._joint_rate)
        np.greater(self._abs_jm, _SPANS_M, out=self._spans, casting="unsafe")
        np.matmul(self._spans, self._abs_qd, out=self._turn_rate)
        finding = self.consistency.update(paired.stamp_s, tendons.length_m, kin.length_m,
                                          self._joint_rate, self._turn_rate,
                                          hold_baseline=self._snapped
                                          if any_true(self._snapped) else None)
        if finding is not None:
            found.append(finding)
        self._check_snapped(tendons, found.append)
        self._compared = tuple(found)
        for f in found:
            add(f)

    def _check_snapped(self, tendons: TendonState, add: Any) -> None:
        """Rule ``tendon_snapped``: a tendon that reads slack (below
        ``tendons.slack_tension_n``) and whose winch has wound in past its path (the
        consistency check's deviation). Found once, it stands while the tendon reads slack:
        the arm's motion in the stop widens the consistency check's allowance, and a snapped
        tendon is no less snapped for it."""
        # a snapped tendon reads slack: the winch test only for those that do
        slack = tendons.tension_n < self.config.tendons.slack_tension_n
        self._snapped &= slack  # mended: it carries tension again
        if not any_true(slack):
            return
        deviation = self.consistency.deviation_m
        new = slack & self.consistency.unwound() & ~self._snapped
        self._snapped |= new
        if any_true(self._snapped):
            add(Finding("tendon_snapped", "tendon snapped: " + ", ".join(
                f"{self.robot.muscle_names[i]} reads {tendons.tension_n[i]:.1f} N and its "
                + (f"winch has wound {-1e3 * float(deviation[i]):.1f} mm past its path"
                   if new[i] and deviation is not None else "winch wound past its path before")
                for i in np.flatnonzero(self._snapped))))

    def _control(self, t: float, controller: Controller, snapshot: DynamicsSnapshot | None,
                 joints: PotentiometerReading, goal: HandGoal, clear: bool, resume: bool,
                 add: Any) -> ControlOutput | None:
        """Tick the controller at ``t`` [s] towards ``goal`` (ramped while control resumes:
        :meth:`_resume_goal`; ``clear``: no fault so far at this tick; ``resume``: after the
        supervisor's own pause or a driver not following) and check its command
        (:meth:`_check_command`); None when it has none (rule ``controller``) or it is
        refused."""
        target, restart = self._resume_goal(t, goal, joints, clear, resume)
        if restart:  # the arm was limp: what the controller kept (the integral) is of then
            controller.reset()
        answer = controller.tick(snapshot, self._joint_angles(t, joints), joints.qd_rad_s,
                                 target, t)
        if not answer.ok:
            add(Finding("controller", answer.reason))
            return None
        # saturation is worth a word only about a command that goes out
        sending = (clear and not self._latched
                   and t - self._last_fault_t >= self.config.recovery_hold_s)
        return self._check_command(t, answer, add, sending)

    def _conclude(self, t: float, faults: dict[str, Finding], warnings: dict[str, Finding],
                  out: ControlOutput | None) -> SupervisedOutput:
        """The state machine's step at ``t`` [s] on this tick's ``faults`` and ``warnings``:
        count the late inputs, latch the latched rules, and send the controller's checked
        command ``out`` while running, else the stop's (:meth:`_stopped`)."""
        for name in warnings:
            if name in _LATE_RULES:
                self.late_ticks[name] = self.late_ticks.get(name, 0) + 1
        for name, f in faults.items():
            if rule(name).latched:
                self._latched.setdefault(name, f)
        state = self._next_state(t, faults)
        report = SafetyReport(t, state, tuple(faults.values()), tuple(warnings.values()),
                              tuple(self._latched.values()))
        if state == SupervisorState.RUNNING and out is not None:
            self.stopping.clear()
            self._in_force[:] = out.tension_n
            sent = SupervisedOutput(out, report)
        else:
            sent = SupervisedOutput(*self._stopped(t, report, out))
        self.follow.sent(t, sent.output.tension_n)
        if state != self.state:
            self.transitions.append(Transition(t, self.state, state, sent.report.summary()))
            self.state = state
        self.report = sent.report
        return sent

    def _resume_goal(self, t: float, goal: HandGoal, joints: PotentiometerReading,
                     clear: bool, paused: bool = False) -> tuple[HandGoal, bool]:
        """The goal for the controller: ramped from the hand while control resumes, after a
        stop or after the supervisor's own pause (the driver held, then lowered the arm
        meanwhile: pulling it back to the goal at full gain would swing it); and whether
        control resumes after a stop at this tick."""
        resuming = (self.state != SupervisorState.RUNNING and clear and not self._latched
                    and t - self._last_fault_t >= self.config.recovery_hold_s)
        if resuming or (paused and clear and self.state == SupervisorState.RUNNING):
            hand = self._hand.hand_state(joints.q_rad, joints.qd_rad_s)
            # the quintic's peak speed is 15/8 of distance over duration
            far = float(np.linalg.norm(hand.position_m - goal.position_m))
            duration = max(self.config.resume_ramp_s, 1.875 * far / self.config.resume_speed_m_s)
            self._ramp = ResumeRamp(t, duration, hand, goal)
        if self._ramp is None:
            return goal, resuming
        if not self._ramp.active(t):
            self._ramp = None
            return goal, resuming
        return self._ramp.goal(t, goal), resuming

    def _next_state(self, t: float, faults: dict[str, Finding]) -> SupervisorState:
        """The state after a tick at ``t`` [s] with ``faults`` (see the module docstring)."""
        if faults:
            self._last_fault_t = t
            return SupervisorState.FAULT
        if self._latched:
            return SupervisorState.LATCHED
        if t - self._last_fault_t < self.config.recovery_hold_s:
            return SupervisorState.HOLDING
        return SupervisorState.RUNNING

    def _stopped(self, t: float, report: SafetyReport,
                 out: ControlOutput | None) -> tuple[ControlOutput, SafetyReport]:
        """The output of a stop at ``t`` [s] and the report that names it: the severest stop
        the report's faults and latched faults call, from the tensions in force; with none
        (the recovery hold) the standing stop goes on, or a hold begins."""
        stops = self.config.stops
        called = [stops.stop_of(f.rule) for f in (*report.faults, *report.latched)]
        if called:
            self.stopping.engage(t, max(called), self._in_force)
        elif not self.stopping.active:
            self.stopping.engage(t, Stop.HOLD, self._in_force)
        phase = self.stopping.phase(t)
        report = report._replace(stop=phase.label if phase is not None else "")
        tension = self.stopping.tension(t, self._in_force)
        safe = safe_output(self.robot, f"safety: {report.summary()}",
                           out.snapshot_age_s if out is not None else 0.0)
        return dataclasses.replace(safe, tension_n=tension.copy()), report

    # -- the checks -------------------------------------------------------------------------------
    def _check_joints(self, t: float, joints: PotentiometerReading | None,
                      joint_faults: Sequence[str], add: Any) -> bool:
        if joint_faults:
            add(Finding("joint_state", "; ".join(joint_faults)))
            return False
        if joints is None:
            add(Finding("joint_state", "no joint state received yet"))
            return False
        n = self.robot.arm.n_joints
        if np.shape(joints.q_rad) != (n,) or np.shape(joints.qd_rad_s) != (n,):
            add(Finding("joint_state", f"joint state of shape {np.shape(joints.q_rad)}, "
                                       f"expected ({n},)"))
            return False
        bounds = self.config.inputs.joint_state
        if not _graded(add, "joint_state", "joint sample", self.pause.age_s(t, joints.stamp_s,
                                                                          bounds),
                       bounds, ": extrapolated by its velocity"):
            return False
        if not finite(joints.q_rad, joints.qd_rad_s):
            add(Finding("joint_state", "joint state not finite"))
            return False
        return True

    def _joint_angles(self, t: float, joints: PotentiometerReading) -> FloatArray:
        """The joint angles for the controller at ``t`` [s]: the sample's, or, when it is
        late, extrapolated by its velocity over its age (at the arm's accelerations off by
        less than the potentiometers' noise up to the hold bound; doc/safety.md). After the
        supervisor's own pause the age counts from the tick after it: the sample is the arm
        before the pause, when nobody knows what it did since."""
        age = self.pause.age_s(t, joints.stamp_s, self.config.inputs.joint_state)
        if age <= self.config.inputs.joint_state.late_s:
            return joints.q_rad
        return joints.q_rad + joints.qd_rad_s * age

    def _check_tendons(self, t: float, tendons: TendonState | None, add: Any) -> bool:
        if tendons is None:
            add(Finding("tendon_state", "no tendon state received yet"))
            return False
        if tendons.faults:
            add(Finding("tendon_state", "; ".join(tendons.faults)))
            return False
        if not _shaped(tendons, self.m):
            add(Finding("tendon_state", f"tendon state of shape {np.shape(tendons.length_m)}, "
                                        f"expected ({self.m},)"))
            return False
        bounds = self.config.inputs.tendon_state
        return _graded(add, "tendon_state", "tendon sample",
                       self.pause.age_s(t, tendons.stamp_s, bounds), bounds)

    def _check_snapshot(self, t: float, snapshot: DynamicsSnapshot | None, add: Any) -> bool:
        cfg = self.config
        if snapshot is None:
            add(Finding("snapshot_stale", "no dynamics snapshot yet"))
            return False
        bounds = cfg.inputs.snapshot
        age = self.pause.age_s(t, snapshot.stamp_s, bounds)
        limits = f"late beyond {bounds.late_s * 1e3:.1f} ms, stale at {bounds.hold_s * 1e3:.1f} ms"
        grade = bounds.grade(age)
        if grade == STALE:
            add(Finding("snapshot_stale", f"dynamics snapshot is {age * 1e3:.2f} ms old "
                                          f"({limits})"))
            return False
        if age < -bounds.hold_s:
            add(Finding("snapshot_stale", f"dynamics snapshot stamped {-age * 1e3:.1f} ms in "
                                          f"the future (clock mismatch?)"))
            return False
        if grade == LATE:
            add(Finding("snapshot_late", f"dynamics snapshot is {age * 1e3:.2f} ms old "
                                         f"({limits})"))
        return True

    def _check_command(self, t: float, out: ControlOutput, add: Any,
                       sending: bool) -> ControlOutput | None:
        try:
            f = np.asarray(out.tension_n, dtype=float)
        except (TypeError, ValueError):
            f = np.empty(0)
        if f.shape != (self.m,) or not finite(f) \
                or not smallest(f) >= self.tension_min_n - _TENSION_SLACK_N:
            add(Finding("command_invalid", f"controller command refused (expected {self.m} "
                                           f"finite tensions >= {self.tension_min_n} N): "
                                           f"{np.round(f, 2).tolist()}"))
            return None
        above = f > self.tension_max_n
        saturated = sending and any_true(above)
        if saturated:
            self._saturated_since[~above] = np.nan
        else:
            self._saturated_since.fill(np.nan)
        if saturated:
            new = above & np.isnan(self._saturated_since)
            self._saturated_since[new] = t
            names = [self.robot.muscle_names[i] for i in np.flatnonzero(above)]
            add(Finding("command_saturated", f"{names} commanded {np.round(f[above], 1).tolist()} "
                                             f"N, clamped to {self.tension_max_n} N"))
            longest = t - float(np.nanmin(self._saturated_since[above]))
            if longest > self.config.saturation_timeout_s:
                add(Finding("saturation_persistent", f"{names} at the limit for "
                                                     f"{longest:.2f} s (limit "
                                                     f"{self.config.saturation_timeout_s} s)"))
        if any_true(above) or smallest(f) < self.tension_min_n:
            f = np.maximum(np.minimum(f, self.tension_max_n), self.tension_min_n)
            out = dataclasses.replace(out, tension_n=f)
        return out
