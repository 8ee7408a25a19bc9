"""Shared pieces of the launch tests: the launch description and a ROS-side probe.

Imported only by the launch tests, after they have checked that rclpy is there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import launch_testing.actions
import numpy as np
import rclpy
from ament_index_python.packages import get_package_share_directory
from diagnostic_msgs.msg import DiagnosticArray
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from launch import LaunchDescription
from musculo_control.nodes import conversions as cv
from musculo_control.nodes.node_config import GOAL_NODE, MUSCLE_MARKER_NODE, NODE_PARAMS

#: Nodes the mock launch starts with use_rviz:=false (no muscle markers without RViz).
LAUNCHED_NODES = tuple(n for n in NODE_PARAMS if n != MUSCLE_MARKER_NODE)
#: How long the whole suite may take to come up on a slow machine [s].
STARTUP_TIMEOUT_S = 90.0


def mock_arm_launch(**arguments: str) -> LaunchDescription:
    """The real mock_arm.launch.py, GUI and rclcpp-based nodes off, plus ReadyToTest."""
    path = os.path.join(get_package_share_directory("musculo_control"), "launch",
                        "mock_arm.launch.py")
    args = {"use_rviz": "false", "use_robot_state_publisher": "false", "goal_mode": "none",
            **arguments}
    return LaunchDescription([
        IncludeLaunchDescription(PythonLaunchDescriptionSource(path),
                                 launch_arguments=list(args.items())),
        launch_testing.actions.ReadyToTest(),
    ])


def queue_qos(depth: int) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


class Queue:
    """Messages of one topic, kept by DDS until taken (no executor wake-up per message, so
    the probe itself adds little load to the machine it measures)."""

    def __init__(self, node: Node, msg_type: Any, topic: str, depth: int,
                 qos: QoSProfile | None = None) -> None:
        self._type = msg_type
        self._sub = node.create_subscription(msg_type, topic, lambda m: None,
                                             qos or queue_qos(depth))

    def take_all(self) -> list[tuple[Any, float]]:
        """(message, time taken by the probe [s, time.time()]) for everything queued."""
        out = []
        handle = self._sub.handle
        now = time.time()
        with handle:
            while True:
                got = handle.take_message(self._type, False)
                if got is None:
                    return out
                out.append((got[0], now))


class Probe:
    """A test-side node with queues on the topics the tests look at."""

    def __init__(self, name: str) -> None:
        self.node = rclpy.create_node(name)

    def queue(self, msg_type: Any, topic: str, depth: int = 4000,
              qos: QoSProfile | None = None) -> Queue:
        return Queue(self.node, msg_type, topic, depth, qos)

    def wait_for(self, what: str, condition: Callable[[], bool], timeout_s: float,
                 period_s: float = 0.05) -> float:
        """Poll ``condition`` until true; returns the time it took [s]; fails after timeout."""
        t0 = time.monotonic()
        while not condition():
            if time.monotonic() - t0 > timeout_s:
                raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
            time.sleep(period_s)
        return time.monotonic() - t0

    def node_names(self) -> set[str]:
        return set(self.node.get_node_names())

    def destroy(self) -> None:
        self.node.destroy_node()


class DiagnosticsLog:
    """Every /diagnostics status seen, with its header stamp."""

    def __init__(self, probe: Probe) -> None:
        self._queue = probe.queue(DiagnosticArray, "/diagnostics", depth=2000,
                                  qos=QoSProfile(depth=2000))
        self.entries: list[tuple[float, cv.Status]] = []

    def update(self) -> list[tuple[float, cv.Status]]:
        for msg, _ in self._queue.take_all():
            stamp = cv.stamp_of(msg).seconds
            self.entries.extend((stamp, s) for s in cv.read_diagnostic_array(msg))
        return self.entries

    def latest(self, node_name: str) -> cv.Status | None:
        self.update()
        for _, status in reversed(self.entries):
            if status.name.endswith(f": {node_name}"):
                return status
        return None


def record_stamp(msg: Any) -> cv.Stamp:
    """The source stamp of a labelled record whose first field is ``stamp`` (sec, nanosec)."""
    return cv.Stamp(int(msg.data[0]), int(msg.data[1]))


def stamps_rate_hz(messages: list[tuple[Any, float]],
                   stamp_of: Callable[[Any], cv.Stamp] = cv.stamp_of) -> float:
    """Rate from stamps: (n - 1) / (last - first)."""
    stamps = np.array([stamp_of(m).seconds for m, _ in messages])
    if stamps.size < 2 or stamps[-1] <= stamps[0]:
        return 0.0
    return float((stamps.size - 1) / (stamps[-1] - stamps[0]))


__all__ = ["GOAL_NODE", "LAUNCHED_NODES", "STARTUP_TIMEOUT_S", "DiagnosticsLog", "Probe",
           "Queue", "mock_arm_launch", "record_stamp", "stamps_rate_hz"]
