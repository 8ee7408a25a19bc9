"""The mock arm node with fault injection: a test-side stand-in for ``mock_hardware_node``.

The production :class:`~musculo_control.nodes.mock_hardware_node.MockHardwareNode`, same name,
topics and parameters, plus :class:`~musculo_control.testing.node_injection.FaultInjectionParams`
and the ``~/inject_fault`` service: the fault injector sits in the mock arm's fault hooks (its
sensors and actuators: a potentiometer stuck, NaN or out of range, a tendon that snaps, an
actuator that saturates) and in its raw message streams (dropped, delayed or reordered
samples), and its /diagnostics carry the fault's target and onset. Graphs that inject launch it
in place of the production node (:mod:`musculo_control.testing.node_injection` says why a
stand-in).

    python -m musculo_control.testing.injecting_mock_hardware_node --ros-args \\
        --params-file ros_params.yaml -p inject_fault:=tendon_snap -p inject_at_s:=4.0
"""

from __future__ import annotations

from dataclasses import dataclass

from musculo_control.nodes.mock_hardware_node import MockHardwareNode
from musculo_control.nodes.node_config import MOCK_HARDWARE_NODE, MockHardwareNodeParams
from musculo_control.nodes.process import run
from musculo_control.nodes.ros_common import declare_parameters
from musculo_control.sim.faults import MOCK_FAULTS, FaultInjector
from musculo_control.testing.node_injection import (
    FaultInjectionParams,
    injection_values,
    node_injector,
    serve_injection,
)


@dataclass(frozen=True, kw_only=True)
class InjectingMockHardwareNodeParams(FaultInjectionParams, MockHardwareNodeParams):
    """Every parameter the stand-in takes (what its parameter files are checked against)."""


class InjectingMockHardwareNode(MockHardwareNode):
    def __init__(self) -> None:
        self.injector: FaultInjector | None = None
        super().__init__()
        self.injection = p = declare_parameters(self, FaultInjectionParams)
        if not p.inject_fault:
            return
        parts = self.parts
        injector = node_injector(MOCK_HARDWARE_NODE, p, parts.robot, parts.drivers.calibration,
                                 self.mock.dt_s, parts.drivers.tendons.config.max_tension_n,
                                 MOCK_FAULTS)
        self.mock.fault_hook = injector
        self.stage.sensor_faults = injector
        self.injector = injector
        # the injector counts in physics time (the stamps it sees), not the node's clock
        serve_injection(self, injector, p, lambda: self.stage.time_s)

    def _values(self) -> dict[str, str]:
        return {**super()._values(), **injection_values(self.injector)}


def main() -> None:
    raise SystemExit(run(MOCK_HARDWARE_NODE, InjectingMockHardwareNodeParams,
                         InjectingMockHardwareNode))


if __name__ == "__main__":
    main()
