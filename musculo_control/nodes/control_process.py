"""control_process: several nodes of the suite in one process (one executor, one tick loop).

    control_process [NODE ...] --ros-args --params-file <config>/ros_params.yaml [...]

The nodes are the same classes as the one-node executables, with the same names, parameters
and topics; what changes is only that they share one Python interpreter, one DDS participant
and one thread that sleeps to the earliest deadline of all their jobs
(:func:`~musculo_control.nodes.tick_loop.spin_tick_loops`). That saves each node's fixed cost
of a process (its interpreter, its DDS participant and threads, its own wake-ups and
housekeeping) at the price of parallelism: a long QP tick delays the drivers' next tick
instead of running beside it on another core. ``NODE`` defaults to :data:`CONTROLLER_NODES`,
the nodes that run on the robot computer (the mock arm stands for hardware: it keeps its own
process). The launch files start this with ``one_process:=true``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from rclpy.node import Node

from musculo_control.nodes.node_config import (
    ACTIVATION_QP_NODE,
    DYNAMICS_NODE,
    GOAL_NODE,
    MUSCLE_MARKER_NODE,
    NODE_PARAMS,
    POTENTIOMETER_NODE,
    TENDON_DRIVER_NODE,
)
from musculo_control.nodes.process import NodeSpec, run_nodes

PROCESS_NAME = "control_process"

#: The nodes this executable runs when none are named, in tick order.
CONTROLLER_NODES = (POTENTIOMETER_NODE, TENDON_DRIVER_NODE, DYNAMICS_NODE, ACTIVATION_QP_NODE,
                    GOAL_NODE)


def _factory(name: str) -> Callable[[], Node]:
    """The node class of ``name`` (imported here: each pulls in its own dependencies)."""
    if name == POTENTIOMETER_NODE:
        from musculo_control.nodes.potentiometer_node import PotentiometerNode
        return PotentiometerNode
    if name == TENDON_DRIVER_NODE:
        from musculo_control.nodes.tendon_driver_node import TendonDriverNode
        return TendonDriverNode
    if name == DYNAMICS_NODE:
        from musculo_control.nodes.dynamics_node import DynamicsNode
        return DynamicsNode
    if name == ACTIVATION_QP_NODE:
        from musculo_control.nodes.activation_qp_node import ActivationQPNode
        return ActivationQPNode
    if name == GOAL_NODE:
        from musculo_control.nodes.goal_node import GoalNode
        return GoalNode
    from musculo_control.nodes.muscle_marker_node import MuscleMarkerNode
    return MuscleMarkerNode


#: Nodes that may share this process (the mock arm may not: it stands for the hardware).
SHAREABLE = CONTROLLER_NODES + (MUSCLE_MARKER_NODE,)


def node_names(argv: Sequence[str]) -> list[str] | str:
    """The node names before ``--ros-args`` (default :data:`CONTROLLER_NODES`), or why they
    are refused."""
    own = list(argv[1:argv.index("--ros-args")] if "--ros-args" in argv else argv[1:])
    names = own or list(CONTROLLER_NODES)
    unknown = [n for n in names if n not in SHAREABLE]
    if unknown:
        return f"unknown node(s) {unknown}: expected some of {list(SHAREABLE)}"
    if len(set(names)) != len(names):
        return f"a node named twice in {names}"
    return names


def main() -> None:
    names = node_names(sys.argv)
    if isinstance(names, str):
        print(f"[FATAL] [{PROCESS_NAME}]: {names}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    specs: list[NodeSpec] = [(n, NODE_PARAMS[n], _factory(n)) for n in names]
    raise SystemExit(run_nodes(PROCESS_NAME, specs))


if __name__ == "__main__":
    main()
