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

from typing import TYPE_CHECKING, Any

from musculo_control import messages
from musculo_control.errors import InputError
from musculo_control.loop.lockstep import WATCHED
from musculo_control.loop.lockstep import lockstep_leads as leads
from musculo_control.loop.topics import DYNAMICS, JOINT_STATES, MUSCLE_COMMANDS, TENDON_COMMANDS

if TYPE_CHECKING:  # the nodes that only import the topics load no model (loop/driver_parts.py)
    from musculo_control.estimation.snapshot_codec import SnapshotCodec
    from musculo_control.loop.parts import LoopParts

__all__ = ["DYNAMICS", "JOINT_STATES", "MUSCLE_COMMANDS", "TENDON_COMMANDS", "WATCHED",
           "lockstep_leads", "snapshot_stamp_s"]


def lockstep_leads(parts: LoopParts) -> dict[str, float]:
    """Per stream, how far behind the next clock its newest stamp may be [s]
    (:func:`musculo_control.loop.lockstep.lockstep_leads` of the folder's rates)."""
    loop = parts.controller.loop
    return leads(parts.drivers.rates, loop.control_rate_hz, loop.dynamics_rate_hz)


def snapshot_stamp_s(codec: SnapshotCodec, msg: Any) -> float:
    """The stamp [s] a dynamics message (Float64MultiArray) carries; -inf if it does not
    decode (its consumer refuses it when it takes it)."""
    dims, data, offset = messages.read_float64_multiarray(msg)
    try:
        return codec.decode(dims, data, offset)[0].stamp_s
    except InputError:
        return -float("inf")
