"""The publishers of a topic read from the ROS graph (nodes/writers.py): read again only when
their count changed or the verdict was not clean, and handed out to be judged only when the
judging could give another verdict; and what the nodes make of them: an unnamed writer's
grace on the wall clock, the mock arm's lockstep following the authorised writer only."""

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


def test_an_unnamed_writers_grace_runs_on_the_wall_clock_not_a_leaping_simulated_one(
        monkeypatch):
    """Discovery names a writer on the wall clock. On simulated time the node's clock may leap
    (a node that started late takes its first ticks behind the graph's clock): the tendon
    driver still withholds an unnamed writer of ``muscle_commands`` for
    ``authority.unknown_writer_s`` of wall time instead of calling it foreign at once."""
    from graph_harness import domain_id

    from musculo_control.nodes.tendon_driver_node import TendonDriverNode
    from musculo_control.safety.authority import Writer

    rclpy.init(args=["--ros-args", "-p", "gc_freeze:=false"], domain_id=domain_id())
    node = None
    try:
        node = TendonDriverNode()
        grace_s = node.stage.writers.config.unknown_writer_s
        unnamed = [Writer("", bytes(range(1, 17)))]
        monkeypatch.setattr(node._graph, "writers", lambda clean: unnamed)
        clock = iter(10.0 + 4.0 * grace_s * k for k in range(3))
        monkeypatch.setattr(node, "clock_s", lambda: next(clock))
        for _ in range(3):  # three ticks, each far past the grace in simulated time
            node._tick()
        verdict = node.stage.writers.verdict
        assert not verdict.foreign and verdict.withheld and not verdict.admit, verdict
        time.sleep(grace_s * 1.2)  # the grace passed on the wall clock: now it is foreign
        monkeypatch.setattr(node, "clock_s", lambda: 12.0 * grace_s + 10.0)
        node._tick()
        assert node.stage.writers.verdict.foreign == ("an unnamed node (endpoint 01.02.03.04."
                                                      "05.06.07.08)",), node.stage.writers.verdict
    finally:
        if node is not None:
            node.shutdown()
            node.destroy_node()
        rclpy.try_shutdown()


def test_the_mock_arms_lockstep_follows_the_drivers_actuator_commands_not_a_strays():
    """The mock arm in lockstep holds its clock until the tendon driver's ``hw/tendon_commands``
    is stamped far enough: a stray writer's newer-stamped samples on that topic do not count as
    the driver's progress (they would release the clock ahead of the driver)."""
    from graph_harness import domain_id
    from sensor_msgs.msg import JointState

    from musculo_control.nodes.mock_hardware_node import MockHardwareNode
    from musculo_control.sim.mock_stage import COMMAND_TOPIC

    rclpy.init(args=["--ros-args", "-p", "gc_freeze:=false", "-p", "publish_clock:=true",
                     "-p", "lockstep:=true"], domain_id=domain_id())
    node = None
    try:
        node = MockHardwareNode()
        driver = rclpy.create_node("tendon_driver_node")
        stray = rclpy.create_node("stray")
        pubs = {n: n.create_publisher(JointState, COMMAND_TOPIC, 10) for n in (driver, stray)}
        assert _until(lambda: sorted(w.node for w in node._writers.writers(False))
                      == ["/stray", "/tendon_driver_node"])
        assert _until(lambda: all(p.get_subscription_count() >= 2 for p in pubs.values()))
        sub = node._progress_in[COMMAND_TOPIC]

        def send(pub, stamp_s: float) -> None:
            msg = JointState()  # only its stamp is read for the lockstep
            msg.header.stamp.sec = int(stamp_s)
            pub.publish(msg)

        send(pubs[driver], 1.0)
        send(pubs[stray], 5.0)
        time.sleep(0.5)  # both delivered
        node._take_command()  # the graph judged: the stray is foreign
        assert node.stage.writers.verdict.foreign == ("/stray",)
        newest = node._newest_progress(COMMAND_TOPIC, sub)
        assert newest is not None
        assert node._progress_stamp[COMMAND_TOPIC](newest) == 1.0
    finally:
        if node is not None:
            node.shutdown()
            node.destroy_node()
        rclpy.try_shutdown()
