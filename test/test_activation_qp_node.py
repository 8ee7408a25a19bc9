"""The controller node's shell, built in this process (rclpy, no launch, no other process): a bug
inside its tick still sends every tendon to minimum tension, and its traceback is in the log;
the node that runs the robot has no fault injection, its test-side stand-in has."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")


class _Published:
    """Stands in for a publisher: keeps what the node sends."""

    def __init__(self) -> None:
        self.messages: list = []

    def publish(self, msg) -> None:
        self.messages.append(msg)


def test_a_bug_in_the_tick_sends_minimum_tension_and_logs_its_traceback(robot, monkeypatch,
                                                                         capfd):
    from musculo_control.nodes.activation_qp_node import ActivationQPNode

    rclpy.init(args=["--ros-args", "-p", "gc_freeze:=false"])
    node = None
    try:
        node = ActivationQPNode()

        def broken(now_s):
            raise AttributeError("no such field")

        monkeypatch.setattr(node.step, "tick", broken)
        sent = node._cmd_pub = _Published()
        node._tick()
        # the node publishes the serialized message (musculo_control.serialized)
        from rclpy.serialization import deserialize_message
        from sensor_msgs.msg import JointState

        effort = np.asarray(deserialize_message(sent.messages[-1], JointState).effort)
        np.testing.assert_array_equal(effort, np.full(robot.n_muscles, robot.hill.f_min_n))
        err = capfd.readouterr().err
        assert "internal error in a control tick, minimum tension: AttributeError" in err
        # not hidden: where the bug is
        assert "Traceback (most recent call last)" in err and "in broken" in err
    finally:
        if node is not None:
            node.shutdown()
            node.destroy_node()
        rclpy.try_shutdown()


def _services(node) -> set[str]:
    return {s.srv_name for s in node.services}


def test_the_production_node_has_no_fault_injection(robot):
    """The controller that runs the robot declares no injection parameter and serves no
    injection service; its controller is the plain one."""
    from musculo_control.nodes.activation_qp_node import ActivationQPNode

    rclpy.init(args=["--ros-args", "-p", "gc_freeze:=false"])
    node = None
    try:
        node = ActivationQPNode()
        assert not any(node.has_parameter(n)
                       for n in ("inject_fault", "inject_at_s", "inject_for_s"))
        assert not any("inject" in s for s in _services(node)), _services(node)
        assert "controller/acknowledge" in " ".join(_services(node))
        assert type(node.step.controller).__module__.startswith("musculo_control.control.")
    finally:
        if node is not None:
            node.shutdown()
            node.destroy_node()
        rclpy.try_shutdown()


def test_the_injecting_stand_in_wraps_the_controller_and_serves_the_injection(robot):
    """The test side's stand-in: the production node plus the injector around its controller,
    its ``~/inject_fault`` service and the fault on /diagnostics (what the fault does to a tick
    is test_faults.py's; the graph tests start it over the service)."""
    from musculo_control.testing.injecting_activation_qp_node import InjectingActivationQPNode

    rclpy.init(args=["--ros-args", "-p", "gc_freeze:=false",
                     "-p", "inject_fault:=command_nan", "-p", "inject_for_s:=0.5"])
    node = None
    try:
        node = InjectingActivationQPNode()
        assert node.get_name() == "activation_qp_node"
        assert node.injection.inject_fault == "command_nan" and node.injector is not None
        assert "~/inject_fault" in _services(node)  # the name as the node creates it
        assert node.step.controller.injector is node.injector
        # waiting for the service (inject_at_s 0): no tick is touched
        assert not node.injector.active(node.clock_s())
        values = node._values()
        assert values["injected fault"] == "command_nan"
        assert values["injection onset [s]"] == "-"
    finally:
        if node is not None:
            node.shutdown()
            node.destroy_node()
        rclpy.try_shutdown()


def test_the_stand_in_refuses_a_fault_its_node_cannot_inject():
    from musculo_control.errors import ConfigError
    from musculo_control.testing.injecting_activation_qp_node import InjectingActivationQPNode

    rclpy.init(args=["--ros-args", "-p", "gc_freeze:=false", "-p", "inject_fault:=tendon_snap"])
    try:
        with pytest.raises(ConfigError) as err:
            InjectingActivationQPNode()
        assert err.value.key == "activation_qp_node.ros__parameters.inject_fault"
        assert "command_nan" in str(err.value)
    finally:
        rclpy.try_shutdown()
