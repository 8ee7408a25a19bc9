"""control_process: several nodes of the suite in one process (one executor, one tick loop).

    control_process [NODE ...] --ros-args --params-file <config>/ros_params.yaml [...]

The nodes are the same classes as the one-node executables, with the same names, parameters
and topics; what changes is only that they share one Python interpreter, one DDS participant
and one thread that sleeps to the earliest deadline of all their jobs
(:func:`~musculo_control.nodes.tick_loop.spin_tick_loops`). That saves each node's fixed cost
of a process (its interpreter, its DDS participant and threads, its own wake-ups and
housekeeping) at the price of parallelism: a long tick of one node delays the next tick of the
others instead of running beside it on another core.

The launch files' shared layout (``one_process``; :data:`~musculo_control.nodes.graph.
SHARED_PROCESSES`) runs this executable twice: ``hardware_process`` with the potentiometer and
tendon driver nodes (the 500 Hz path to the hardware, kept apart from the QP's ticks and alive
when the controller's process is frozen or dies) and ``control_process`` with the dynamics,
QP and goal nodes (and the muscle markers); the mock arm stands for hardware and keeps its own
process. The process's own messages (a refused argument or parameter file) name the shared
process its nodes make up (:func:`~musculo_control.nodes.graph.shared_process_name`).
``NODE`` defaults to :data:`CONTROLLER_NODES`, every node that runs on the robot computer, in
one process.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from rclpy.node import Node

from musculo_control.nodes.graph import CONTROL_PROCESS, shared_process_name
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
        print(f"[FATAL] [{CONTROL_PROCESS}]: {names}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    specs: list[NodeSpec] = [(n, NODE_PARAMS[n], _factory(n)) for n in names]
    raise SystemExit(run_nodes(shared_process_name(names), specs))


if __name__ == "__main__":
    main()
