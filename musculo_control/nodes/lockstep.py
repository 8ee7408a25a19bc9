"""Lockstep on simulated time: how far behind the clock each stream may be (ROS-free).

The mock arm publishes the next /clock only once every node has put out its output of the
instants before (``mock_hardware_node`` ``lockstep``): a stream listed here has then been
*published* up to ``now - lead`` at every clock ``now``. Its consumers complete the guarantee:
on simulated time with ``lockstep`` on, a consumer's tick waits (wall time, at most its
``lockstep_wait_s``) until it has also *received* that sample
(:meth:`~musculo_control.nodes.polled.PolledSubscription.await_stamp`). Without that, on a
loaded machine a process woken after a stall may run its tick on the new /clock before DDS has
handed it the samples already sent (seen: the tendon driver's 20 ms watchdog after two
commands still in flight; the dynamics node's first tick after a stall on a 56 ms old joint
state), and simulated-time results would depend on the machine's load.
"""

from __future__ import annotations

from typing import Any

from musculo_control import messages as cv
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot_codec import SnapshotCodec
from musculo_control.loop.build import LoopParts
from musculo_control.loop.control_step import COMMAND_TOPIC as MUSCLE_COMMANDS
from musculo_control.loop.dynamics_stage import IN_TOPIC as JOINT_STATES
from musculo_control.loop.dynamics_stage import OUT_TOPIC as DYNAMICS
from musculo_control.loop.mock_stage import COMMAND_TOPIC as TENDON_COMMANDS


def lockstep_leads(parts: LoopParts) -> dict[str, float]:
    """Per stream, how far behind the next clock its newest stamp may be [s].

    Nodes ticking on the clock (QP, driver) stamp their tick, so they must have ticked at
    every deadline before the next sensor instant; joint_states carry the sample's stamp, which
    the potentiometer node may only see one sensor step later; dynamics snapshots carry the
    stamp of the joint state they were computed from."""
    step = 1.0 / parts.drivers.rates.sensor_rate_hz  # the clock's step: one sensor instant
    loop = parts.controller.loop
    return {MUSCLE_COMMANDS: 1.0 / loop.control_rate_hz + step,
            TENDON_COMMANDS: 1.0 / parts.drivers.rates.driver_rate_hz + step,
            JOINT_STATES: 2.0 * step,
            DYNAMICS: 1.0 / loop.dynamics_rate_hz + 3.0 * step}


def snapshot_stamp_s(codec: SnapshotCodec, msg: Any) -> float:
    """The stamp [s] a dynamics message (Float64MultiArray) carries; -inf if it does not
    decode (its consumer refuses it when it takes it)."""
    dims, data, offset = cv.read_float64_multiarray(msg)
    try:
        return codec.decode(dims, data, offset)[0].stamp_s
    except InputError:
        return -float("inf")
