"""The rosbag2 recorder of musculo_control.nodes.bag_recorder on real rclpy: what it records is
what was published, read back with two readers that are not its writer (rosbags' rosbag2
reader, as ``ros2 bag play`` opens a folder; ``mcap`` + ``mcap_ros2``, Foxglove's decoder, from
the schemas in the file alone), its readers' QoS follows the publishers' as rosbag2's does, and
(slow) a recording of the mock node graph holds its streams at their rates.

Domain: ``ROS_DOMAIN_ID`` of the environment when set (a run beside others picks its own), else
one of the harness's.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy")

N_MESSAGES = 300
TOPICS = {"/joint_states": "sensor_msgs/msg/JointState",
          "/mock/hand": "geometry_msgs/msg/PointStamped",
          "/controller/state": "musculo_control_msgs/msg/ControllerState"}
#: names whose JointState (3 positions and velocities, no effort) Fast CDR serializes without
#: the trailing alignment bytes that rosbags' strict deserializer refuses (doc/logs.md)
JOINTS = ("shoulder_p", "shoulder_r", "elbow_p")


def _domain() -> int:
    from graph_harness import domain_id

    return int(os.environ["ROS_DOMAIN_ID"]) if os.environ.get("ROS_DOMAIN_ID") else domain_id()


class Spinning:
    """Nodes spun by a thread of their own, as the graph observer spins its node, with rclpy's
    single-threaded executor or its EventsExecutor (``executor``: ``single_threaded`` or
    ``events``); an error that stops the spinning is kept (``error``) so that a wait can say
    why it timed out."""

    def __init__(self, context, *nodes, executor: str = "single_threaded") -> None:
        from rclpy.executors import SingleThreadedExecutor

        from musculo_control.nodes.executors import events_executor_class

        if executor == "events":
            factory = events_executor_class()
            if factory is None:
                pytest.skip("this rclpy has no EventsExecutor (Humble)")
            self.executor = factory(context=context)
        else:
            self.executor = SingleThreadedExecutor(context=context)
        for node in nodes:
            self.executor.add_node(node)
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception as exc:  # noqa: BLE001 - reported by wait_until
                self.error = exc
                return

    def wait_until(self, condition, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            assert self.error is None, self.error
            if condition():
                return True
            time.sleep(0.01)
        return bool(condition())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self.executor.shutdown()
        assert self.error is None, self.error


@pytest.fixture
def context():
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=_domain())
    try:
        yield context
    finally:
        rclpy.try_shutdown(context=context)


def _stamp(msg) -> int:
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec


def _published(i: int):
    """The messages of round ``i``: a JointState, a PointStamped and a ControllerState, each
    with values of its own and the stamp i ms (past 1 s, so seconds are exercised too)."""
    from geometry_msgs.msg import PointStamped
    from musculo_control_msgs.msg import ControllerState
    from sensor_msgs.msg import JointState

    sec, nanosec = divmod(1_000_000_000 + i * 7_000_000, 10**9)
    joints = JointState(name=list(JOINTS), position=[0.1 * i, -0.2 * i, 0.3],
                        velocity=[float(i), 0.0, -1.0], effort=[])
    hand = PointStamped()
    hand.point.x, hand.point.y, hand.point.z = 0.001 * i, 0.2, -0.003 * i
    state = ControllerState(ok=i % 3 != 0, supervisor_state=i % 4, iterations=i,
                            solve_time_s=1e-5 * i, hand_position_m=[0.1, 0.2, 0.001 * i],
                            hand_error_m=[0.0, -0.001 * i, 0.0],
                            tau_null_nm=[0.5 * i, 1.0], torque_residual_nm=[],
                            tau_ref_nm=[float(i)] * 3)
    for msg in (joints, hand, state):
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        msg.header.frame_id = "base_link"
    return {"/joint_states": joints, "/mock/hand": hand, "/controller/state": state}


def _same(topic: str, got, sent) -> bool:
    """``got`` (decoded by a bag reader) holds what ``sent`` (rclpy) held."""
    if _stamp(got) != _stamp(sent) or got.header.frame_id != sent.header.frame_id:
        return False
    if topic == "/joint_states":
        return (list(got.name) == list(sent.name)
                and all(np.array_equal(np.asarray(getattr(got, f), dtype=float),
                                       np.asarray(getattr(sent, f), dtype=float))
                        for f in ("position", "velocity", "effort")))
    if topic == "/mock/hand":
        return (got.point.x, got.point.y, got.point.z) == (sent.point.x, sent.point.y,
                                                           sent.point.z)
    fields = ("ok", "supervisor_state", "iterations", "solve_time_s")
    arrays = ("hand_position_m", "hand_error_m", "tau_null_nm", "torque_residual_nm",
              "tau_ref_nm")
    return (all(getattr(got, f) == getattr(sent, f) for f in fields)
            and all(np.array_equal(np.asarray(getattr(got, f), dtype=float),
                                   np.asarray(getattr(sent, f), dtype=float)) for f in arrays))


def _read_rosbags(folder: Path) -> dict[str, list]:
    """topic -> [(log time [ns], message)], with rosbags' rosbag2 reader and the bag's own
    type definitions (as another computer without the project's types reads it)."""
    from rosbags.highlevel import AnyReader

    out: dict[str, list] = {}
    with AnyReader([folder]) as reader:
        for conn, log_ns, raw in reader.messages():
            out.setdefault(conn.topic, []).append((log_ns, reader.deserialize(raw, conn.msgtype)))
    return out


def _raw_stamps(folder: Path) -> dict[str, list[tuple[int, int]]]:
    """topic -> [(log time [ns], header stamp [ns])], with rosbags' rosbag2 reader, the stamp
    read from the CDR bytes (a Header first: int32 sec, uint32 nanosec after the 4-byte
    encapsulation), without deserializing."""
    import struct

    from rosbags.highlevel import AnyReader

    out: dict[str, list] = {}
    with AnyReader([folder]) as reader:
        for conn, log_ns, raw in reader.messages():
            sec, nanosec = struct.unpack_from("<iI" if raw[1] else ">iI", raw, 4)
            out.setdefault(conn.topic, []).append((log_ns, sec * 10**9 + nanosec))
    return out


def _read_mcap(folder: Path, types: dict[str, str] = TOPICS) -> dict[str, list]:
    """topic -> [(log time [ns], message)], with Foxglove's MCAP reader and ROS 2 decoder
    (``types``: topic -> the type its schema must name)."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    files = list(folder.glob("*.mcap"))
    assert len(files) == 1, files
    out: dict[str, list] = {}
    with open(files[0], "rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            assert schema.encoding == "ros2msg" and channel.message_encoding == "cdr"
            assert schema.name == types[channel.topic]
            out.setdefault(channel.topic, []).append((message.log_time, decoded))
    return out


#: the executors a caller may spin the recorder's node with (nodes/executors.py)
EXECUTORS = ("single_threaded", "events")


@pytest.mark.parametrize("executor", EXECUTORS)
def test_what_is_published_is_recorded_and_both_readers_decode_it(context, tmp_path, executor):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from musculo_control.nodes.bag_recorder import BagRecorder

    publisher = rclpy.create_node("bag_test_publisher", context=context)
    recorder_node = rclpy.create_node("bag_test_recorder", context=context)
    spinning = Spinning(context, recorder_node, executor=executor)
    sample = _published(0)
    qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.VOLATILE)
    pubs = {topic: publisher.create_publisher(type(msg), topic, qos)
            for topic, msg in sample.items()}
    folder = tmp_path / "bag"
    try:
        recorder = BagRecorder(recorder_node, folder, TOPICS,
                               custom_data={"musculo_control/test": "recorder"})
        assert spinning.wait_until(
            lambda: all(p.get_subscription_count() >= 1 for p in pubs.values()), 10.0)
        for topic in TOPICS:  # the publishers were seen: reliable and volatile, as they offer
            assert recorder.reader_qos(topic).reliability == ReliabilityPolicy.RELIABLE
        t_first = recorder_node.get_clock().now().nanoseconds
        sent: dict[str, list] = {topic: [] for topic in TOPICS}
        for i in range(N_MESSAGES):
            for topic, msg in _published(i).items():
                pubs[topic].publish(msg)
                sent[topic].append(msg)
            time.sleep(0.001)
        assert spinning.wait_until(
            lambda: recorder.stats() == {t: N_MESSAGES for t in TOPICS}, 30.0), recorder.stats()
        t_last = recorder_node.get_clock().now().nanoseconds
        assert recorder.close() == {t: N_MESSAGES for t in TOPICS}
    finally:
        spinning.close()
    by_rosbags, by_mcap = _read_rosbags(folder), _read_mcap(folder)
    for topic in TOPICS:
        for read in (by_rosbags, by_mcap):
            assert len(read[topic]) == N_MESSAGES, topic
            assert all(_same(topic, got, want)
                       for (_, got), want in zip(read[topic], sent[topic])), topic
        # the same log times in both, the receive times on the recorder's clock
        log_ns = [t for t, _ in by_rosbags[topic]]
        assert log_ns == [t for t, _ in by_mcap[topic]]
        assert t_first <= min(log_ns) and max(log_ns) <= t_last
    info = yaml.safe_load((folder / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["storage_identifier"] == "mcap" and info["message_count"] == 3 * N_MESSAGES
    assert info["custom_data"] == {"musculo_control/test": "recorder"}
    offered = {t["topic_metadata"]["name"]: t["topic_metadata"]["offered_qos_profiles"]
               for t in info["topics_with_message_count"]}
    assert set(offered) == set(TOPICS)
    for text in offered.values():  # the publisher's: reliable (1), volatile (2); discovery
        (profile,) = yaml.safe_load(text)  # carries no depth, as in ros2 bag record's
        assert (profile["reliability"], profile["durability"]) == (1, 2), profile


@pytest.mark.parametrize("executor", EXECUTORS)
def test_the_readers_follow_the_publishers_qos_and_late_publishers_are_recorded(context,
                                                                                 tmp_path,
                                                                                 executor):
    """rosbag2's choice from the offers (a latched publisher's last message included), a
    fallback when there is none, and a best-effort publisher that comes later: on a topic
    that has heard nothing, and on one a reliable publisher already feeds (the handover keeps
    every message once)."""
    from geometry_msgs.msg import PointStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from musculo_control.nodes.bag_recorder import BagRecorder

    def profile(reliability, durability=DurabilityPolicy.VOLATILE):
        return QoSProfile(depth=50, reliability=reliability, durability=durability)

    def point(i: int) -> PointStamped:
        msg = PointStamped()
        msg.header.stamp.nanosec = i
        msg.point.x = float(i)
        return msg

    reliable, best_effort = ReliabilityPolicy.RELIABLE, ReliabilityPolicy.BEST_EFFORT
    publisher = rclpy.create_node("bag_test_publisher", context=context)
    recorder_node = rclpy.create_node("bag_test_recorder", context=context)
    latched = publisher.create_publisher(
        PointStamped, "/latched", profile(reliable, DurabilityPolicy.TRANSIENT_LOCAL))
    latched.publish(point(7))  # before the recorder exists
    fed = publisher.create_publisher(PointStamped, "/mixed", profile(reliable))
    topics = {t: "geometry_msgs/msg/PointStamped" for t in ("/latched", "/late", "/mixed")}
    spinning = Spinning(context, publisher, recorder_node, executor=executor)
    assert spinning.wait_until(lambda: publisher.count_publishers("/latched") == 1
                               and publisher.count_publishers("/mixed") == 1, 10.0)
    folder = tmp_path / "bag"
    try:
        recorder = BagRecorder(recorder_node, folder, topics)
        late_qos = recorder.reader_qos("/late")  # no publisher yet: the fallback
        assert (late_qos.reliability, late_qos.durability, late_qos.depth) == \
            (reliable, DurabilityPolicy.VOLATILE, 100)
        assert recorder.reader_qos("/latched").durability == DurabilityPolicy.TRANSIENT_LOCAL
        assert spinning.wait_until(lambda: recorder.stats()["/latched"] == 1, 10.0)
        assert spinning.wait_until(lambda: fed.get_subscription_count() == 1, 10.0)
        for i in range(20):
            fed.publish(point(i))
        assert spinning.wait_until(lambda: recorder.stats()["/mixed"] == 20, 10.0)
        late = publisher.create_publisher(PointStamped, "/late", profile(best_effort))
        joining = publisher.create_publisher(PointStamped, "/mixed", profile(best_effort))
        for topic in ("/late", "/mixed"):
            assert spinning.wait_until(
                lambda t=topic: recorder.reader_qos(t).reliability == best_effort, 10.0), topic
        assert spinning.wait_until(lambda: late.get_subscription_count() == 1
                                   and joining.get_subscription_count() == 1, 10.0)
        for i in range(20):
            late.publish(point(i))
            fed.publish(point(100 + i))  # heard by the old reader and the new one
            joining.publish(point(200 + i))
            time.sleep(0.002)
        assert spinning.wait_until(lambda: recorder.stats() == {
            "/latched": 1, "/late": 20, "/mixed": 60}, 10.0), recorder.stats()
        # the replaced reliable reader is gone
        assert spinning.wait_until(lambda: fed.get_subscription_count() == 1, 10.0)
        recorder.close()
    finally:
        spinning.close()
    read = _read_rosbags(folder)
    mixed = sorted(int(m.point.x) for _, m in read["/mixed"])
    assert mixed == [*range(20), *range(100, 120), *range(200, 220)]
    assert [int(m.point.x) for _, m in read["/late"]] == list(range(20))
    assert [int(m.point.x) for _, m in read["/latched"]] == [7]


def test_wrong_inputs_are_refused_with_what_is_expected(context, tmp_path):
    from musculo_control.errors import InputError
    from musculo_control.nodes.bag_recorder import BagRecorder

    node = rclpy.create_node("bag_test_recorder", context=context)
    with pytest.raises(InputError, match="absolute name"):
        BagRecorder(node, tmp_path / "a", {"joint_states": "sensor_msgs/msg/JointState"})
    with pytest.raises(InputError, match="sensor_msgs/msg/JointState"):
        BagRecorder(node, tmp_path / "b", {"/joint_states": "sensor_msgs/msg/JointStates"})
    with pytest.raises(InputError, match="topics recorded"):
        BagRecorder(node, tmp_path / "c", TOPICS, qos_overrides={"/other": 10})
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="does not exist yet"):
        BagRecorder(node, tmp_path / "d", TOPICS)
    assert not any((tmp_path / n).exists() for n in ("a", "b", "c"))
    node.destroy_node()


#: The rates the graph's bag must show, by stamps, within 2 % (as test_graph.py's), and the
#: share of each stream's messages it must hold: the recorder's readers are reliable and deep,
#: so only a reader more than DEPTH messages behind would lose one.
RATE_TOLERANCE = 0.02
MIN_SHARE = 0.98


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_recording_of_the_mock_graph_holds_its_streams_at_their_rates(tmp_path,
                                                                        monkeypatch):
    """~3 s of simulated time of the mock node graph (graph_harness), recorded by a node of
    this process on the graph's domain and clock, from when every stream has come:
    /controller/state at the control rate, /mock/hand at the mock's truth rate, /joint_states
    at the sensor rate, every message of the window there; log times are simulated time, as
    the header stamps."""
    import graph_harness
    from graph_harness import logs, rate_by_stamps, running_graph, wait_running
    from rclpy.parameter import Parameter
    from rclpy.qos import DurabilityPolicy

    from musculo_control.loop.parts import load_parts
    from musculo_control.nodes.bag_recorder import BagRecorder
    from musculo_control.nodes.node_config import (
        MOCK_HARDWARE_NODE,
        ROS_PARAMS_FILE,
        MockHardwareNodeParams,
        check_params_file,
    )
    from musculo_control.paths import default_config_dir

    domain = _domain()
    monkeypatch.setattr(graph_harness, "domain_id", lambda: domain)
    parts = load_parts(default_config_dir())
    mock = check_params_file(parts.config_dir / ROS_PARAMS_FILE, MOCK_HARDWARE_NODE,
                             MockHardwareNodeParams)
    truth_hz = mock.get("truth_rate_hz", MockHardwareNodeParams.truth_rate_hz)
    nominal = {"/controller/state": parts.controller.loop.control_rate_hz,
               "/mock/hand": truth_hz,
               "/joint_states": parts.drivers.rates.sensor_rate_hz}
    topics = {**{t: TOPICS[t] for t in nominal},
              "/controller/goal": "geometry_msgs/msg/PoseStamped"}  # latched: its QoS checked
    folder = tmp_path / "bag"
    with running_graph(parts, tmp_path / "graph", fast_streams=False) as (graph, obs):
        wait_running(graph, obs)
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=domain)
        node = rclpy.create_node("bag_recorder", context=context, parameter_overrides=[
            Parameter("use_sim_time", Parameter.Type.BOOL, True)])
        spinning = Spinning(context, node)
        try:
            assert spinning.wait_until(lambda: node.get_clock().now().nanoseconds > 0, 30.0)
            recorder = BagRecorder(node, folder, topics)
            # the goal in force is latched: read transient-local once its publisher is seen
            assert spinning.wait_until(lambda: recorder.reader_qos("/controller/goal").durability
                                       == DurabilityPolicy.TRANSIENT_LOCAL, 30.0)
            # from when every stream comes (the new participant discovers the graph's
            # publishers within about a second of wall time, as rosbag2's would)
            assert spinning.wait_until(lambda: min(recorder.stats()[t] for t in nominal) > 0,
                                       60.0), (recorder.stats(), logs(graph))
            t0 = node.get_clock().now().nanoseconds * 1e-9
            assert spinning.wait_until(
                lambda: node.get_clock().now().nanoseconds * 1e-9 - t0 >= 3.0, 180.0), \
                logs(graph)
            counts = recorder.close()
        finally:
            spinning.close()
            node.destroy_node()
            rclpy.try_shutdown(context=context)
    # the graph's JointStates end with Fast CDR's padding, which rosbags' deserializer refuses
    # (doc/logs.md): the messages by Foxglove's decoder, and by rosbags' reader as bytes
    read = _read_mcap(folder, topics)
    raw = _raw_stamps(folder)
    assert counts["/controller/goal"] >= 1  # published before the recorder was there
    for topic in topics:
        assert len(read.get(topic, [])) == counts[topic], topic
        assert raw.get(topic, []) == [(t, _stamp(m)) for t, m in read.get(topic, [])], topic
    for topic, rate_hz in nominal.items():
        stamps_s = np.array([_stamp(m) for _, m in read[topic]]) * 1e-9
        log_s = np.array([t for t, _ in read[topic]]) * 1e-9
        rate, share = rate_by_stamps(list(stamps_s), t0 + 0.2, t0 + 2.8)
        assert rate == pytest.approx(rate_hz, rel=RATE_TOLERANCE), (topic, rate)
        assert share >= MIN_SHARE, (topic, share)
        # received on the simulated clock: the log time is the stamp plus the transport's delay
        assert abs(float(np.median(log_s - stamps_s))) < 0.05, topic
        print(f"{topic}: {counts[topic]} messages, {rate:.2f} Hz by stamps (nominal "
              f"{rate_hz:g}), {share:.3f} of them in [t0 + 0.2, t0 + 2.8] s, log - stamp "
              f"median {1e3 * float(np.median(log_s - stamps_s)):.2f} ms")
