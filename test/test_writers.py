"""The publishers of a topic read from the ROS graph (nodes/writers.py): read again only when
their count changed or the verdict was not clean, and handed out to be judged only when the
judging could give another verdict."""

from __future__ import annotations

import time

import pytest

rclpy = pytest.importorskip("rclpy")

from std_msgs.msg import Bool  # noqa: E402

from musculo_control.nodes.writers import GraphWriters  # noqa: E402


def _until(condition, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = condition()
        if got:
            return got
        time.sleep(0.01)
    return condition()


def test_a_list_judged_clean_is_handed_out_again_only_when_it_changes_or_is_not_clean(ros):
    watcher = rclpy.create_node("watcher")
    graph = GraphWriters(watcher, "commands")
    first = rclpy.create_node("first_writer")
    first.create_publisher(Bool, "commands", 10)
    listed = _until(lambda: graph.to_judge(True))  # a change: the new list, to be judged
    assert [w.node for w in listed] == ["/first_writer"]
    assert graph.to_judge(True) is None  # unchanged and judged clean: the same verdict
    assert graph.reads == 1  # the count alone was asked
    again = graph.to_judge(False)  # not clean (a grace period runs): read and judged each time
    assert [w.node for w in again] == ["/first_writer"] and graph.reads == 2
    assert graph.to_judge(True) is None
    second = rclpy.create_node("second_writer")
    second.create_publisher(Bool, "commands", 10)
    both = _until(lambda: graph.to_judge(True))
    assert sorted(w.node for w in both) == ["/first_writer", "/second_writer"]
    assert graph.to_judge(True) is None
