"""Polled inputs on real rclpy (one process, own domain): the lockstep's wait for a sample
already sent (loop/lockstep.py) takes it when it comes, keeps it for the tick, and gives up on
a silent publisher once."""

from __future__ import annotations

import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy")


def test_await_stamp_takes_a_late_sample_and_gives_up_on_a_silent_publisher_once():
    """A stream that has sent nothing is not awaited (the graph's first ticks must not hold a
    node while its clock runs on); one that has is, until it falls silent once, and again once
    it has caught up."""
    from graph_harness import domain_id
    from rclpy.node import Node
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from musculo_control import messages
    from musculo_control.nodes.polled import PolledInputs

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id())
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                     reliability=ReliabilityPolicy.RELIABLE)
    try:
        talker = Node("talker", context=context)
        owner = Node("owner", context=context)
        sub = PolledInputs(owner).subscribe(JointState, "samples", qos=qos,
                                            stamp_of=lambda m: messages.stamp_of(m).seconds)
        pub = talker.create_publisher(JointState, "samples", qos)
        deadline = time.monotonic() + 30.0
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)

        # nothing sent yet (a publisher still starting): no wait at all
        t0 = time.monotonic()
        assert not sub.await_stamp(1.0, 20.0)
        assert time.monotonic() - t0 < 10.0

        def send(stamp_s: float, after_s: float) -> threading.Thread:
            msg = JointState()
            msg.header.stamp.sec = int(stamp_s)
            msg.header.stamp.nanosec = int(round((stamp_s - int(stamp_s)) * 1e9))
            thread = threading.Thread(target=lambda: (time.sleep(after_s), pub.publish(msg)))
            thread.start()
            return thread

        # the stream begins; then a sample sent while the tick waits: taken, kept for the
        # tick's take
        send(0.0, 0.0).join()
        deadline = time.monotonic() + 30.0
        while not sub.await_stamp(0.0, 20.0) and time.monotonic() < deadline:
            time.sleep(0.01)  # not yet delivered: nothing to wait for, so no wait
        assert [messages.stamp_of(m).seconds for m in sub.take_all()] == [0.0]
        sender = send(1.0, 0.05)
        assert sub.await_stamp(1.0, 20.0)
        sender.join()
        assert [messages.stamp_of(m).seconds for m in sub.take_all()] == [1.0]
        # nothing newer comes: the wait times out ...
        assert not sub.await_stamp(2.0, 0.1)
        # ... and the next one does not wait at all (a dead node must not slow every tick)
        t0 = time.monotonic()
        assert not sub.await_stamp(2.0, 20.0)
        assert time.monotonic() - t0 < 10.0
        # a sample still behind the stamp it gave up on (a delayed stream) does not end the
        # silence: no wait at every tick while the stream runs behind
        send(1.5, 0.0).join()
        deadline = time.monotonic() + 30.0
        while not sub.await_stamp(1.5, 0.0) and time.monotonic() < deadline:
            time.sleep(0.01)
        t0 = time.monotonic()
        assert not sub.await_stamp(2.5, 20.0)
        assert time.monotonic() - t0 < 10.0
        assert [messages.stamp_of(m).seconds for m in sub.take_all()] == [1.5]
        # a sample on time again (as new as the last stamp asked for) ends the silence: waits
        # again, and an older due stamp is met at once
        send(2.5, 0.0).join()
        assert sub.await_stamp(2.5, 20.0)
        assert sub.await_stamp(1.5, 0.0)
        assert [messages.stamp_of(m).seconds for m in sub.take_all()] == [2.5]
        sender = send(3.0, 0.05)
        assert sub.await_stamp(3.0, 20.0)
        sender.join()
        assert [messages.stamp_of(m).seconds for m in sub.take_all()] == [3.0]
    finally:
        rclpy.try_shutdown(context=context)
