"""The nodes' log call (nodes/ros_common.py log): what rclpy's logger prints, at its severity and
threshold, without the logger's search for its caller (a millisecond a call)."""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy")


def test_log_prints_what_the_logger_would_at_its_severity_and_threshold(capfd):
    from graph_harness import domain_id
    from rclpy.logging import LoggingSeverity

    from musculo_control.nodes.ros_common import log

    rclpy.init(domain_id=domain_id())
    try:
        node = rclpy.create_node("log_test")
        logger = node.get_logger()
        log(logger, LoggingSeverity.WARN, "a warning of ours")
        log(logger, LoggingSeverity.DEBUG, "below the threshold")
        logger.warning("the logger's own")
        out = capfd.readouterr().err
        ours = next(line for line in out.splitlines() if "a warning of ours" in line)
        theirs = next(line for line in out.splitlines() if "the logger's own" in line)
        assert ours.startswith("[WARN]") and "[log_test]" in ours
        # the same form: severity, time, logger name, message
        assert ours.split("]")[0] == theirs.split("]")[0] and ours.split("]")[2] == \
            theirs.split("]")[2]
        assert "below the threshold" not in out
        node.destroy_node()
    finally:
        rclpy.try_shutdown()
