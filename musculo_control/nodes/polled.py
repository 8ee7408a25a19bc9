"""Polled inputs (:class:`PolledInputs`). rclpy's executor costs a few hundred microseconds of
CPU per wake-up on the 2-core test machine, so a node that would wake for every one of 500
joint states per second only to keep the newest spends a quarter of a core on nothing. A node
that acts at its own tick (dynamics at 20 Hz, the QP at 125 Hz, the drivers' output ticks)
instead takes the newest sample of such a stream at the tick, from a subscription that the
executor never waits on: DDS keeps the newest sample (KEEP_LAST 1) in its own thread, and the
tick takes it with the call rclpy's executor and ``wait_for_message`` use themselves. The
subscriptions live on a hidden helper node (``_<node>_inputs``, same namespace) that is never
spun; command-line topic remaps do not apply to it (use namespaces instead).
"""

from __future__ import annotations

from typing import Any

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def _never_called(msg: Any) -> None:  # the executor never spins the input node
    return None


class PolledSubscription:
    """The newest message of one topic, taken when asked (see :class:`PolledInputs`)."""

    def __init__(self, node: Node, msg_type: Any, topic: str, qos: QoSProfile) -> None:
        self.topic = topic
        self._sub = node.create_subscription(msg_type, topic, _never_called, qos)
        self._type = msg_type

    def take_newest(self) -> Any | None:
        """The newest message received since the last call, or ``None``."""
        taken = self.take_all()
        return taken[-1] if taken else None

    def take_all(self) -> list[Any]:
        """Every message queued since the last call (at most the QoS depth), oldest first."""
        out: list[Any] = []
        handle = self._sub.handle
        with handle:
            while True:
                got = handle.take_message(self._type, False)
                if got is None:
                    return out
                out.append(got[0])


class PolledInputs:
    """A hidden, never-spun node holding a node's polled subscriptions."""

    def __init__(self, owner: Node) -> None:
        self.node = Node(f"_{owner.get_name()}_inputs", namespace=owner.get_namespace(),
                         use_global_arguments=False, start_parameter_services=False,
                         enable_rosout=False)

    def subscribe(self, msg_type: Any, topic: str, depth: int = 1,
                  qos: QoSProfile | None = None) -> PolledSubscription:
        """Best-effort, keep-last ``depth`` (1: only the newest matters), unless ``qos``."""
        if qos is None:
            qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                             reliability=ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.VOLATILE)
        return PolledSubscription(self.node, msg_type, topic, qos)

    def destroy(self) -> None:
        self.node.destroy_node()
