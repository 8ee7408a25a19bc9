"""Lockstep on simulated time: how far behind the next clock each stream's newest stamp may be.

The mock arm publishes the next /clock only once every node has put out its output of the
instants before (:data:`WATCHED`; :mod:`musculo_control.nodes.lockstep` says how the nodes use
this).
"""

from __future__ import annotations

from musculo_control.hardware.drivers import HardwareRates
from musculo_control.loop.topics import (
    DYNAMICS,
    JOINT_STATES,
    MUSCLE_COMMANDS,
    MUSCLE_STATES,
    TENDON_COMMANDS,
    TENDON_STATES,
)

#: The streams whose progress the mock arm waits for before it publishes the next clock; the
#: others of :func:`lockstep_leads` follow from them (see there).
WATCHED = (MUSCLE_COMMANDS, TENDON_COMMANDS, JOINT_STATES, DYNAMICS)


def lockstep_leads(rates: HardwareRates, control_rate_hz: float,
                   dynamics_rate_hz: float) -> dict[str, float]:
    """Per stream, how far behind the next clock its newest stamp may be [s].

    Nodes ticking on the clock (QP, driver) stamp their tick, so they must have ticked at
    every deadline before the next sensor instant; joint_states carry the sample's stamp, which
    the potentiometer node may only see one sensor step later; dynamics snapshots carry the
    stamp of the joint state they were computed from.

    Two more follow from those without a wait of the mock's own: ``hw/tendon_states``, which
    the mock arm sends right after each clock (the sample of the instant before the clock was
    sent before it), and ``muscle_states``, which the tendon driver relays from them at its tick
    before it sends that tick's ``hw/tendon_commands`` (so one sensor step behind those)."""
    step = 1.0 / rates.sensor_rate_hz  # the clock's step: one sensor instant
    tendon_commands = 1.0 / rates.driver_rate_hz + step
    return {MUSCLE_COMMANDS: 1.0 / control_rate_hz + step,
            TENDON_COMMANDS: tendon_commands,
            JOINT_STATES: 2.0 * step,
            DYNAMICS: 1.0 / dynamics_rate_hz + 3.0 * step,
            TENDON_STATES: step,
            MUSCLE_STATES: tendon_commands + step}
