"""The run log is a ROS 2 bag that other tools read: checked with readers other than the writer.

- ``mcap`` + ``mcap_ros2`` (Foxglove's MCAP libraries, what Foxglove-style tools use) decode
  every message from the schemas stored in the file alone;
- ``rosbags``' reader opens the folder as a rosbag2 bag (metadata.yaml + storage), as
  ``ros2 bag play`` does.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from musculo_control.loop.state_record import controller_state_layout
from musculo_control.sim.recorder import Recorder
from musculo_control.sim.rosbag_log import ORIGIN_KEY, STAMPS_KEY, write_bag
from musculo_control.sim.signals import RunSignals

ORIGIN_NS = 1_700_000_000_123_456_789
TIMES = [0.0, 0.008, 0.016, 0.024]


@pytest.fixture(scope="module")
def bag(robot, tmp_path_factory):
    signals = RunSignals(robot, 125.0)
    rec = Recorder(signals.labels)
    rng = np.random.default_rng(0)
    layout = controller_state_layout(robot.arm.n_joints)
    for k, t in enumerate(TIMES):
        values = {name: rng.normal(size=len(labels)) for name, labels in signals.labels.items()}
        # the state's counts and flags as a tick writes them
        state = layout.unpack(values["controller_state"])
        state.update(ok=1.0, supervisor_state=float(k % 4), safety_level=2.0, iterations=9.0)
        values["controller_state"] = layout.pack(state)
        rec.add(t, values)
    folder = tmp_path_factory.mktemp("bag") / "bag"
    write_bag(folder, rec, frame_id="base_link", origin_ns=ORIGIN_NS,
              state_layout=controller_state_layout(robot.arm.n_joints))
    return folder, rec


EXPECTED = {
    "/joint_states": "sensor_msgs/msg/JointState",
    "/muscle_states": "sensor_msgs/msg/JointState",
    "/muscle_commands": "sensor_msgs/msg/JointState",
    "/controller/activations": "sensor_msgs/msg/JointState",
    "/controller/goal": "geometry_msgs/msg/PoseStamped",
    "/controller/state": "musculo_control_msgs/msg/ControllerState",
    "/mock/joint_states": "sensor_msgs/msg/JointState",
    "/mock/tendon_tensions": "sensor_msgs/msg/JointState",
    "/mock/hand": "geometry_msgs/msg/PointStamped",
    "/mock/elbow": "geometry_msgs/msg/PointStamped",
    "/mock/gauge_force": "std_msgs/msg/Float64",
}


def test_foxglove_decoder_reads_every_message_with_stamps(bag, robot):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    folder, rec = bag
    files = list(folder.glob("*.mcap"))
    assert len(files) == 1
    seen: dict[str, list] = {}
    with open(files[0], "rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            assert schema.encoding == "ros2msg" and channel.message_encoding == "cdr"
            assert schema.name == EXPECTED[channel.topic]
            seen.setdefault(channel.topic, []).append((message.log_time, decoded))
    assert set(seen) == set(EXPECTED)
    expected_ns = [ORIGIN_NS + round(t * 1e9) for t in TIMES]
    for topic, msgs in seen.items():
        assert [m[0] for m in msgs] == expected_ns, topic
    # explicit stamps: header = log time = origin (wall clock at the start) + simulated time
    js = [m for _, m in seen["/joint_states"]]
    assert [s.header.stamp.sec * 10**9 + s.header.stamp.nanosec for s in js] == expected_ns
    assert list(js[2].name) == list(robot.arm.joint_names)
    assert np.allclose(js[2].position, rec.array("q_measured_rad")[2])
    assert np.allclose(js[2].velocity, rec.array("qd_measured_rad_s")[2])
    muscles = [m for _, m in seen["/muscle_states"]]
    assert list(muscles[1].name) == list(robot.muscle_names)
    assert np.allclose(muscles[1].effort, rec.array("muscle_tension_measured_n")[1])
    hand = seen["/mock/hand"][3][1]
    assert hand.header.frame_id == "base_link"
    assert np.allclose([hand.point.x, hand.point.y, hand.point.z], rec.array("hand_m")[3])
    force = seen["/mock/gauge_force"][0][1]
    assert force.data == pytest.approx(rec.array("gauge_force_n")[0, 0])
    # the controller's state by its fields' names, from the schema stored in the file
    state = seen["/controller/state"][1][1]
    written = controller_state_layout(robot.arm.n_joints).unpack(rec.array("controller_state")[1])
    assert state.supervisor_state == 1 and state.iterations == 9 and state.ok
    assert state.header.frame_id == "base_link"
    assert np.allclose(state.hand_error_m, written["hand_error_m"])
    assert np.allclose(state.tau_null_nm, written["tau_null_nm"])


def test_rosbag2_reader_opens_the_folder_and_metadata_labels_the_stamps(bag):
    from rosbags.highlevel import AnyReader

    folder, _ = bag
    meta = yaml.safe_load((folder / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["storage_identifier"] == "mcap"
    assert "simulated time" in meta["custom_data"][STAMPS_KEY]
    assert int(meta["custom_data"][ORIGIN_KEY]) == ORIGIN_NS
    with AnyReader([folder]) as reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        assert topics == EXPECTED
        assert reader.message_count == len(EXPECTED) * len(TIMES)


def test_an_existing_folder_that_is_not_a_bag_is_refused(robot, tmp_path):
    from musculo_control.errors import InputError

    (tmp_path / "bag").mkdir()
    (tmp_path / "bag" / "notes.txt").write_text("mine")
    rec = Recorder(RunSignals(robot, 125.0).labels)
    with pytest.raises(InputError, match="earlier bag folder"):
        write_bag(tmp_path / "bag", rec, frame_id="base_link", origin_ns=0)
    assert (tmp_path / "bag" / "notes.txt").exists()
