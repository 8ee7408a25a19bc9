"""A bag of the graph's own topics as the arrays the identification needs, ROS-free.

From ``/joint_states`` (position, velocity), ``/muscle_states`` (effort: the load cells'
tensions) and ``/muscle_commands`` (effort: the commanded tensions), read with ``rosbags`` and
this project's message types, whatever wrote the bag (``musculo simulate``, ``ros2 bag record``
of the live graph). Nothing of the mock's truth (``/mock/...``) is read: the robot has none.

Clock: the header stamps, from the bag's ``custom_data`` origin (a runner's bag: the run's
t = 0, and only the run's samples are kept) or else from the first joint state. The muscle
states are interpolated onto the joint states' stamps; the commands keep their own stamps (an
actuator module holds the newest one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from musculo_control import messages
from musculo_control.errors import InputError
from musculo_control.model.robot import Robot
from musculo_control.sim.bag_signals import deserialize_cdr
from musculo_control.sim.rosbag_log import JOINT_STATE, ORIGIN_KEY, RosbagsMessages
from musculo_control.stamps import NS_PER_S

FloatArray = npt.NDArray[np.float64]

JOINTS = "/joint_states"
MUSCLES = "/muscle_states"
COMMANDS = "/muscle_commands"


@dataclass(frozen=True)
class Recording:
    """One recorded run: samples (K,) of the joints and tensions, commands (C,) on one clock."""

    name: str
    t_s: FloatArray  # (K,) sample times [s]
    q_rad: FloatArray  # (K, n) measured joint angles [rad]
    qd_rad_s: FloatArray  # (K, n) the joint rates the graph published [rad/s]
    tension_n: FloatArray  # (K, m) measured tensions [N]
    command_t_s: FloatArray  # (C,) command stamps [s]
    command_n: FloatArray  # (C, m) commanded tensions [N]

    @property
    def duration_s(self) -> float:
        return float(self.t_s[-1] - self.t_s[0]) if len(self.t_s) else 0.0

    def check(self, n: int, m: int) -> None:
        """Shapes and finiteness against a robot of ``n`` joints and ``m`` muscles."""
        k, c = len(self.t_s), len(self.command_t_s)
        for what, a, shape in (("q_rad", self.q_rad, (k, n)), ("qd_rad_s", self.qd_rad_s, (k, n)),
                               ("tension_n", self.tension_n, (k, m)),
                               ("command_n", self.command_n, (c, m))):
            if a.shape != shape:
                raise InputError(f"recording {self.name}: {what}", f"shape {shape}", a.shape)
            if not np.all(np.isfinite(a)):
                raise InputError(f"recording {self.name}: {what}", "finite values",
                                 "NaN or infinity")
        if k < 3 or c < 1 or np.any(np.diff(self.t_s) <= 0.0):
            raise InputError(f"recording {self.name}: t_s",
                             "at least 3 samples with rising stamps and one command",
                             f"{k} samples, {c} commands")


def _interpolate(t_src: FloatArray, values: FloatArray, t: FloatArray) -> FloatArray:
    """``values`` (K, w) at ``t_src`` linearly at ``t``, the ends held."""
    return np.stack([np.interp(t, t_src, values[:, j]) for j in range(values.shape[1])], axis=1)


def read_recording(bag: Path, robot: Robot) -> Recording:
    """The :class:`Recording` of a rosbag2 folder (see the module docstring)."""
    from rosbags.highlevel import AnyReader

    bag = Path(bag)
    try:
        reader = AnyReader([bag], default_typestore=RosbagsMessages().typestore)
    except Exception as exc:  # rosbags raises its own error types for unreadable bags
        raise InputError(f"bag {bag}", "a rosbag2 folder (metadata.yaml and .mcap or .db3)",
                         f"{type(exc).__name__}: {exc}") from None
    wanted = {JOINTS: (robot.arm.joint_names, ("position", "velocity")),
              MUSCLES: (robot.muscle_names, ("effort",)),
              COMMANDS: (robot.muscle_names, ("effort",))}
    raw: dict[str, tuple[list[int], list[Sequence[FloatArray]]]] = {t: ([], []) for t in wanted}
    with reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        for topic in wanted:
            if topics.get(topic) != JOINT_STATE:
                raise InputError(f"bag {bag}", f"a topic {topic} ({JOINT_STATE})",
                                 f"topics {sorted(topics)}")
        orders = {t: messages.NameOrder(t, names) for t, (names, _) in wanted.items()}
        conns = [c for c in reader.connections if c.topic in wanted]
        for conn, _, data in reader.messages(connections=conns):
            msg = deserialize_cdr(reader.typestore, data, conn.msgtype)
            fields = wanted[conn.topic][1]
            got = messages.read_joint_state(msg, orders[conn.topic], required=fields)
            if isinstance(got, str):
                raise InputError(f"bag {bag}: {conn.topic}",
                                 f"JointStates with {list(fields)} for "
                                 f"{list(wanted[conn.topic][0])}", got)
            stamps, values = raw[conn.topic]
            stamps.append(messages.stamp_of(msg).nanoseconds)
            values.append([np.asarray(getattr(got, f), dtype=float) for f in fields])
    custom = _custom_data(bag)
    for topic, (stamps, _) in raw.items():
        if not stamps:
            raise InputError(f"bag {bag}: {topic}", "at least one message", "none")
    origin = int(custom.get(ORIGIN_KEY, raw[JOINTS][0][0]))

    def seconds(topic: str) -> FloatArray:
        return (np.array(raw[topic][0], dtype=np.int64) - np.int64(origin)) / NS_PER_S

    def field(topic: str, i: int) -> FloatArray:
        return np.array([v[i] for v in raw[topic][1]])

    t = seconds(JOINTS)
    order = np.argsort(t, kind="stable")
    t, q, qd = t[order], field(JOINTS, 0)[order], field(JOINTS, 1)[order]
    keep = np.concatenate(([True], np.diff(t) > 0.0)) & (t >= -1e-9)
    t, q, qd = t[keep], q[keep], qd[keep]
    tm = seconds(MUSCLES)
    om = np.argsort(tm, kind="stable")
    tension = _interpolate(tm[om], field(MUSCLES, 0)[om], t)
    tc = seconds(COMMANDS)
    oc = np.argsort(tc, kind="stable")
    rec = Recording(bag.name if bag.name != "bag" else str(bag), t, q, qd, tension, tc[oc],
                    field(COMMANDS, 0)[oc])
    rec.check(robot.arm.n_joints, robot.n_muscles)
    return rec


def _custom_data(bag: Path) -> dict[str, str]:
    import yaml

    path = bag / "metadata.yaml"
    info = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    custom = (info or {}).get("rosbag2_bagfile_information", {}).get("custom_data")
    return {str(k): str(v) for k, v in (custom or {}).items()}


def joint_rates(t_s: FloatArray, q_rad: FloatArray, k: int, half_width_s: float) -> FloatArray:
    """(n,) joint rates at sample ``k``: the slope at ``t_s[k]`` of a quadratic fitted by least
    squares to the angles within ``half_width_s`` either side (at least one sample each side
    that exists); a smoother estimate than a difference of two quantised readings."""
    sel = np.flatnonzero(np.abs(t_s - t_s[k]) <= half_width_s + 1e-12)
    if len(sel) < 3:
        sel = np.arange(max(k - 1, 0), min(k + 2, len(t_s)))
    dt = t_s[sel] - t_s[k]
    deg = 2 if len(sel) >= 4 else 1
    basis = np.vander(dt, deg + 1, increasing=True)  # 1, dt, dt^2
    coef, *_ = np.linalg.lstsq(basis, q_rad[sel], rcond=None)
    return np.asarray(coef[1], dtype=float)
