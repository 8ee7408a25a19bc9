"""Lockstep on simulated time: how far behind the next clock each stream's newest stamp may be.

The mock arm publishes the next /clock only once every node has put out its output of the
instants before (:mod:`musculo_control.nodes.lockstep` says how the nodes use this).
"""

from __future__ import annotations

from musculo_control.hardware.drivers import HardwareRates
from musculo_control.loop.topics import DYNAMICS, JOINT_STATES, MUSCLE_COMMANDS, TENDON_COMMANDS


def lockstep_leads(rates: HardwareRates, control_rate_hz: float,
                   dynamics_rate_hz: float) -> dict[str, float]:
    """Per stream, how far behind the next clock its newest stamp may be [s].

    Nodes ticking on the clock (QP, driver) stamp their tick, so they must have ticked at
    every deadline before the next sensor instant; joint_states carry the sample's stamp, which
    the potentiometer node may only see one sensor step later; dynamics snapshots carry the
    stamp of the joint state they were computed from."""
    step = 1.0 / rates.sensor_rate_hz  # the clock's step: one sensor instant
    return {MUSCLE_COMMANDS: 1.0 / control_rate_hz + step,
            TENDON_COMMANDS: 1.0 / rates.driver_rate_hz + step,
            JOINT_STATES: 2.0 * step,
            DYNAMICS: 1.0 / dynamics_rate_hz + 3.0 * step}
