"""The controller node's shell, built in this process (rclpy, no launch, no other process): a bug
inside its tick still sends every tendon to minimum tension, and its traceback is in the log."""

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
        effort = np.asarray(sent.messages[-1].effort)
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
