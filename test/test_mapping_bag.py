"""mapping-from-bag: rosbag2 (MCAP) bags of /joint_states and /muscle_states, written here with
rosbags as `ros2 bag record -s mcap` would, turned into a mapping recording."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from musculo_control import messages
from musculo_control.cli import main
from musculo_control.errors import InputError
from musculo_control.model.mapping_recording import load_recording
from musculo_control.paths import config_root
from musculo_control.sim.mapping_bag import recording_from_bags
from musculo_control.sim.rosbag_log import RosbagsMessages
from musculo_control.stamps import NS_PER_S, Stamp

PLANAR = config_root() / "planar_arm"
JOINTS = ("shoulder", "elbow")
MUSCLES = ("deltoid", "teres_major", "brachialis", "triceps_lateral", "biceps", "triceps_long")


def write_bag(folder: Path, t_s: np.ndarray, q: np.ndarray, length: np.ndarray, *,
              joint_order=JOINTS, muscle_order=MUSCLES, skew_s: float = 0.0003) -> Path:
    """The two topics at 500 Hz, names in the given (any) order, muscle stamps ``skew_s`` after
    the joint stamps (two nodes stamp their own messages)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    types = RosbagsMessages()
    kind = "sensor_msgs/msg/JointState"
    jidx = [JOINTS.index(n) for n in joint_order]
    midx = [MUSCLES.index(n) if n in MUSCLES else 0 for n in muscle_order]
    with Writer(folder, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        cj = writer.add_connection("/joint_states", kind, typestore=types.typestore)
        cm = writer.add_connection("/muscle_states", kind, typestore=types.typestore)
        for i, t in enumerate(t_s):
            sj = Stamp.from_nanoseconds(int(round(t * NS_PER_S)))
            sm = Stamp.from_nanoseconds(int(round((t + skew_s) * NS_PER_S)))
            js = messages.joint_state_msg(types, sj, joint_order, position=q[i, jidx],
                                    velocity=np.zeros(2))
            ms = messages.joint_state_msg(types, sm, muscle_order, position=length[i, midx],
                                    velocity=np.zeros(6), effort=np.full(6, 20.0 + i % 3))
            writer.write(cj, sj.nanoseconds, types.serialize(js, kind))
            writer.write(cm, sm.nanoseconds, types.serialize(ms, kind))
    return folder


def signals(count: int, t0: float = 100.0):
    t = t0 + np.arange(count) * 0.002
    q = np.column_stack([0.5 * np.sin(t), 1.0 + 0.5 * np.cos(0.7 * t)])
    length = 0.2 + 0.01 * np.column_stack([np.sin(t * (k + 1)) for k in range(6)])
    return t, q, length


def test_bag_to_recording_pairs_by_stamp_and_reorders_names(tmp_path):
    t, q, length = signals(500)
    a = write_bag(tmp_path / "a", t, q, length, joint_order=("elbow", "shoulder"),
                  muscle_order=tuple(reversed(MUSCLES)))
    t2, q2, l2 = signals(250, t0=300.0)
    b = write_bag(tmp_path / "b", t2, q2, l2)
    rec = recording_from_bags([a, b], JOINTS, MUSCLES, sample_rate_hz=25.0, max_skew_s=0.001)
    # 1 s at 25 Hz from the first bag, 0.5 s from the second; one session each
    assert rec.n_samples == 25 + 13
    assert list(np.unique(rec.session)) == [0, 1]
    k = np.searchsorted(t, rec.stamp_s[rec.session == 0] - 1e-9)
    np.testing.assert_allclose(rec.q_rad[rec.session == 0], q[k])
    np.testing.assert_allclose(rec.length_m[rec.session == 0], length[k])
    np.testing.assert_allclose(rec.length_stamp_s - rec.stamp_s, 0.0003, atol=1e-9)
    assert rec.joint_names == JOINTS and rec.muscle_names == MUSCLES


def test_bag_command_writes_a_recording(tmp_path, capsys):
    t, q, length = signals(300)
    bag = write_bag(tmp_path / "bag", t, q, length)
    out = tmp_path / "rec.npz"
    assert main(["mapping-from-bag", str(bag), "--out", str(out), "--config", str(PLANAR)]) == 0
    rec = load_recording(out)
    assert rec.n_samples == 15 and str(bag) in rec.source


def test_bag_errors_name_bag_topic_and_expectation(tmp_path):
    t, q, length = signals(50)
    wrong = write_bag(tmp_path / "wrong", t, q, length,
                      muscle_order=("deltoid", "teres_major", "brachialis", "triceps_lateral",
                                    "biceps", "anconeus"))
    with pytest.raises(InputError, match=r"wrong: /muscle_states: name: expected the robot's"):
        recording_from_bags([wrong], JOINTS, MUSCLES, sample_rate_hz=25.0, max_skew_s=0.001)
    t_back = t.copy()
    t_back[20] = t_back[10]
    back = write_bag(tmp_path / "back", t_back, q, length)
    with pytest.raises(InputError, match="back: /joint_states: header.stamp: expected stamps "
                                         "that rise"):
        recording_from_bags([back], JOINTS, MUSCLES, sample_rate_hz=25.0, max_skew_s=0.001)
    far = write_bag(tmp_path / "far", t, q, length, skew_s=0.0008)  # 1.2 ms to the next
    with pytest.raises(InputError, match="within 0.0005 s"):
        recording_from_bags([far], JOINTS, MUSCLES, sample_rate_hz=25.0, max_skew_s=0.0005)
    with pytest.raises(InputError, match="a rosbag2 folder"):
        recording_from_bags([tmp_path / "nothing"], JOINTS, MUSCLES, sample_rate_hz=25.0,
                            max_skew_s=0.001)
