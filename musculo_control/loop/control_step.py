"""One control step: the newest inputs and the goal in, the tension command and a report out.

The 125 Hz step of the paper's QP thread with the safety supervisor around it, exactly as
``activation_qp_node`` runs it on the robot and the ROS-free runner in simulation:

- inputs arrive as they come (:meth:`ControlStep.receive_joints`, ``receive_tendons``,
  ``receive_snapshot``, ``offer_goal``); each stream keeps its newest in-order message
  (:class:`~musculo_control.streams.Latest`);
- :meth:`ControlStep.tick` hands the newest of each to the
  :class:`~musculo_control.safety.supervisor.Supervisor`, which checks every input against
  safety.yaml, ticks the controller (paper eq. 9-17), checks its command and answers with the
  command to send (minimum tension on any fault) and a :class:`SafetyReport`;
- what the tendon driver actually sent to the actuators (``hw/tendon_commands``,
  :meth:`ControlStep.receive_sent`) goes to the supervisor's tendon monitor, which then knows
  what each load cell should read; and its silence is a fault of its own (a dead driver).
  Driver outputs reach the monitor as they come; a tendon sample only once the outputs that
  may have acted on it have come (stamped up to its stamp less the command delay), since the
  two come by different routes (a tendon sample through the driver, two hops; an output in
  one) and on a loaded computer a sample may arrive before outputs sent before it; or once it
  is older than the outputs' hold bound (``safety.yaml`` ``inputs.driver_output``: a driver
  that stopped, a fault of its own, does not hold the samples back).

``fused`` (controller.yaml ``loop.fused_dynamics``): the step computes a fresh dynamics
snapshot from the newest joint state at every tick instead of using the 20 Hz one, so the
snapshot is never older than the joint state.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.control.output import ControlOutput
from musculo_control.control.tick_base import Controller
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot import DynamicsEstimator, DynamicsSnapshot
from musculo_control.hardware.potentiometer import PotentiometerReading
from musculo_control.hardware.tendon_driver import TendonState
from musculo_control.loop import topics
from musculo_control.loop.health import Health
from musculo_control.loop.switch import TensionRamp
from musculo_control.safety.authority import Writer, WriterVerdict, WriterWatch
from musculo_control.safety.episodes import EpisodeLog
from musculo_control.safety.supervisor import SafetyReport, Supervisor
from musculo_control.safety.supervisor_state import SupervisorState
from musculo_control.streams import Latest

FloatArray = npt.NDArray[np.float64]

JOINTS_TOPIC = topics.JOINT_STATES
TENDONS_TOPIC = topics.MUSCLE_STATES
DYNAMICS_TOPIC = topics.DYNAMICS
COMMAND_TOPIC = topics.MUSCLE_COMMANDS
SENT_TOPIC = topics.TENDON_COMMANDS


class StepResult(NamedTuple):
    """What one tick sends (``output.tension_n``) and why."""

    output: ControlOutput
    report: SafetyReport
    #: age of the newest joint sample at the tick [s] (sensing to command; NaN: none yet)
    joint_age_s: float = float("nan")


class ControlStep:
    """See the module docstring."""

    def __init__(self, controller: Controller, supervisor: Supervisor,
                 estimator: DynamicsEstimator | None = None, warn_throttle_s: float = 1.0) -> None:
        self.controller = controller
        self.supervisor = supervisor
        self.estimator = estimator
        self.joints: Latest[PotentiometerReading] = Latest(JOINTS_TOPIC)
        # the last joint samples, so the consistency check finds the one taken with the newest
        # tendon sample (they reach a node by different hops, the QP node by two processes)
        self._recent_joints: deque[PotentiometerReading] = deque()
        self._pair_history_s = supervisor.config.consistency.pair_history_s
        self.tendons: Latest[TendonState] = Latest(TENDONS_TOPIC)
        self.snapshots: Latest[DynamicsSnapshot] = Latest(DYNAMICS_TOPIC)
        self.sent: Latest[FloatArray] = Latest(SENT_TOPIC)
        # tendon samples not yet handed to the monitor, oldest first (see _feed_monitor)
        self._samples: deque[TendonState] = deque()
        # a sample older than this at a tick goes to the monitor even if the driver's outputs
        # have not reached it: the driver is then silent, a fault of its own [s]
        self._join_wait_s = supervisor.config.inputs.driver_output.hold_s
        # an output takes effect at the actuators this much after its stamp [s]
        self._command_delay_s = supervisor.config.tendons.command_delay_s
        self.health = Health("controller", warn_throttle_s)
        self.last: StepResult | None = None
        self.ticks = 0
        self.unsafe_ticks = 0  # ticks that sent minimum tension
        #: the stretches of those ticks, with the rules that caused them
        self.episodes = EpisodeLog(from_first_tick=True)
        #: rule name -> who may write a command stream (the node watches the graph)
        self.writer_watches: dict[str, WriterWatch] = {}
        self._ramp: TensionRamp | None = None  # a controller switched in, on its ramp

    @property
    def fused(self) -> bool:
        return self.estimator is not None

    def reset(self, now_s: float) -> None:
        """Forget every input and start afresh at ``now_s`` [s] (actuators at minimum)."""
        self.controller.reset()
        self._ramp = None
        self.supervisor.reset(now_s)
        for stream in (self.joints, self.tendons, self.snapshots, self.sent):
            stream.reset()
        self._samples.clear()
        self._recent_joints.clear()
        self.last = None
        self.ticks = self.unsafe_ticks = 0
        self.episodes.reset()

    # -- inputs ---------------------------------------------------------------------------------
    def receive_joints(self, reading: PotentiometerReading) -> None:
        late = self.joints.offer(reading.stamp_s, reading)
        if late is not None:
            self.health.refuse(JOINTS_TOPIC, late, reading.stamp_s)
            return
        recent = self._recent_joints
        recent.append(reading)
        while recent[0].stamp_s < reading.stamp_s - self._pair_history_s:
            recent.popleft()

    def receive_tendons(self, state: TendonState) -> None:
        late = self.tendons.offer(state.stamp_s, state)
        if late is not None:
            self.health.refuse(TENDONS_TOPIC, late, state.stamp_s)
            return
        self._samples.append(state)

    def receive_sent(self, stamp_s: float, tension_n: FloatArray) -> None:
        """What the tendon driver sent to the actuators at ``stamp_s`` [s] ([N], all muscles)."""
        late = self.sent.offer(stamp_s, tension_n)
        if late is not None:
            self.health.refuse(SENT_TOPIC, late, stamp_s)
            return
        self.supervisor.driver_sent(stamp_s, tension_n)

    def set_goal_orientation(self, use: bool) -> None:
        """Track the goals' orientation or not from now on
        (:meth:`~musculo_control.safety.goal_gate.GoalGate.set_orientation`)."""
        self.supervisor.goals.set_orientation(use)

    def _feed_monitor(self, now_s: float) -> None:
        """Tendon samples to the tendon monitor, oldest first, each once the driver's outputs
        have reached its instant (a sample at T needs every output that may have taken effect
        by T, stamped up to T - command delay), or once it is older than the join's wait (then
        without the tracking check: what was sent up to it is not known)."""
        samples = self._samples
        joined = self.sent.stamp_s + self._command_delay_s
        upto = max(joined, now_s - self._join_wait_s)
        sup = self.supervisor
        while samples and samples[0].stamp_s <= upto:
            sample = samples.popleft()
            sup.tendon_sample(sample, sample.stamp_s <= joined)

    def receive_snapshot(self, snapshot: DynamicsSnapshot) -> None:
        if snapshot.stamp_s == self.snapshots.stamp_s:
            return  # the same snapshot again (a retransmission): nothing new
        late = self.snapshots.offer(snapshot.stamp_s, snapshot)
        if late is not None:
            self.health.refuse(DYNAMICS_TOPIC, late, snapshot.stamp_s)

    def offer_goal(self, goal: object, stamp_s: float, now_s: float,
                   frame_id: str | None = None) -> bool:
        """A hand goal (:class:`~musculo_control.control.goal.HandGoal` or a raw
        :class:`~musculo_control.safety.goal_gate.GoalRequest`) received at ``now_s`` [s];
        whether it was accepted (a refusal is reported at the next tick)."""
        return self.supervisor.offer_goal(goal, stamp_s, now_s, frame_id)

    def offer_joint_goal(self, q_rad: npt.ArrayLike) -> bool:
        """A joint goal for the controller (:meth:`Supervisor.offer_joint_goal`); whether it
        was accepted."""
        return self.supervisor.offer_joint_goal(q_rad, self.controller)

    def acknowledge(self) -> tuple[str, ...]:
        """An operator clears the latched faults; the rule names cleared (none while the
        operator stop is set: :attr:`stopped`)."""
        return tuple(f.rule for f in self.supervisor.acknowledge())

    @property
    def stopped(self) -> bool:
        """The operator stop is set."""
        return self.supervisor.stop.stopped

    def operator_stop(self, on: bool, now_s: float, reason: str = "") -> None:
        """Set (``on``) or release the operator stop at ``now_s`` [s]
        (:mod:`musculo_control.safety.operator_stop`)."""
        if on:
            self.supervisor.stop.stop(now_s, reason)
        else:
            self.supervisor.stop.release(now_s)

    def judge_writers(self, rule_name: str, writers: list[Writer],
                      now_s: float) -> WriterVerdict:
        """The graph's publishers of the stream watched for ``rule_name`` (a
        :class:`WriterWatch` in :attr:`writer_watches`) at ``now_s`` [s]; a foreign one is a
        fault of that rule until it is gone."""
        watch = self.writer_watches[rule_name]
        verdict = watch.judge(writers, now_s)
        self.supervisor.condition(rule_name, f"{watch.topic}: {verdict.message}"
                                  if verdict.foreign else "")
        return verdict

    # -- switching the controller ---------------------------------------------------------------
    def switch_controller(self, controller: Controller, now_s: float, ramp_s: float) -> str:
        """Switch to ``controller`` at ``now_s`` [s] without a jump (:mod:`musculo_control.loop.
        switch`): its commands ramp in from the tensions in force over ``ramp_s`` [s], the goal
        in force becomes to hold the hand where it is, and a joint-space baseline holds the joints
        where they are (``start_from``). Returns '' when switched, else why it was refused (during a
        stop, the resume after one, or before a joint sample came); nothing changes then."""
        refusal = self.supervisor.switch_refusal()
        joints = self.joints.value
        if not refusal and (joints is None or not joints.ok):
            refusal = "no joint sample to start the new controller from"
        if refusal:
            return f"switch to '{controller.name}' refused: {refusal}"
        assert joints is not None
        controller.reset()
        in_force = self.supervisor.tension_in_force_n
        start_from = getattr(controller, "start_from", None)  # the joint-space baselines
        if start_from is not None:
            start_from(joints.q_rad, in_force)
        self.supervisor.hold_hand_at(now_s, joints.q_rad)
        previous, self.controller = self.controller, controller
        self._ramp = TensionRamp(controller, in_force, now_s, ramp_s, previous)
        return ""

    def _ticked(self, now_s: float) -> Controller:
        """The controller the supervisor ticks at ``now_s``: a switched-in one on its ramp."""
        ramp = self._ramp
        if ramp is None:
            return self.controller
        if ramp.done(now_s) or ramp.controller is not self.controller:
            self._ramp = None
            return self.controller
        return ramp

    # -- the tick -------------------------------------------------------------------------------
    def tick(self, now_s: float) -> StepResult:
        """The command to send at ``now_s`` [s] and its report; never raises."""
        joints = self.joints.value
        snapshot = self.snapshots.value
        if self.estimator is not None:
            snapshot = None
            if joints is not None and joints.ok:
                try:
                    snapshot = self.estimator.compute(joints.q_rad, joints.qd_rad_s,
                                                      joints.stamp_s)
                except InputError:
                    snapshot = None  # the supervisor reports the joint state itself
        self._feed_monitor(now_s)
        out, report = self.supervisor.tick(now_s, self._ticked(now_s), joints=joints,
                                           tendons=self.tendons.value, snapshot=snapshot,
                                           driver_stamp_s=self.sent.stamp_s,
                                           recent_joints=self._recent_joints)
        if self._ramp is not None and report.state != SupervisorState.RUNNING:
            self._ramp = None  # a stop took over from the ramp's tensions; resumes unramped
        self.ticks += 1
        if not report.ok:
            self.unsafe_ticks += 1
        self.episodes.tick(now_s, report)
        # a new subject: another state or rule, or one more goal refused
        self.health.set(report.level, report.summary(), now_s,
                        (report.state, report.stop, report.rules, self.supervisor.goals.refused))
        result = StepResult(out, report,
                            now_s - joints.stamp_s if joints is not None else float("nan"))
        self.last = result
        return result

    def values(self) -> dict[str, str]:
        sup = self.supervisor
        return {"state": sup.state.value, "ticks": str(self.ticks),
                "minimum-tension ticks": str(self.unsafe_ticks),
                "minimum-tension episodes": self.episodes.summary(3),
                "goals refused": str(sup.goals.refused),
                "latched": ", ".join(f.rule for f in sup.report.latched) if sup.report else "",
                **{f"ticks with {name}": str(n) for name, n in sorted(sup.late_ticks.items())},
                **self.health.values()}
