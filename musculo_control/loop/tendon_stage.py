"""The tendon driver: tension commands in, actuator commands out; raw tendon counts in,
muscle states out (``tendon_driver_node``'s logic).

A shell of stamp order and health around :class:`~musculo_control.hardware.tendon_driver.
TendonDriver`, which is the last line of defence: it clamps every command to the actuators'
envelope, limits its rate, holds the last command while commands or tendon states are late
(a warning), and sends minimum tension when they stop, or when a command is bad.
"""

from __future__ import annotations

import numpy.typing as npt

from musculo_control.arrays import any_true, largest
from musculo_control.hardware.tendon_driver import DriverOutput, TendonDriver, TendonState
from musculo_control.loop.health import ERROR, OK, WARN, Health
from musculo_control.streams import StampOrder

STATE_IN_TOPIC = "hw/tendon_states"
COMMAND_IN_TOPIC = "muscle_commands"
COMMAND_OUT_TOPIC = "hw/tendon_commands"
STATE_OUT_TOPIC = "muscle_states"


class TendonStage:
    """See the module docstring."""

    def __init__(self, driver: TendonDriver, warn_throttle_s: float = 1.0) -> None:
        self.driver = driver
        self.state_order = StampOrder(STATE_IN_TOPIC)
        self.command_order = StampOrder(COMMAND_IN_TOPIC)
        self.health = Health("tendon actuators", warn_throttle_s)
        self.reset()

    def reset(self) -> None:
        self.driver.reset()
        self.state_order.reset()
        self.command_order.reset()
        self.ticks = 0  # outputs sent
        self.limited_ticks = 0  # outputs with a clamped or rate-limited tendon
        self.clamped_ticks = 0  # outputs with a command outside the envelope, clamped
        self.fault_ticks = 0  # outputs at minimum tension for a fault
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

    def receive_command(self, stamp_s: float, tension_n: npt.ArrayLike) -> None:
        """A tension command [N] (muscles-file order); a bad one puts every tendon at minimum
        tension until a good one comes (the driver's rule)."""
        late = self.command_order.check(stamp_s)
        if late is not None:
            self.health.refuse(COMMAND_IN_TOPIC, late, stamp_s)
            return
        faults = self.driver.command(tension_n, stamp_s)
        if faults:
            self.health.refuse(COMMAND_IN_TOPIC, "; ".join(faults), stamp_s)

    def output(self, now_s: float) -> DriverOutput:
        """What goes to the actuators at ``now_s`` [s] (finite, inside the envelope)."""
        out = self.driver.output(now_s)
        self.last = out
        self.ticks += 1
        if out.faults:
            self.fault_ticks += 1
            self.health.set(ERROR, "minimum tension: " + "; ".join(out.faults), now_s)
        else:
            self.limited_ticks += int(any_true(out.limited))
            self.clamped_ticks += int(any_true(out.clamped))
            top = largest(out.tension_n)
            if top > self.sent_max_n:
                self.sent_max_n = top
            if out.late:
                self.late_ticks += 1
                self.health.set(WARN, "holding the last command: " + "; ".join(out.late), now_s)
            else:
                self.health.set(OK, "passing commands", now_s)
        return out

    def values(self) -> dict[str, str]:
        return {"output ticks": str(self.ticks),
                "ticks at minimum tension for a fault": str(self.fault_ticks),
                "ticks holding the last command (an input late)": str(self.late_ticks),
                "ticks with a clamped or rate-limited tendon": str(self.limited_ticks),
                "ticks with a clamped tendon": str(self.clamped_ticks),
                "largest tension sent [N]": f"{self.sent_max_n:.1f}",
                **self.health.values()}
