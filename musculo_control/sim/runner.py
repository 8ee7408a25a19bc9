"""The ROS-free closed loop: the same logic as the ROS nodes, at the same rates, in simulated time.

    mock arm (physics, 1 kHz) -> raw potentiometer and tendon sensor samples (500 Hz)
      -> potentiometer reader / tendon driver (SI units)     [transport delay]
      -> dynamics snapshot (20 Hz) and controller tick (125 Hz)
      -> tension command -> tendon driver (clamp, rate limit, watchdog)   [transport delay]
      -> driver output in driver units (500 Hz) -> mock arm   [transport delay]

Every hop between what would be two ROS nodes goes through a :class:`DelayLine` with the
configured transport delay, so the controller sees the world as late as it would on the robot.
The loop is driven by one integer step counter; every rate must divide the physics rate.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from musculo_control.control.controller import Controller
from musculo_control.control.goal import HandGoal
from musculo_control.control.output import ControlOutput, safe_output
from musculo_control.errors import ConfigError
from musculo_control.estimation.snapshot import DynamicsEstimator, DynamicsSnapshot
from musculo_control.hardware.mock_arm import MockArm
from musculo_control.hardware.potentiometer import PotentiometerReader, PotentiometerReading
from musculo_control.hardware.tendon_driver import DriverOutput, TendonDriver, TendonState
from musculo_control.model.config import spec
from musculo_control.model.robot import Robot

if TYPE_CHECKING:
    from musculo_control.safety.supervisor import Supervisor

FloatArray = npt.NDArray[np.float64]
T = TypeVar("T")
#: One raw sensor message: (stamp, potentiometer counts, encoder counts, load-cell counts);
#: a fault injector may blank a part (None: that sensor's message never came).
SensorMessage = tuple[float, "FloatArray | None", "FloatArray | None", "FloatArray | None"]


@dataclass(frozen=True, kw_only=True)
class RunnerConfig:
    """Rates and delays of the ROS-free loop (``experiments.yaml`` key ``runner``)."""

    sensor_rate_hz: float = spec(500.0, gt=0.0, doc="raw sensor sampling [Hz]")
    driver_rate_hz: float = spec(500.0, gt=0.0, doc="tendon driver output to the arm [Hz]")
    dynamics_rate_hz: float = spec(20.0, gt=0.0, doc="dynamics snapshot [Hz]")
    control_rate_hz: float = spec(125.0, gt=0.0, doc="controller tick [Hz]")
    transport_delay_s: float = spec(0.001, ge=0.0, doc="delay of every hop between nodes [s]")
    progress_interval_s: float = spec(5.0, gt=0.0, doc="progress line every this much sim time [s]")


class Divisors(NamedTuple):
    """How many physics steps between two events of each kind."""

    sensor: int
    driver: int
    dynamics: int
    control: int
    delay: int


def divisors(config: RunnerConfig, physics_dt_s: float, file: str) -> Divisors:
    """Step counts per rate; every rate must divide the physics rate exactly."""
    out = []
    for key in ("sensor_rate_hz", "driver_rate_hz", "dynamics_rate_hz", "control_rate_hz"):
        rate = getattr(config, key)
        ratio = 1.0 / (rate * physics_dt_s)
        n = int(round(ratio))
        if n < 1 or abs(ratio - n) > 1e-9 * ratio:
            raise ConfigError(file, f"runner.{key}",
                              f"a rate that divides the physics rate {1 / physics_dt_s:g} Hz", rate)
        out.append(n)
    delay = config.transport_delay_s / physics_dt_s
    if abs(delay - round(delay)) > 1e-9:
        raise ConfigError(file, "runner.transport_delay_s",
                          f"a whole number of physics steps ({physics_dt_s} s)",
                          config.transport_delay_s)
    return Divisors(out[0], out[1], out[2], out[3], int(round(delay)))


class DelayLine(Generic[T]):
    """FIFO of messages that arrive a fixed number of steps after they are sent."""

    def __init__(self, delay_steps: int) -> None:
        self.delay = delay_steps
        self._queue: deque[tuple[int, T]] = deque()

    def send(self, step: int, message: T) -> None:
        self._queue.append((step + self.delay, message))

    def receive(self, step: int) -> list[T]:
        out = []
        while self._queue and self._queue[0][0] <= step:
            out.append(self._queue.popleft()[1])
        return out

    def clear(self) -> None:
        self._queue.clear()


class LoopState(NamedTuple):
    """What the loop knows at a control tick (passed to the per-tick hooks)."""

    t_s: float
    joints: PotentiometerReading | None
    tendons: TendonState | None
    snapshot: DynamicsSnapshot | None
    output: ControlOutput  # the tick's command


#: Called every physics step before it, with (t_s, mock): moves a force gauge, injects faults.
StepHook = Callable[[float, MockArm], None]
#: The hand goal at a time.
GoalFn = Callable[[float], HandGoal]


class StreamFaults(Protocol):
    """Fault injection in the loop's message streams (see :mod:`musculo_control.sim.faults`)."""

    def sensor_messages(self, step: int,
                        message: SensorMessage) -> list[tuple[int, SensorMessage]]:
        """The messages to send at ``step`` instead: (send step, message) pairs."""
        ...

    def snapshot_passes(self, t_s: float) -> bool: ...

    def goal(self, t_s: float, goal: HandGoal) -> object:
        """The goal the controller receives (may be malformed)."""
        ...

    def command_passes(self, t_s: float) -> bool: ...


TICK_KINDS = ("physics", "sensor", "dynamics", "control", "driver")


class ClosedLoop:
    """The mock arm, the drivers, the estimator and one controller, stepped together."""

    def __init__(self, robot: Robot, controller: Controller, mock: MockArm,
                 pots: PotentiometerReader, driver: TendonDriver, estimator: DynamicsEstimator,
                 config: RunnerConfig, file: str = "experiments.yaml", *,
                 safety: Supervisor | None = None, faults: StreamFaults | None = None) -> None:
        """``safety``: apply the safety rules around the controller (else the plain policy:
        minimum tension on a potentiometer fault); ``faults``: inject stream faults."""
        self.robot, self.controller, self.mock = robot, controller, mock
        self.safety, self.stream_faults = safety, faults
        self.pots, self.driver, self.estimator = pots, driver, estimator
        self.config = config
        self.div = divisors(config, mock.dt_s, file)
        self.dt_s = mock.dt_s
        self._sensors: DelayLine[SensorMessage] = \
            DelayLine(self.div.delay)
        self._snapshots: DelayLine[DynamicsSnapshot] = DelayLine(self.div.delay)
        self._commands: DelayLine[tuple[float, FloatArray]] = DelayLine(self.div.delay)
        self._to_arm: DelayLine[FloatArray] = DelayLine(self.div.delay)
        self.step_count = 0
        self.joints: PotentiometerReading | None = None
        self.tendons: TendonState | None = None
        self.snapshot: DynamicsSnapshot | None = None
        self.output: ControlOutput | None = None
        self.faults: list[tuple[float, str]] = []  # (time, reason) of every unsafe tick
        self.ticks = dict.fromkeys(TICK_KINDS, 0)  # events run, for the tick accounting
        self.driver_output: DriverOutput | None = None
        self.sent_max_n = 0.0  # largest tension the driver sent to the arm [N]
        self.sent_nonfinite = 0  # driver outputs with a non-finite value (must stay 0)

    def reset(self, q0_rad: FloatArray, goal: HandGoal) -> None:
        """Arm at rest at ``q0_rad``, holding with the controller's own first answer.

        The actuators start at the tensions the controller would command at q0 (as on a robot
        that was already holding the pose), so a run begins without a drop.
        """
        self.controller.reset()
        self.pots.reset()
        self.driver.reset()
        for line in (self._sensors, self._snapshots, self._commands, self._to_arm):
            line.clear()
        q0 = self.robot.arm.check_q(q0_rad, "q0_rad")
        zero = np.zeros_like(q0)
        snap = self.estimator.compute(q0, zero, 0.0)
        first = self.controller.tick(snap, q0, zero, goal, 0.0)
        tension = first.tension_n if first.ok else np.full(self.robot.n_muscles,
                                                            self.robot.hill.f_min_n)
        self.mock.reset(q0, tension)
        self.controller.reset()
        # one sensor sample and one snapshot from just before t = 0, so the first tick has
        # fresh inputs (the robot was running before the experiment's clock started)
        before = -self.div.sensor * self.dt_s
        enc, cell = self.mock.read_tendons()
        self.joints = self.pots.update(self.mock.read_potentiometers(), before)
        self.tendons = self.driver.read(enc, cell, before)
        self.snapshot = self.estimator.compute(self.joints.q_rad, self.joints.qd_rad_s, before)
        self.driver.prime(tension, before)
        if self.safety is not None:
            self.safety.reset(before, tension)
            self.safety.admit("sensors", before)
        self.step_count = 0
        self.output = None
        self.faults = []
        self.ticks = dict.fromkeys(TICK_KINDS, 0)
        self.driver_output = None
        self.sent_max_n, self.sent_nonfinite = 0.0, 0

    @property
    def time_s(self) -> float:
        return self.step_count * self.dt_s

    def expected_ticks(self) -> dict[str, int]:
        """How many events of each kind the steps run so far must have had."""
        k, div = self.step_count, self.div
        return {"physics": k, "sensor": -(-k // div.sensor), "dynamics": -(-k // div.dynamics),
                "control": -(-k // div.control), "driver": -(-k // div.driver)}

    def run(self, duration_s: float, goal_at: GoalFn, *, hook: StepHook | None = None,
            on_control: Callable[[LoopState], None] | None = None, label: str = "") -> float:
        """Advance ``duration_s`` of simulated time; returns the wall time it took [s]."""
        div = self.div
        mock, pots, driver = self.mock, self.pots, self.driver
        safety, injected, ticks = self.safety, self.stream_faults, self.ticks
        steps = int(round(duration_s / self.dt_s))
        progress_every = max(1, int(round(self.config.progress_interval_s / self.dt_s)))
        wall0 = time.perf_counter()
        for _ in range(steps):
            k = self.step_count
            t = k * self.dt_s
            if hook is not None:
                hook(t, mock)
            if k % div.sensor == 0:
                ticks["sensor"] += 1
                enc, cell = mock.read_tendons()
                message: SensorMessage = (t, mock.read_potentiometers(), enc, cell)
                if injected is None:
                    self._sensors.send(k, message)
                else:
                    for at, m in injected.sensor_messages(k, message):
                        self._sensors.send(at, m)
            for stamp, pot_counts, enc_counts, cell_counts in self._sensors.receive(k):
                if safety is not None and not safety.admit("sensors", stamp):
                    continue
                if pot_counts is not None:
                    self.joints = pots.update(pot_counts, stamp)
                if enc_counts is not None and cell_counts is not None:
                    self.tendons = driver.read(enc_counts, cell_counts, stamp)
                    if safety is not None:
                        safety.tendon_sample(self.tendons)
            if k % div.dynamics == 0 and self.joints is not None and self.joints.ok and (
                    injected is None or injected.snapshot_passes(t)):
                ticks["dynamics"] += 1
                self._snapshots.send(k, self.estimator.compute(
                    self.joints.q_rad, self.joints.qd_rad_s, self.joints.stamp_s))
            for snap in self._snapshots.receive(k):
                self.snapshot = snap
            if k % div.control == 0:
                ticks["control"] += 1
                out = self._control(t, goal_at)
                self.output = out
                if injected is None or injected.command_passes(t):
                    self._commands.send(k, (t, out.tension_n))
                if on_control is not None:
                    on_control(LoopState(t, self.joints, self.tendons, self.snapshot, out))
            for stamp, tension in self._commands.receive(k):
                driver.command(tension, stamp)
            if k % div.driver == 0:
                ticks["driver"] += 1
                sent = driver.output(t)
                self.driver_output = sent
                top = float(sent.tension_n.max())
                if not (math.isfinite(top) and bool(np.isfinite(sent.units).all())):
                    self.sent_nonfinite += 1
                elif top > self.sent_max_n:
                    self.sent_max_n = top
                if safety is not None:
                    safety.driver_sent(t, sent.tension_n)
                self._to_arm.send(k, sent.units)
            for units in self._to_arm.receive(k):
                mock.set_command(units)
            mock.step()
            self.step_count += 1
            ticks["physics"] += 1
            if label and self.step_count % progress_every == 0:
                wall = time.perf_counter() - wall0
                done = self.step_count * self.dt_s
                print(f"  {label}: {done:6.1f} s simulated, {wall:5.1f} s wall "
                      f"({(_ + 1) * self.dt_s / max(wall, 1e-9):.1f}x real time)",
                      file=sys.stderr, flush=True)
        return time.perf_counter() - wall0

    def _control(self, t: float, goal_at: GoalFn) -> ControlOutput:
        if self.safety is not None:
            wanted = goal_at(t)
            goal = wanted if self.stream_faults is None else self.stream_faults.goal(t, wanted)
            joint_faults = self.joints.faults if self.joints is not None else ()
            out = self.safety.tick(t, self.controller, joints=self.joints, tendons=self.tendons,
                                   snapshot=self.snapshot, goal=goal,
                                   joint_faults=joint_faults).output
            if not out.ok:
                self.faults.append((t, out.reason))
            return out
        faults = self.pots.check(t)
        if faults:
            out = safe_output(self.robot, "joint state: " + "; ".join(faults))
        elif self.joints is None:
            out = safe_output(self.robot, "joint state: none received yet")
        else:
            out = self.controller.tick(self.snapshot, self.joints.q_rad, self.joints.qd_rad_s,
                                       goal_at(t), t)
        if not out.ok:
            self.faults.append((t, out.reason))
        return out
