"""Fault injection in a running node graph, from the test side only.

The ROS-free runner's injector (:class:`~musculo_control.sim.faults.FaultInjector`) reaches
the node graph through stand-ins: :mod:`~musculo_control.testing.injecting_activation_qp_node`
and :mod:`~musculo_control.testing.injecting_mock_hardware_node` subclass the production nodes,
keep their node name, topics and parameters, and add the injection parameters of
:class:`FaultInjectionParams` and a ``~/inject_fault`` service (std_srvs/Trigger). A graph that
injects (the graph's fault matrix, the node-graph tests) runs them in place of the production
executables (:attr:`~musculo_control.nodes.graph.GraphOptions.stand_ins`, with
:data:`STAND_INS`); every other graph, the robot's above all, runs nodes that have no way to
inject a fault.

Why a subclass and not a flag, a plugin or a wrapper node:

- a flag (a parameter of the production node) leaves the code path and the service on the
  robot, where one wrong parameter file commands NaN or a tension above the actuator's limit;
- a plugin loaded by name still needs a loading hook in the production node;
- a wrapper node between two nodes sees only messages: it can corrupt a stream, but not hold
  the QP to one iteration inside the controller's tick or reach the mock arm's physics, and it
  adds a hop that changes every timing the fault matrix measures.

A subclass runs the production node's own code (every line the robot runs, nothing
reimplemented) and adds injection only where the production node already has seams: the
control step's controller (:attr:`~musculo_control.loop.control_step.ControlStep.controller`)
and the mock arm's fault hooks (:attr:`~musculo_control.sim.mock_arm.MockArm.fault_hook`,
:attr:`~musculo_control.sim.mock_stage.MockStage.sensor_faults`).

ROS-free at import (the service's message type is imported when a node serves it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError
from musculo_control.model.robot import Robot
from musculo_control.nodes.node_config import ACTIVATION_QP_NODE, MOCK_HARDWARE_NODE
from musculo_control.sim.fault_matrix import load_fault_matrix_config
from musculo_control.sim.faults import FaultInjector

#: The stand-in that injects faults, by the node it stands in for (python -m module).
STAND_INS = {
    ACTIVATION_QP_NODE: "musculo_control.testing.injecting_activation_qp_node",
    MOCK_HARDWARE_NODE: "musculo_control.testing.injecting_mock_hardware_node",
}


@dataclass(frozen=True, kw_only=True)
class FaultInjectionParams:
    """The stand-ins' parameters on top of the production node's (off by default): the same
    injector as the ROS-free runner's (:mod:`musculo_control.sim.faults`), magnitudes from
    ``reliability.yaml`` ``faults.injection``. It starts at ``inject_at_s``, or when the node's
    ``~/inject_fault`` service (std_srvs/Trigger) is called."""

    inject_fault: str = spec("", doc="a fault to inject ('' none)")
    inject_at_s: float = spec(0.0, ge=0.0, doc="when it starts, on the node's clock; 0: only "
                                               "when the service is called [s]")
    inject_for_s: float = spec(0.1, gt=0.0, doc="how long it lasts [s]")


def node_injector(node: str, params: FaultInjectionParams, robot: Robot, calibration: Any,
                  physics_dt_s: float, tension_limit_n: float,
                  allowed: tuple[str, ...]) -> FaultInjector:
    """The injector node ``node`` runs for ``params.inject_fault``: the runner's injector, with
    the magnitudes of reliability.yaml, on the node's clock (``inject_at_s`` is a time of that
    clock); :class:`ConfigError` for a fault the node cannot inject."""
    fault = params.inject_fault
    if fault not in allowed:
        raise ConfigError(f"parameters of node '{node}'", f"{node}.ros__parameters.inject_fault",
                          f"'' or a fault this node injects {list(allowed)}", fault)
    cfg = load_fault_matrix_config(robot.config_dir, robot)
    start_s = params.inject_at_s
    return FaultInjector(fault, start_s, start_s + params.inject_for_s, cfg.injection, robot,
                         calibration, physics_dt_s, 0.0, tension_limit_n=tension_limit_n)


def serve_injection(node: Any, injector: FaultInjector, params: FaultInjectionParams,
                    now_s: Callable[[], float]) -> None:
    """Serve ``~/inject_fault`` (std_srvs/Trigger) on ``node``: the fault of ``injector`` starts
    now, for ``inject_for_s``. ``now_s``: the time the injector counts in. With
    ``inject_at_s`` 0 the fault waits for the service."""
    from std_srvs.srv import Trigger

    duration_s = params.inject_for_s

    def start(request: Any, response: Any) -> Any:
        now = now_s()
        injector.start_now(now, duration_s)
        response.success = True
        response.message = f"{injector.name} from {now:.6f} s for {duration_s} s"
        node.get_logger().warning(f"fault injection: {response.message}")
        return response

    node.create_service(Trigger, "~/inject_fault", start)
    if params.inject_at_s == 0.0:
        injector.start_now(float("inf"), 0.0)  # until the service is called
    node.get_logger().warning(f"fault injection: {params.inject_fault} at {params.inject_at_s} "
                              f"s for {duration_s} s")


def injection_values(injector: FaultInjector | None) -> dict[str, str]:
    """What a stand-in adds to its /diagnostics values: the fault, its target and its onset
    (when it first touched data), from which the graph's fault matrix counts the detection
    time, as the runner's does."""
    if injector is None:
        return {}
    onset = injector.onset_s
    return {"injected fault": injector.name, "injection target": injector.target,
            "injection onset [s]": "-" if onset is None else f"{onset + injector.origin_s:.6f}"}
