"""The controller node with fault injection: a test-side stand-in for ``activation_qp_node``.

The production :class:`~musculo_control.nodes.activation_qp_node.ActivationQPNode`, same name,
topics and parameters, plus :class:`~musculo_control.testing.node_injection.FaultInjectionParams`
and the ``~/inject_fault`` service: its controller goes through the fault injector
(:meth:`~musculo_control.sim.faults.FaultInjector.wrap`: a QP held to one iteration, a
command with NaN or far above the actuator's limit), and its /diagnostics carry the fault's
target and onset. Graphs that inject launch it in place of the production node
(:mod:`musculo_control.testing.node_injection` says why a stand-in).

    python -m musculo_control.testing.injecting_activation_qp_node --ros-args \\
        --params-file ros_params.yaml -p inject_fault:=command_nan
"""

from __future__ import annotations

from dataclasses import dataclass

from musculo_control.nodes.activation_qp_node import ActivationQPNode
from musculo_control.nodes.node_config import ACTIVATION_QP_NODE, ActivationQPNodeParams
from musculo_control.nodes.process import run
from musculo_control.nodes.ros_common import declare_parameters
from musculo_control.sim.faults import CONTROLLER_FAULTS, FaultInjector
from musculo_control.testing.node_injection import (
    FaultInjectionParams,
    injection_values,
    node_injector,
    serve_injection,
)


@dataclass(frozen=True, kw_only=True)
class InjectingActivationQPNodeParams(FaultInjectionParams, ActivationQPNodeParams):
    """Every parameter the stand-in takes (what its parameter files are checked against)."""


class InjectingActivationQPNode(ActivationQPNode):
    def __init__(self) -> None:
        self.injector: FaultInjector | None = None
        super().__init__()
        self.injection = p = declare_parameters(self, FaultInjectionParams)
        if not p.inject_fault:
            return
        parts = self.parts
        injector = node_injector(ACTIVATION_QP_NODE, p, parts.robot, parts.drivers.calibration,
                                 1.0 / parts.controller.loop.control_rate_hz,
                                 parts.drivers.tendons.config.max_tension_n, CONTROLLER_FAULTS)
        self.step.controller = injector.wrap(self.step.controller)
        self.injector = injector
        serve_injection(self, injector, p, self.clock_s)

    def _values(self) -> dict[str, str]:
        return {**super()._values(), **injection_values(self.injector)}


def main() -> None:
    raise SystemExit(run(ACTIVATION_QP_NODE, InjectingActivationQPNodeParams,
                         InjectingActivationQPNode))


if __name__ == "__main__":
    main()
