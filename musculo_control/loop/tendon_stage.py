"""The tendon driver: tension commands in, actuator commands out; raw tendon counts in,
muscle states out (``tendon_driver_node``'s logic).

A shell of stamp order and health around :class:`~musculo_control.hardware.tendon_driver.
TendonDriver`, which is the last line of defence: it clamps every command to the actuators'
envelope, limits its rate, holds the last command while commands or tendon states are late
(a warning), and stops the arm (safety.yaml ``stops``) when they stop, or when a command is
bad.

It also obeys only the controller it serves and the operator: with a :class:`~musculo_control.
safety.authority.WriterWatch` on ``muscle_commands`` (the node gives it the graph's
publishers, :meth:`TendonStage.judge_writers`) no sample is used while a writer is not the
controller's, and minimum tension goes out while a foreign writer is there (unless each
sample's writer is known); with :attr:`TendonStage.stop` set, minimum tension until it is
released.
"""

from __future__ import annotations

import numpy.typing as npt

from musculo_control.arrays import any_true, largest
from musculo_control.hardware.tendon_driver import DriverOutput, TendonDriver, TendonState
from musculo_control.loop import topics
from musculo_control.loop.health import ERROR, OK, WARN, Health
from musculo_control.safety.authority import Writer, WriterVerdict, WriterWatch
from musculo_control.safety.operator_stop import OperatorStop
from musculo_control.streams import StampOrder

STATE_IN_TOPIC = topics.TENDON_STATES
COMMAND_IN_TOPIC = topics.MUSCLE_COMMANDS
COMMAND_OUT_TOPIC = topics.TENDON_COMMANDS
STATE_OUT_TOPIC = topics.MUSCLE_STATES
#: How the driver's status begins while it stops the arm ("stop (hold): ...").
STOP_WORD = "stop"


class TendonStage:
    """See the module docstring."""

    def __init__(self, driver: TendonDriver, warn_throttle_s: float = 1.0) -> None:
        self.driver = driver
        self.state_order = StampOrder(STATE_IN_TOPIC)
        self.command_order = StampOrder(COMMAND_IN_TOPIC)
        self.health = Health("tendon actuators", warn_throttle_s)
        #: the operator stop (survives reset(): only its release clears it)
        self.stop = OperatorStop()
        #: who may write muscle_commands (None: not watched, as in the ROS-free runner)
        self.writers: WriterWatch | None = None
        self.reset()

    def reset(self) -> None:
        self.driver.reset()
        self.state_order.reset()
        self.command_order.reset()
        self.ticks = 0  # outputs sent
        self.limited_ticks = 0  # outputs with a clamped or rate-limited tendon
        self.clamped_ticks = 0  # outputs with a command outside the envelope, clamped
        self.fault_ticks = 0  # outputs of a stop for a fault
        self.foreign_refused = 0  # muscle_commands samples not used: a foreign writer is there
        self.stop_ticks = 0  # outputs stopped for the operator stop
        self.late_ticks = 0  # outputs holding the last command while an input was late
        self.sent_max_n = 0.0  # largest tension sent [N]
        self.last: DriverOutput | None = None

    def receive_state(self, stamp_s: float, encoder_counts: npt.ArrayLike,
                      loadcell_counts: npt.ArrayLike) -> TendonState | None:
        """The muscle state to publish for one raw tendon sample, or ``None``."""
        late = self.state_order.check(stamp_s)
        if late is not None:
            self.health.refuse(STATE_IN_TOPIC, late, stamp_s)
            return None
        state = self.driver.read(encoder_counts, loadcell_counts, stamp_s)
        if not state.ok:
            self.health.refuse(STATE_IN_TOPIC, "; ".join(state.faults), stamp_s)
            return None
        return state

    def operator_stop(self, on: bool, now_s: float, reason: str = "") -> None:
        """Set (``on``) or release the operator stop at ``now_s`` [s]."""
        if on:
            self.stop.stop(now_s, reason)
        else:
            self.stop.release(now_s)

    def judge_writers(self, writers: list[Writer], now_s: float) -> WriterVerdict | None:
        """The graph's publishers of ``muscle_commands`` at ``now_s`` [s], judged by
        :attr:`writers` (``None`` when not watched)."""
        if self.writers is None:
            return None
        return self.writers.judge(writers, now_s)

    def receive_command(self, stamp_s: float, tension_n: npt.ArrayLike,
                        writer_gid: bytes | None = None) -> None:
        """A tension command [N] (muscles-file order); a bad one puts every tendon at minimum
        tension until a good one comes (the driver's rule). ``writer_gid``: the id of the
        publisher that sent it, where the middleware gives it (see :attr:`writers`)."""
        if self.writers is not None:
            if not self.writers.admits(writer_gid):
                self.foreign_refused += 1
                return
        late = self.command_order.check(stamp_s)
        if late is not None:
            self.health.refuse(COMMAND_IN_TOPIC, late, stamp_s)
            return
        faults = self.driver.command(tension_n, stamp_s)
        if faults:
            self.health.refuse(COMMAND_IN_TOPIC, "; ".join(faults), stamp_s)

    def output(self, now_s: float) -> DriverOutput:
        """What goes to the actuators at ``now_s`` [s] (finite, inside the envelope)."""
        stops: list[str] = []
        if self.stop.stopped:
            stops.append("operator stop: " + self.stop.message())
            self.stop_ticks += 1
        verdict = self.writers.verdict if self.writers is not None else None
        foreign = verdict.message if verdict is not None and verdict.foreign else ""
        if foreign and not (self.writers is not None and self.writers.identified):
            stops.append(f"{COMMAND_IN_TOPIC}: {foreign} besides the controller; their "
                         f"samples cannot be told apart, none is used")
        out = self.driver.output(now_s, tuple(stops))
        self.last = out
        self.ticks += 1
        if out.faults:
            self.fault_ticks += 1
            phase = self.driver.stopping.phase(now_s)
            self.health.set(ERROR, f"{STOP_WORD} ({phase.label if phase else 'cut'}): "
                            + "; ".join(out.faults), now_s)
        else:
            self.limited_ticks += int(any_true(out.limited))
            self.clamped_ticks += int(any_true(out.clamped))
            top = largest(out.tension_n)
            if top > self.sent_max_n:
                self.sent_max_n = top
            if foreign:  # each sample's writer known: the controller's still pass
                self.health.set(ERROR, f"passing only the controller's commands: "
                                       f"{COMMAND_IN_TOPIC}: {foreign}", now_s)
            elif out.late:
                self.late_ticks += 1
                self.health.set(WARN, "holding the last command: " + "; ".join(out.late), now_s)
            else:
                self.health.set(OK, "passing commands", now_s)
        return out

    def values(self) -> dict[str, str]:
        return {"output ticks": str(self.ticks),
                "ticks stopped for a fault": str(self.fault_ticks),
                "ticks holding the last command (an input late)": str(self.late_ticks),
                "ticks with a clamped or rate-limited tendon": str(self.limited_ticks),
                "ticks with a clamped tendon": str(self.clamped_ticks),
                "ticks stopped for the operator stop": str(self.stop_ticks),
                "muscle_commands samples refused (foreign writer)": str(self.foreign_refused),
                "largest tension sent [N]": f"{self.sent_max_n:.1f}",
                **self.health.values()}
