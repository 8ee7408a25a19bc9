"""``musculo mapping-from-bag``: a mapping recording from rosbag2 bags of the node graph's
``/joint_states`` and ``/muscle_states`` (``musculo mapping-from-bag BAG [BAG ...] --out FILE``;
see :mod:`musculo_control.sim.mapping_bag`), the input of ``musculo learn-mapping``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_file
from musculo_control.model.mapping_recording import save_recording
from musculo_control.model.robot import load_robot
from musculo_control.paths import default_config_dir
from musculo_control.sim.mapping_bag import recording_from_bags
from musculo_control.sim.mapping_recorder import load_mapping_config


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mapping-from-bag",
                       help="turn rosbag2 bags of joint_states and muscle_states into a "
                            "mapping recording",
                       description="Pairs each /muscle_states message with the nearest "
                                   "/joint_states message by header stamp; each bag is one "
                                   "encoder session. Record on the robot with: ros2 bag record "
                                   "-s mcap /joint_states /muscle_states")
    p.add_argument("bags", type=Path, nargs="+", help="rosbag2 folders (MCAP or SQLite)")
    p.add_argument("--out", type=Path, required=True, help="recording file to write (.npz)")
    p.add_argument("--config", type=Path, default=None,
                   help="config folder of the robot (default: the shipped arm)")
    p.add_argument("--max-skew", type=float, default=0.002, metavar="S",
                   help="largest stamp difference of a joint/muscle pair [s] (default 0.002)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    writable_file(args.out, "--out")
    folder = args.config or default_config_dir()
    robot = load_robot(folder)
    rate = load_mapping_config(folder).record.sample_rate_hz
    rec = recording_from_bags(list(args.bags), robot.arm.joint_names, robot.muscle_names,
                              sample_rate_hz=rate, max_skew_s=args.max_skew,
                              config_dir=str(folder))
    path = save_recording(rec, args.out)
    print(f"paired {rec.n_samples} samples from {len(args.bags)} bag(s) at {rate:g} Hz")
    print(f"wrote {path}")
    return 0
