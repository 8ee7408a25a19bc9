"""Message conversion (musculo_control.messages) against the real ROS 2 Humble message
definitions shipped by ``rosbags``: every message the nodes build is serialised to CDR and read
back, so a wrong field name or type fails here, without ROS."""

from __future__ import annotations

import array
import sys

import numpy as np
import pytest
from rosbags_messages import RosbagsMessages

from musculo_control import messages
from musculo_control.loop.health import ERROR
from musculo_control.records import Dim
from musculo_control.stamps import Stamp

JOINTS = ("shoulder_p", "shoulder_r", "elbow_p")


@pytest.fixture(scope="module")
def msgs() -> RosbagsMessages:
    return RosbagsMessages()


def test_conversions_import_without_rclpy():
    import subprocess

    code = ("import sys, musculo_control.messages, musculo_control.nodes.node_config, "
            "musculo_control.loop.rejections\n"
            "sys.exit(1 if any(m == 'rclpy' or m.startswith('rclpy.') for m in sys.modules) "
            "else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_joint_state_round_trip(msgs):
    msg = messages.joint_state_msg(msgs, Stamp(12, 345), JOINTS, position=[0.1, 0.2, 0.3],
                             velocity=np.array([1.0, 2.0, 3.0]), frame_id="base_link")
    back = msgs.round_trip(msg, "sensor_msgs/msg/JointState")
    assert messages.stamp_of(back) == Stamp(12, 345)
    assert list(back.name) == list(JOINTS)
    np.testing.assert_array_equal(back.position, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(back.velocity, [1.0, 2.0, 3.0])
    assert back.effort.size == 0
    assert back.header.frame_id == "base_link"


def test_joint_state_writer_reuses_one_message(msgs):
    writer = messages.JointStateWriter(msgs, JOINTS)
    first = writer.write(Stamp(1, 0), [1.0, 2.0, 3.0])
    second = writer.write(Stamp(2, 5), effort=[4.0, 5.0, 6.0])
    assert first is second
    back = msgs.round_trip(second, "sensor_msgs/msg/JointState")
    assert messages.stamp_of(back) == Stamp(2, 5)
    assert back.position.size == 0
    np.testing.assert_array_equal(back.effort, [4.0, 5.0, 6.0])


def test_float64_fields_for_rclpy_are_arrays_of_doubles_not_numpy():
    """The gotcha: rclpy's float64[] setters refuse numpy arrays; the rclpy factory converts."""
    values = np.array([[1.5, -2.0], [3.25, 4.0]])  # any shape, flattened in C order
    field = messages.RclpyMessages().float64s(values)
    assert isinstance(field, array.array) and field.typecode == "d"
    assert list(field) == [1.5, -2.0, 3.25, 4.0]
    # reading accepts either representation and copies
    for held in (field, values.reshape(-1), [1.5, -2.0, 3.25, 4.0]):
        got = messages.float_array(held)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, [1.5, -2.0, 3.25, 4.0])


def test_bytes_for_rclpy_and_ints_for_rosbags():
    assert messages.RclpyMessages().byte(2) == b"\x02"
    assert messages.byte_value(b"\x02") == 2 and messages.byte_value(3) == 3


def test_pose_point_vector_round_trips(msgs):
    pose = messages.pose_stamped_msg(msgs, Stamp(5, 6), "base_link", [0.3, 0.2, 0.1],
                               [0.0, 0.0, np.sqrt(0.5), np.sqrt(0.5)])
    back = messages.read_pose_stamped(msgs.round_trip(pose, "geometry_msgs/msg/PoseStamped"))
    assert back.stamp == Stamp(5, 6) and back.frame_id == "base_link"
    np.testing.assert_allclose(back.position_m, [0.3, 0.2, 0.1])
    np.testing.assert_allclose(back.quaternion_xyzw, [0.0, 0.0, np.sqrt(0.5), np.sqrt(0.5)])
    point = msgs.round_trip(messages.point_stamped_msg(msgs, Stamp(1, 1), "b", [1.0, 2.0, 3.0]),
                            "geometry_msgs/msg/PointStamped")
    np.testing.assert_array_equal(messages.read_point(point.point), [1.0, 2.0, 3.0])
    vec = msgs.round_trip(messages.vector3_stamped_msg(msgs, Stamp(1, 1), "b", [4.0, 5.0, 6.0]),
                          "geometry_msgs/msg/Vector3Stamped")
    np.testing.assert_array_equal(messages.read_point(vec.vector), [4.0, 5.0, 6.0])
    clock = msgs.round_trip(messages.clock_msg(msgs, Stamp(7, 8)), "rosgraph_msgs/msg/Clock")
    assert (clock.clock.sec, clock.clock.nanosec) == (7, 8)


def test_float64_multiarray_record_round_trip(msgs):
    dims = [Dim("schema:test_v1", 0, 0), Dim("a:2x2", 4, 0), Dim("b:1", 1, 4)]
    data = np.arange(5.0)
    msg = messages.RecordWriter(msgs, dims).write(data)
    back_dims, back_data, offset = messages.read_float64_multiarray(
        msgs.round_trip(msg, "std_msgs/msg/Float64MultiArray"))
    assert back_dims == dims and offset == 0
    np.testing.assert_array_equal(back_data, data)


def test_marker_array_one_line_strip_per_muscle(msgs):
    paths = [np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.1]]),
             np.array([[0.1, 0.0, 0.0], [0.1, 0.1, 0.0], [0.2, 0.1, 0.0]])]
    colours = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.5]])
    msg = messages.muscle_marker_array_msg(msgs, Stamp(1, 2), "base_link", paths, colours,
                                     ["biceps", "triceps"], 0.006)
    back = msgs.round_trip(msg, "visualization_msgs/msg/MarkerArray")
    assert [m.id for m in back.markers] == [0, 1]
    for m, path, colour, name in zip(back.markers, paths, colours, ["biceps", "triceps"]):
        assert m.type == messages.MARKER_LINE_STRIP and m.action == messages.MARKER_ADD
        assert m.header.frame_id == "base_link" and m.text == name
        assert m.scale.x == pytest.approx(0.006)
        np.testing.assert_allclose([[p.x, p.y, p.z] for p in m.points], path)
        np.testing.assert_allclose([m.color.r, m.color.g, m.color.b, m.color.a], colour)


def test_diagnostic_array_round_trip(msgs):
    status = messages.Status(ERROR, "musculo_control: activation_qp_node", "minimum tension: x",
                       "controller", {"ticks": "12"})
    back = msgs.round_trip(messages.diagnostic_array_msg(msgs, Stamp(3, 0), [status]),
                           "diagnostic_msgs/msg/DiagnosticArray")
    assert messages.read_diagnostic_array(back) == [status]


def test_a_misspelt_field_fails_against_the_real_definition(msgs):
    with pytest.raises(TypeError):
        msgs.new("sensor_msgs/msg/JointState", names=["a"])


def test_quaternion_from_rotation_round_trip():
    from musculo_control.control.goal import rotation_from_quaternion

    rng = np.random.default_rng(0)
    for q in rng.normal(size=(50, 4)):
        q /= np.linalg.norm(q)
        got = messages.quaternion_from_rotation(rotation_from_quaternion(q))
        assert np.allclose(got, q) or np.allclose(got, -q)
        assert got[3] >= 0.0


# -- reading JointState: names, lengths, finiteness -----------------------------------------
ONE_S = Stamp(1, 0)


def _js(msgs, names, position=None, velocity=None, effort=None, stamp=ONE_S):
    return messages.joint_state_msg(msgs, stamp, names, position, velocity, effort)


def test_names_in_any_order_come_back_in_the_consumers_order(msgs):
    order = messages.NameOrder("joint_states", JOINTS)
    msg = _js(msgs, ["elbow_p", "shoulder_p", "shoulder_r"], position=[3.0, 1.0, 2.0],
              velocity=[30.0, 10.0, 20.0])
    got = messages.read_joint_state(msg, order, required=("position", "velocity"))
    assert not isinstance(got, str)
    np.testing.assert_array_equal(got.position, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(got.velocity, [10.0, 20.0, 30.0])
    assert got.effort.size == 0


@pytest.mark.parametrize("names, position, words", [
    (["shoulder_p", "shoulder_r"], [1.0, 2.0], ["2 joint names", "expected 3"]),
    (["shoulder_p", "shoulder_p", "elbow_p"], [1.0, 2.0, 3.0], ["duplicate", "shoulder_p"]),
    (["shoulder_p", "wrist", "elbow_p"], [1.0, 2.0, 3.0], ["unknown", "wrist"]),
    (list(JOINTS), [1.0, 2.0], ["2 position values for 3"]),
    (list(JOINTS), [1.0, float("nan"), 3.0], ["non-finite position", "shoulder_r"]),
])
def test_malformed_joint_states_are_refused_naming_topic_and_fault(msgs, names, position, words):
    order = messages.NameOrder("joint_states", JOINTS, "joint name")
    got = messages.read_joint_state(_js(msgs, names, position), order, finite=True)
    assert isinstance(got, str)
    assert got.startswith("joint_states:")
    for w in words:
        assert w in got


def test_optional_fields_may_be_empty_but_not_short(msgs):
    order = messages.NameOrder("muscle_commands", JOINTS)
    ok = messages.read_joint_state(_js(msgs, JOINTS, effort=[1.0, 2.0, 3.0]), order,
                             required=("effort",))
    assert not isinstance(ok, str)
    bad = messages.read_joint_state(_js(msgs, JOINTS, position=[1.0], effort=[1.0, 2.0, 3.0]), order,
                              required=("effort",))
    assert isinstance(bad, str) and "1 position values" in bad


def test_the_name_index_is_cached_and_still_correct_after_a_change(msgs):
    order = messages.NameOrder("t", JOINTS)
    a = messages.read_joint_state(_js(msgs, JOINTS, [1.0, 2.0, 3.0]), order)
    b = messages.read_joint_state(_js(msgs, JOINTS, [4.0, 5.0, 6.0]), order)
    c = messages.read_joint_state(_js(msgs, ["elbow_p", "shoulder_r", "shoulder_p"], [9.0, 8.0, 7.0]),
                            order)
    np.testing.assert_array_equal(a.position, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(b.position, [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(c.position, [7.0, 8.0, 9.0])
