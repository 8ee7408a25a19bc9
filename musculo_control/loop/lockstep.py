"""Lockstep on simulated time: how far behind the next clock each stream's newest stamp may be.

The mock arm publishes the next /clock only once every node has put out its output of the
instants before (``mock_hardware_node`` ``lockstep``, the streams of :data:`WATCHED`): a stream
of :func:`lockstep_leads` has then been *published* up to ``now - lead`` at every clock ``now``.
Its consumers complete the guarantee: on simulated time with ``lockstep`` on, a consumer's tick
waits (wall time, at most its ``lockstep_wait_s``) until it has also *received* that sample
(:meth:`~musculo_control.nodes.polled.PolledSubscription.await_stamp`; a dynamics message's
stamp is :func:`musculo_control.messages.snapshot_stamp_s`). Without that, on a loaded machine a
process woken after a stall may run its tick on the new /clock before DDS has handed it the
samples already sent (seen: the tendon driver's 20 ms watchdog after two commands still in
flight; the dynamics node's first tick after a stall on a 56 ms old joint state), and
simulated-time results would depend on the machine's load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from musculo_control.loop.topics import (
    DYNAMICS,
    JOINT_STATES,
    MUSCLE_COMMANDS,
    MUSCLE_STATES,
    TENDON_COMMANDS,
    TENDON_STATES,
)

if TYPE_CHECKING:  # the driver nodes' process loads no model (loop/driver_parts.py)
    from musculo_control.loop.parts import LoopParts

#: The streams whose progress the mock arm waits for before it publishes the next clock; the
#: others of :func:`lockstep_leads` follow from them (see there).
WATCHED = (MUSCLE_COMMANDS, TENDON_COMMANDS, JOINT_STATES, DYNAMICS)


def lockstep_leads(parts: LoopParts) -> dict[str, float]:
    """Per stream, how far behind the next clock its newest stamp may be [s], at the rates of
    ``parts``' config folder.

    Nodes ticking on the clock (QP, driver) stamp their tick, so they must have ticked at
    every deadline before the next sensor instant; joint_states carry the sample's stamp, which
    the potentiometer node may only see one sensor step later; dynamics snapshots carry the
    stamp of the joint state they were computed from.

    Two more follow from those without a wait of the mock's own: ``hw/tendon_states``, which
    the mock arm sends right after each clock (the sample of the instant before the clock was
    sent before it), and ``muscle_states``, which the tendon driver relays from them at its tick
    before it sends that tick's ``hw/tendon_commands`` (so one sensor step behind those)."""
    rates, loop = parts.drivers.rates, parts.controller.loop
    step = 1.0 / rates.sensor_rate_hz  # the clock's step: one sensor instant
    tendon_commands = 1.0 / rates.driver_rate_hz + step
    return {MUSCLE_COMMANDS: 1.0 / loop.control_rate_hz + step,
            TENDON_COMMANDS: tendon_commands,
            JOINT_STATES: 2.0 * step,
            DYNAMICS: 1.0 / loop.dynamics_rate_hz + 3.0 * step,
            TENDON_STATES: step,
            MUSCLE_STATES: tendon_commands + step}
