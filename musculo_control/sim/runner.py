"""The ROS-free closed loop: the node graph's stages, at the same rates, in simulated time.

    mock arm (physics)  -> raw sensor messages (sensor rate)                 [hop]
      -> PotentiometerStage -> joint states   -> DynamicsStage, ControlStep  [hop]
      -> TendonStage (read) -> muscle states  -> ControlStep                 [hop]
      -> DynamicsStage (dynamics rate) -> snapshot -> ControlStep            [hop]
      -> ControlStep (control rate) -> tension command -> TendonStage        [hop]
      -> TendonStage (driver rate) -> driver units -> mock arm, ControlStep  [hop]

Each stage is the very object its node holds (:mod:`musculo_control.loop`), and every hop
between two nodes goes through a :class:`DelayLine` with the configured transport delay, so the
controller sees the world as late as it would on the robot. The loop is driven by one integer
step counter; every rate must divide the physics rate.

Start-up is the node graph's too: the mock arm is held still until the controller's commands
hold it (:class:`~musculo_control.sim.mock_stage.MockStage`); :meth:`ClosedLoop.reset` runs
the loop until then, and that moment is time 0 of the run.

Who writes the two command streams is watched as the nodes watch it only after
:meth:`ClosedLoop.watch_writers` (the fault matrix's stray writers): the loop's own writers
then stand for the controller and the tendon driver in a graph's publisher lists, besides any
writer the stream faults add, and every command carries its writer's id.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from musculo_control.arrays import finite, largest
from musculo_control.config.parser import spec
from musculo_control.control.controller_config import LoopConfig
from musculo_control.control.goal import HandGoal
from musculo_control.control.output import ControlOutput
from musculo_control.errors import ConfigError
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.hardware.drivers import HardwareRates
from musculo_control.hardware.potentiometer import PotentiometerReading
from musculo_control.hardware.tendon_driver import DriverOutput, TendonState
from musculo_control.loop.control_step import ControlStep
from musculo_control.loop.dynamics_stage import DynamicsStage
from musculo_control.loop.potentiometer_stage import PotentiometerStage
from musculo_control.loop.tendon_stage import TendonStage
from musculo_control.loop.timing import divisor
from musculo_control.loop.topics import MUSCLE_COMMANDS, TENDON_COMMANDS
from musculo_control.safety.authority import (
    FOREIGN_ACTUATOR_WRITER,
    AuthorityConfig,
    Writer,
    WriterWatch,
)
from musculo_control.safety.episodes import EpisodeLog
from musculo_control.safety.supervisor import SafetyReport
from musculo_control.sim.mock_arm import MockArm
from musculo_control.sim.mock_stage import MockStage, SensorFaults, SensorMessage

FloatArray = npt.NDArray[np.float64]
T = TypeVar("T")

#: The loop's own writers of its command streams as a graph's publisher list would name them
#: (:meth:`ClosedLoop.watch_writers`): the controller's ``muscle_commands``, the tendon
#: driver's ``hw/tendon_commands``.
CONTROLLER_WRITER = Writer("/controller", b"controller")
DRIVER_WRITER = Writer("/tendon_driver", b"tendon_driver")


@dataclass(frozen=True, kw_only=True)
class RunnerConfig:
    """What only the simulation adds (``experiments.yaml`` key ``runner``); the rates are the
    robot's (hardware.yaml ``rates``, controller.yaml ``loop``)."""

    transport_delay_s: float = spec(0.001, ge=0.0, doc="delay of every hop between nodes [s]")
    startup_limit_s: float = spec(5.0, gt=0.0, doc="give up if the controller has not taken "
                                                   "the arm over after this long [s]")
    progress_interval_s: float = spec(5.0, gt=0.0, doc="progress line every this much sim time [s]")


class Divisors(NamedTuple):
    """How many physics steps between two events of each kind."""

    sensor: int
    driver: int
    dynamics: int
    control: int
    delay: int


def divisors(loop: LoopConfig, rates: HardwareRates, config: RunnerConfig, physics_dt_s: float,
             folder: str) -> Divisors:
    """Step counts per rate; every rate must divide the physics rate exactly."""
    hw, ctrl = f"{folder}/hardware.yaml", f"{folder}/controller.yaml"
    delay = config.transport_delay_s / physics_dt_s
    if abs(delay - round(delay)) > 1e-9:
        raise ConfigError(f"{folder}/experiments.yaml", "runner.transport_delay_s",
                          f"a whole number of physics steps ({physics_dt_s} s)",
                          config.transport_delay_s)
    return Divisors(divisor(rates.sensor_rate_hz, physics_dt_s, hw, "rates.sensor_rate_hz"),
                    divisor(rates.driver_rate_hz, physics_dt_s, hw, "rates.driver_rate_hz"),
                    divisor(loop.dynamics_rate_hz, physics_dt_s, ctrl, "loop.dynamics_rate_hz"),
                    divisor(loop.control_rate_hz, physics_dt_s, ctrl, "loop.control_rate_hz"),
                    int(round(delay)))


class DelayLine(Generic[T]):
    """FIFO of messages that arrive a fixed number of steps after they are sent."""

    def __init__(self, delay_steps: int) -> None:
        self.delay = delay_steps
        self._queue: deque[tuple[int, T]] = deque()

    def send(self, step: int, message: T) -> None:
        self._queue.append((step + self.delay, message))

    def receive(self, step: int) -> list[T] | tuple[()]:
        queue = self._queue
        if not queue or queue[0][0] > step:
            return ()  # most steps: nothing due (no list made)
        out = []
        while queue and queue[0][0] <= step:
            out.append(queue.popleft()[1])
        return out

    def clear(self) -> None:
        self._queue.clear()


class LoopState(NamedTuple):
    """What the loop knows at a control tick (passed to the per-tick hooks)."""

    t_s: float  # time since the start of the run [s]
    joints: PotentiometerReading | None
    tendons: TendonState | None
    snapshot: DynamicsSnapshot | None
    output: ControlOutput  # the tick's command
    report: SafetyReport
    joint_age_s: float  # age of the newest joint sample at the tick [s]


#: Called every physics step before it, with (t_s, mock): moves a force gauge, injects faults.
StepHook = Callable[[float, MockArm], None]
#: The hand goal at a time since the start of the run.
GoalFn = Callable[[float], HandGoal]


class StreamFaults(SensorFaults, Protocol):
    """Fault injection in the loop's message streams (see :mod:`musculo_control.sim.faults`);
    every hook takes stamp times, and :attr:`origin_s` is set to the stamp of time 0."""

    origin_s: float

    def snapshot_passes(self, t_s: float) -> bool: ...

    def goal(self, t_s: float, goal: HandGoal) -> object:
        """The goal the controller receives (may be malformed)."""
        ...

    def command_passes(self, t_s: float) -> bool: ...

    def stray_writers(self, topic: str, t_s: float) -> tuple[Writer, ...]:
        """Publishers of a command stream besides the loop's own writer at ``t_s``."""
        ...

    def stray_command(self, topic: str, t_s: float) -> FloatArray | None:
        """What such a publisher sends at ``t_s``, in newtons per muscle (``None``: nothing)."""
        ...


TICK_KINDS = ("physics", "sensor", "dynamics", "control", "driver")


class HealthEvent(NamedTuple):
    """A stage's health changed level, or it refused an input (what its node would publish on
    /diagnostics)."""

    t_s: float  # since the start of the run [s]
    stage: str
    level: int  # diagnostic level; REFUSAL for a refused input message
    message: str


#: :attr:`HealthEvent.level` of a refused input message (it changes no level).
REFUSAL = -1


class ClosedLoop:
    """The mock arm and the four stages of the node graph, stepped together."""

    def __init__(self, mock: MockStage, pots: PotentiometerStage, tendons: TendonStage,
                 dynamics: DynamicsStage, step: ControlStep, loop: LoopConfig,
                 rates: HardwareRates, config: RunnerConfig, folder: str = ".", *,
                 faults: StreamFaults | None = None) -> None:
        """``faults``: inject stream faults (sensor streams, snapshots, goals, commands)."""
        self.mock_stage, self.pots, self.tendons = mock, pots, tendons
        self.dynamics, self.step = dynamics, step
        self.mock = mock.arm
        self.stream_faults = faults
        mock.sensor_faults = faults
        self.config = config
        self.div = divisors(loop, rates, config, self.mock.dt_s, folder)
        self.fused = loop.fused_dynamics
        self.dt_s = self.mock.dt_s
        d = self.div.delay
        self._raw: DelayLine[SensorMessage] = DelayLine(d)
        self._joints: DelayLine[PotentiometerReading] = DelayLine(d)
        self._muscles: DelayLine[TendonState] = DelayLine(d)
        self._snapshots: DelayLine[DynamicsSnapshot] = DelayLine(d)
        self._commands: DelayLine[tuple[float, FloatArray]] = DelayLine(d)
        self._to_arm: DelayLine[FloatArray] = DelayLine(d)
        self._sent: DelayLine[tuple[float, FloatArray]] = DelayLine(d)  # driver -> controller
        # stray writers' samples (watch_writers): (topic, stamp [s], tension [N], writer id)
        self._stray: DelayLine[tuple[str, float, FloatArray, bytes]] = DelayLine(d)
        self._watched = False  # watch_writers() was called
        self.health_log: list[HealthEvent] = []
        for stage in (mock, pots, tendons, dynamics, step):
            name = stage.health.name
            stage.health.on_change = self._health_logger(name)
            stage.health.on_refuse = self._refusal_logger(name)
        self._clear()

    def _health_logger(self, name: str) -> Callable[[int, str, float], None]:
        def log(level: int, message: str, t_s: float) -> None:
            self.health_log.append(HealthEvent(t_s - self.t0_s, name, level, message))
        return log

    def _refusal_logger(self, name: str) -> Callable[[str, str, float], None]:
        def log(topic: str, reason: str, t_s: float) -> None:
            self.health_log.append(HealthEvent(self.time_s, name, REFUSAL, reason))
        return log

    def _clear(self) -> None:
        for line in (self._raw, self._joints, self._muscles, self._snapshots, self._commands,
                     self._to_arm, self._sent, self._stray):
            line.clear()
        self.step_count = 0
        self.t0_s = 0.0  # the stamp of time 0 of the run (the release) [s]
        self.output: ControlOutput | None = None
        self.report: SafetyReport | None = None
        self.faults: list[tuple[float, str]] = []  # (time, reason) of every unsafe tick
        self.episodes = EpisodeLog()  # the same ticks, grouped, with the rules that caused them
        self.ticks = dict.fromkeys(TICK_KINDS, 0)  # events run, for the tick accounting
        self.driver_output: DriverOutput | None = None
        self.sent_max_n = 0.0  # largest tension the driver sent to the arm [N]
        self.sent_nonfinite = 0  # driver outputs with a non-finite value (must stay 0)
        self.health_log.clear()

    # -- start-up --------------------------------------------------------------------------------
    def reset(self, q0_rad: FloatArray, goal: HandGoal) -> None:
        """The arm held at ``q0_rad`` until the controller holds it with ``goal``; then time 0.

        As on the robot: the stages start empty, the mock arm is held by hand while sensors,
        dynamics and controller come up, and is let go once the commands have held it for
        ``mock_arm.yaml startup.release_after_s``.
        """
        self._clear()
        for stage in (self.pots, self.tendons, self.dynamics):
            stage.reset()
        self.step.reset(0.0)
        self.mock_stage.reset(q0_rad, 0.0)
        limit = int(round(self.config.startup_limit_s / self.dt_s))
        while self.mock_stage.released_s is None:
            if self.step_count >= limit:
                reason = self.report.summary() if self.report is not None else "no tick"
                raise ConfigError("experiments.yaml", "runner.startup_limit_s",
                                  f"the controller holding the arm within "
                                  f"{self.config.startup_limit_s} s of start-up",
                                  f"still held; last report: {reason}")
            self._step(lambda t: goal, None, None, startup=True)
        # time 0 is the first step after the one that let the arm go
        self.t0_s = self.mock_stage.time_s
        if self.stream_faults is not None:
            self.stream_faults.origin_s = self.t0_s
        self.health_log[:] = [e._replace(t_s=e.t_s - self.t0_s) for e in self.health_log]
        self.ticks = dict.fromkeys(TICK_KINDS, 0)
        self._k0 = self.step_count

    def operator_stop(self, on: bool, reason: str = "") -> None:
        """Set (``on``) or release the operator stop of both commanding stages, the
        controller's supervisor and the tendon driver, now (what ``operator_stop`` does in the
        node graph; :mod:`musculo_control.safety.operator_stop`)."""
        t = self.mock_stage.time_s
        self.step.operator_stop(on, t, reason)
        self.tendons.operator_stop(on, t, reason)

    def watch_writers(self, config: AuthorityConfig) -> None:
        """Watch the writers of the command streams as the nodes do
        (:mod:`musculo_control.safety.authority`): the tendon driver those of
        ``muscle_commands`` (only :data:`CONTROLLER_WRITER` may), the controller's supervisor
        (rule ``foreign_actuator_writer``) and the mock arm those of ``hw/tendon_commands``
        (only :data:`DRIVER_WRITER`). At every physics step the writers listed are the loop's
        own and the stream faults' strays (:meth:`StreamFaults.stray_writers`), whose samples
        go through the same hops with their writer's id."""
        self.tendons.writers = WriterWatch(MUSCLE_COMMANDS, {CONTROLLER_WRITER.node}, config)
        self.mock_stage.writers = WriterWatch(TENDON_COMMANDS, {DRIVER_WRITER.node}, config)
        self.step.writer_watches[FOREIGN_ACTUATOR_WRITER] = WriterWatch(
            TENDON_COMMANDS, {DRIVER_WRITER.node}, config)
        self._watched = True

    def _judge_writers(self, k: int, t: float) -> None:
        """The writers of both command streams at stamp ``t`` [s] judged by the stages'
        watches, and the strays' samples sent (:meth:`watch_writers`)."""
        injected = self.stream_faults
        strays = {topic: () if injected is None else injected.stray_writers(topic, t)
                  for topic in (MUSCLE_COMMANDS, TENDON_COMMANDS)}
        self.tendons.judge_writers([CONTROLLER_WRITER, *strays[MUSCLE_COMMANDS]], t)
        actuators = [DRIVER_WRITER, *strays[TENDON_COMMANDS]]
        if self.mock_stage.writers is not None:
            self.mock_stage.writers.judge(actuators, t)
        self.step.judge_writers(FOREIGN_ACTUATOR_WRITER, actuators, t)
        if injected is None:
            return
        for topic, writers in strays.items():
            tension = injected.stray_command(topic, t) if writers else None
            if tension is not None:
                for writer in writers:
                    self._stray.send(k, (topic, t, tension, writer.gid))

    def _receive_strays(self, k: int) -> None:
        """The strays' samples due at step ``k``, where the graph's subscribers take them: the
        tendon driver (``muscle_commands``); the mock arm and the controller's tendon monitor
        (``hw/tendon_commands``, in driver units on the wire)."""
        for topic, stamp, tension, gid in self._stray.receive(k):
            if topic == MUSCLE_COMMANDS:
                self.tendons.receive_command(stamp, tension, gid)
            else:
                self.mock_stage.receive_command(
                    self.tendons.driver.calibration.n_to_driver(tension), stamp, gid)
                self.step.receive_sent(stamp, tension)

    @property
    def time_s(self) -> float:
        """Time since the start of the run [s]."""
        return self.mock_stage.time_s - self.t0_s

    def expected_ticks(self) -> dict[str, int]:
        """How many events of each kind the steps run since time 0 must have had."""
        k0, k1, div = self._k0, self.step_count, self.div

        def count(every: int) -> int:  # multiples of ``every`` in [k0, k1)
            return -(-k1 // every) - -(-k0 // every)

        return {"physics": k1 - k0, "sensor": count(div.sensor),
                "dynamics": 0 if self.fused else count(div.dynamics),
                "control": count(div.control), "driver": count(div.driver)}

    # -- running -------------------------------------------------------------------------------
    def run(self, duration_s: float, goal_at: GoalFn, *, hook: StepHook | None = None,
            on_control: Callable[[LoopState], None] | None = None, label: str = "") -> float:
        """Advance ``duration_s`` of simulated time; returns the wall time it took [s]."""
        steps = int(round(duration_s / self.dt_s))
        progress_every = max(1, int(round(self.config.progress_interval_s / self.dt_s)))
        wall0 = time.perf_counter()
        for i in range(steps):
            self._step(goal_at, hook, on_control)
            if label and (i + 1) % progress_every == 0:
                wall = time.perf_counter() - wall0
                print(f"  {label}: {self.time_s:6.1f} s simulated, {wall:5.1f} s wall "
                      f"({(i + 1) * self.dt_s / max(wall, 1e-9):.1f}x real time)",
                      file=sys.stderr, flush=True)
        return time.perf_counter() - wall0

    def _step(self, goal_at: GoalFn, hook: StepHook | None,
              on_control: Callable[[LoopState], None] | None, startup: bool = False) -> None:
        """One physics step with every event due at it.

        Runs 1000 times a simulated second: a delay line is read only when its first message
        is due (most steps have none), and each due test is one comparison."""
        k, div = self.step_count, self.div
        stage, step, injected, ticks = self.mock_stage, self.step, self.stream_faults, self.ticks
        t = self.mock.time_s  # the stamp of this instant [s]
        t_run = 0.0 if startup else t - self.t0_s
        if hook is not None:
            hook(t_run, self.mock)
        if self._watched:
            self._judge_writers(k, t)
            self._receive_strays(k)
        sensing = k % div.sensor == 0
        if sensing:
            ticks["sensor"] += 1
            raw = self._raw
            for message in stage.sense():
                raw.send(k, message)
            stage.check()
        # each line read in place (popleft while due): its messages in order, no list made
        raw_due = self._raw._queue
        if raw_due and raw_due[0][0] <= k:
            pots, tendons = self.pots, self.tendons
            while raw_due and raw_due[0][0] <= k:
                stamp, pot_counts, enc_counts, cell_counts = raw_due.popleft()[1]
                if pot_counts is not None:
                    reading = pots.receive(stamp, pot_counts)
                    if reading is not None:
                        self._joints.send(k, reading)
                if enc_counts is not None and cell_counts is not None:
                    state = tendons.receive_state(stamp, enc_counts, cell_counts)
                    if state is not None:
                        self._muscles.send(k, state)
        if sensing:
            self.pots.check(t)
        joints_due = self._joints._queue
        if joints_due and joints_due[0][0] <= k:
            dynamics = self.dynamics
            while joints_due and joints_due[0][0] <= k:
                reading = joints_due.popleft()[1]
                dynamics.receive_joints(reading)
                step.receive_joints(reading)
        muscles_due = self._muscles._queue
        while muscles_due and muscles_due[0][0] <= k:
            step.receive_tendons(muscles_due.popleft()[1])
        sent_due = self._sent._queue
        while sent_due and sent_due[0][0] <= k:
            stamp, tension = sent_due.popleft()[1]
            step.receive_sent(stamp, tension)
        if not self.fused and k % div.dynamics == 0:
            ticks["dynamics"] += 1
            snap = self.dynamics.tick(t)
            if snap is not None and (injected is None or injected.snapshot_passes(t)):
                self._snapshots.send(k, snap)
        snapshots_due = self._snapshots._queue
        if snapshots_due and snapshots_due[0][0] <= k:
            for snap in self._snapshots.receive(k):
                step.receive_snapshot(snap)
        if k % div.control == 0:
            self._control(k, t, t_run, goal_at, on_control, startup)
        commands_due = self._commands._queue
        if commands_due and commands_due[0][0] <= k:
            for stamp, tension in self._commands.receive(k):
                self.tendons.receive_command(stamp, tension, CONTROLLER_WRITER.gid)
        if k % div.driver == 0:
            ticks["driver"] += 1
            sent = self.tendons.output(t)
            self.driver_output = sent
            tension = sent.tension_n
            if not finite(tension, sent.units):
                self.sent_nonfinite += 1
            else:
                top = largest(tension)
                if top > self.sent_max_n:
                    self.sent_max_n = top
            self._to_arm.send(k, sent.units)
            self._sent.send(k, (t, tension))
        to_arm_due = self._to_arm._queue
        while to_arm_due and to_arm_due[0][0] <= k:
            stage.receive_command(to_arm_due.popleft()[1], None, DRIVER_WRITER.gid)
        stage.step()
        self.step_count = k + 1
        ticks["physics"] += 1

    def _control(self, k: int, t: float, t_run: float, goal_at: GoalFn,
                 on_control: Callable[[LoopState], None] | None, startup: bool) -> None:
        """The control tick at step ``k``, stamp ``t`` [s] (``t_run`` since time 0)."""
        step, injected = self.step, self.stream_faults
        self.ticks["control"] += 1
        wanted = goal_at(t_run)
        goal = wanted if injected is None or startup else injected.goal(t, wanted)
        step.offer_goal(goal, t, t)
        out, report, joint_age = step.tick(t)
        self.output, self.report = out, report
        if not report.ok and not startup:
            self.faults.append((t_run, out.reason))
        if not startup:
            self.episodes.tick(t_run, report)
        if injected is None or startup or injected.command_passes(t):
            self._commands.send(k, (t, out.tension_n))
        if on_control is not None and not startup:
            on_control(LoopState(t_run, step.joints.value, step.tendons.value,
                                 step.snapshots.value, out, report, joint_age))
