"""The mock arm behind the raw topics (``mock_hardware_node``'s logic, and the runner's arm).

Around :class:`~musculo_control.sim.mock_arm.MockArm` (MuJoCo physics, raw sensors,
actuator modules with their own watchdog) this adds what both the node and the runner do
with it:

- start-up: the arm is held still by hand (joints frozen, actuators working) until commands
  above the modules' idle tension have arrived for ``startup.release_after_s``; then it is let
  go, as an operator lets go once the controller holds the arm. :attr:`MockStage.released_s`
  is that moment (time 0 of an experiment);
- the raw sensor messages to send at a physics step, through an optional stream-fault
  injector (dropouts, a reordered or delayed stream), which may hold a message back and send
  it later: :meth:`MockStage.sense` returns what goes out now;
- commands that carry their send time take effect at the physics step of that time: a node
  that steps physics in bursts (a loaded computer stalled it) replays each command where it
  was sent, as real actuator modules, which are never stalled by the controller's computer,
  would have received it (applying the newest one over the whole burst would make them act
  on commands before they were sent).
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

import numpy as np
import numpy.typing as npt

from musculo_control.errors import InputError
from musculo_control.loop import topics
from musculo_control.loop.health import ERROR, OK, WARN, Health
from musculo_control.loop.parts import LoopParts
from musculo_control.safety.authority import WriterWatch
from musculo_control.sim.mock_arm import MockArm, MockArmConfig, StartupConfig

FloatArray = npt.NDArray[np.float64]
#: One raw sensor message: (stamp [s], potentiometer counts, encoder counts, load-cell counts);
#: an injected fault may blank a part (None: that sensor's message never came).
SensorMessage = tuple[float, "FloatArray | None", "FloatArray | None", "FloatArray | None"]

COMMAND_TOPIC = topics.TENDON_COMMANDS


class SensorFaults(Protocol):
    """Injected faults of the raw sensor streams (see :mod:`musculo_control.sim.faults`)."""

    def sensor_messages(self, step: int,
                        message: SensorMessage) -> list[tuple[int, SensorMessage]]:
        """The messages to send instead of ``message``: (send step, message) pairs."""
        ...


class MockStage:
    """See the module docstring."""

    def __init__(self, arm: MockArm, stamp0_s: float = 0.0,
                 warn_throttle_s: float = 1.0) -> None:
        self.arm = arm
        self.startup: StartupConfig = arm.config.startup
        self.stamp0_s = stamp0_s  # the stamp of physics time 0 [s]
        self.health = Health("mock arm", warn_throttle_s)
        self.sensor_faults: SensorFaults | None = None
        #: who may write hw/tendon_commands (the node gives it the graph's publishers; None:
        #: not watched): the actuator modules obey their driver only
        self.writers: WriterWatch | None = None
        self.foreign_refused = 0  # commands not applied: a foreign writer was there
        self._idle_n = arm.config.actuator.timeout_tension_n
        self.reset(arm.robot.home_pose_rad)

    def reset(self, q0_rad: npt.ArrayLike, stamp0_s: float | None = None) -> None:
        """The arm held still at ``q0_rad`` [rad], the modules at their idle tension."""
        if stamp0_s is not None:
            self.stamp0_s = stamp0_s
        self.arm.stamp0_s = self.stamp0_s
        self.arm.reset(q0_rad, self._idle_n)
        self.arm.held = self.startup.release_after_s > 0.0
        self.released_s: float | None = None if self.arm.held else self.stamp0_s
        self._good_for_s = 0.0
        self._queue: list[tuple[int, SensorMessage]] = []
        self._commands: deque[tuple[float, npt.ArrayLike]] = deque()  # (stamp [s], units)
        self.commands_refused = 0

    @property
    def time_s(self) -> float:
        """The stamp of the current physics step [s]."""
        return self.arm.time_s

    def skip(self, seconds: float) -> None:
        """Time that physics did not run (a real-time mock that fell behind): the stamps jump
        forward by it, so they stay the clock's time of the sample."""
        self.stamp0_s += seconds
        self.arm.stamp0_s += seconds

    def receive_command(self, driver_units: npt.ArrayLike, stamp_s: float | None = None,
                        writer_gid: bytes | None = None) -> None:
        """Target tensions in driver units, as the actuator modules take them: now, or, with
        ``stamp_s`` [s] (when it was sent), at the first physics step at or after it.
        ``writer_gid``: its publisher's id, where known; with :attr:`writers`, a command that
        may not be the driver's is not applied."""
        if self.writers is not None and not self.writers.admits(writer_gid):
            self.foreign_refused += 1
            return
        if stamp_s is not None and stamp_s > self.time_s:
            self._commands.append((stamp_s, driver_units))
            return
        self._apply(driver_units)

    def _apply(self, driver_units: npt.ArrayLike) -> None:
        try:
            self.arm.set_command(driver_units)
        except InputError as exc:
            self.commands_refused += 1
            self.health.refuse(COMMAND_TOPIC, str(exc), self.time_s)

    def sense(self) -> list[SensorMessage]:
        """The raw sensor messages to send at this step (call at the sensor rate)."""
        enc, cell = self.arm.read_tendons()
        message: SensorMessage = (self.time_s, self.arm.read_potentiometers(), enc, cell)
        if self.sensor_faults is None and not self._queue:
            return [message]
        pending = self._queue
        if self.sensor_faults is None:
            pending.append((self.steps, message))
        else:
            pending.extend(self.sensor_faults.sensor_messages(self.steps, message))
        now = [m for at, m in pending if at <= self.steps]
        self._queue = [(at, m) for at, m in pending if at > self.steps]
        return now

    @property
    def steps(self) -> int:
        """Physics steps since the reset."""
        return self.arm.steps

    def step(self) -> None:
        """One physics step, with the commands sent by its time; lets the arm go once the
        commands hold it."""
        arm = self.arm
        commands = self._commands
        while commands and commands[0][0] <= self.time_s:
            self._apply(commands.popleft()[1])
        if arm.held:
            holding = (not arm.watchdog_fired
                       and float(np.max(arm.command_tension_n)) > self._idle_n * (1 + 1e-6))
            self._good_for_s = self._good_for_s + arm.dt_s if holding else 0.0
            if self._good_for_s >= self.startup.release_after_s:
                arm.held = False
                self.released_s = self.time_s
        arm.step()

    def check(self) -> None:
        """Update the health (call at any rate)."""
        arm, t = self.arm, self.time_s
        verdict = self.writers.verdict if self.writers is not None else None
        if verdict is not None and verdict.foreign:
            self.health.set(ERROR, f"{COMMAND_TOPIC}: {verdict.message} besides the tendon "
                                   f"driver: their commands are not applied", t)
        elif arm.held:
            self.health.set(WARN, "holding the arm until the controller holds it", t)
        elif arm.watchdog_fired:
            self.health.set(ERROR, f"no {COMMAND_TOPIC}: the actuator modules' watchdog holds "
                                   f"{self._idle_n:g} N", t)
        else:
            self.health.set(OK, "running", t)

    def values(self) -> dict[str, str]:
        return {"physics time [s]": f"{self.arm.time_s - self.stamp0_s:.3f}",
                **{f"mujoco warning {k}": str(v) for k, v in self.arm.warnings().items()},
                **self.health.values()}


def mock_stage(parts: LoopParts, config: MockArmConfig, seed: int | None = None,
               stamp0_s: float = 0.0, file: str = "mock_arm.yaml",
               warn_throttle_s: float = 1.0) -> MockStage:
    """The mock arm of ``parts``' robot and calibration behind the raw topics."""
    arm = MockArm(parts.robot, parts.drivers.calibration, config, seed, file)
    return MockStage(arm, stamp0_s, warn_throttle_s)
