"""The interface package's message types: their .msg files, their fields against the records
they mirror, and one tick's state through rclpy's bytes read back by rosbags (an independent
CDR reader of the same definition)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from musculo_control import msg_types
from musculo_control.errors import InputError
from musculo_control.estimation.snapshot_codec import snapshot_layout
from musculo_control.loop.state_record import controller_state_layout
from musculo_control.loop.timing import TIMING_LAYOUT
from musculo_control.messages import RclpyMessages
from musculo_control.stamps import Stamp

MSG_DIR = Path(__file__).resolve().parents[1] / "msgs" / "musculo_control_msgs" / "msg"
N, M, K = 7, 15, 5
LAYOUTS = {"ControllerState": controller_state_layout(N), "ControllerTiming": TIMING_LAYOUT,
           "DynamicsSnapshot": snapshot_layout(N, M, K)}


@pytest.mark.parametrize("name", sorted(msg_types.TYPES))
def test_the_msg_files_are_the_definitions(name):
    text = (MSG_DIR / f"{name}.msg").read_text()
    assert text == msg_types.TYPES[name].text(), (
        f"{MSG_DIR / name}.msg differs from musculo_control.msg_types; rewrite it with "
        f"python -c \"from musculo_control.msg_types import write_definitions; "
        f"write_definitions('msgs/musculo_control_msgs/msg')\"")


def test_every_msg_file_is_built_by_the_package():
    cmake = (MSG_DIR.parent / "CMakeLists.txt").read_text()
    assert sorted(p.name for p in MSG_DIR.glob("*.msg")) == sorted(f"{n}.msg"
                                                                   for n in msg_types.TYPES)
    for name in msg_types.TYPES:
        assert f'"msg/{name}.msg"' in cmake


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_each_type_mirrors_its_record(name):
    msg_types.TYPES[name].check(LAYOUTS[name])


def test_a_type_that_does_not_mirror_its_record_is_refused():
    with pytest.raises(InputError, match="tick_timing"):
        msg_types.CONTROLLER_STATE.check(TIMING_LAYOUT)


def _values(layout, rng):
    out = {f.name: rng.normal(size=f.shape) for f in layout.fields}
    for name, value in (("ok", 1.0), ("supervisor_state", 3.0), ("safety_level", 2.0),
                        ("iterations", 17.0), ("ticks", 125.0), ("overruns", 2.0),
                        ("gc_collections", 0.0), ("damped", 1.0),
                        ("stamp", np.array([12.0, 345_000_000.0]))):
        if name in out:
            out[name] = np.asarray(value)
    return out


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_a_record_survives_rclpy_bytes_read_by_rosbags(name):
    from rclpy.serialization import serialize_message

    from musculo_control.sim.rosbag_log import RosbagsMessages

    layout, msg_type = LAYOUTS[name], msg_types.TYPES[name]
    values = _values(layout, np.random.default_rng(3))
    msg = msg_types.to_msg(RclpyMessages(), msg_type, values, frame_id="base",
                           stamp=Stamp(12, 345_000_000))
    assert msg.header.frame_id == "base" and msg.header.stamp.nanosec == 345_000_000
    data = serialize_message(msg)
    back = RosbagsMessages().deserialize(bytes(data), msg_type.type_name)
    got = msg_types.from_msg(back, msg_type, layout)
    assert got.keys() == values.keys()
    for key, value in values.items():
        np.testing.assert_array_equal(got[key], value, err_msg=key)
    # and named: what `ros2 topic echo` prints is the field, not data[i]
    if name == "ControllerState":
        assert back.supervisor_state == 3 and back.iterations == 17 and back.ok is True
        assert back.LATCHED == 3


def test_a_field_of_the_wrong_size_names_the_field():
    layout = LAYOUTS["ControllerState"]
    values = _values(layout, np.random.default_rng(0))
    msg = msg_types.to_msg(RclpyMessages(), msg_types.CONTROLLER_STATE, values)
    msg.tau_null_nm = [1.0, 2.0]
    with pytest.raises(InputError, match="tau_null_nm"):
        msg_types.from_msg(msg, msg_types.CONTROLLER_STATE, layout)
