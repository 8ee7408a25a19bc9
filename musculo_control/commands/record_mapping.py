"""``musculo record-mapping``: move the mock arm through its joint range and record what its
sensors say, for ``musculo learn-mapping`` (see :mod:`musculo_control.sim.mapping_recorder`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_file
from musculo_control.commands.options import add_common, setup_from_args
from musculo_control.model.mapping_recording import save_recording
from musculo_control.sim.mapping_recorder import load_mapping_config, record_on_mock
from musculo_control.sim.setup import MAPPING_FILES


def add_parser(sub: Any) -> None:
    p = sub.add_parser("record-mapping",
                       help="record joint angles and muscle lengths on the mock arm for "
                            "learn-mapping",
                       description="Moves the mock arm slowly through a space-filling set of "
                                   "joint targets inside its limits with the joint-stiffness "
                                   "controller (paper eq. 16) and records the joint states and "
                                   "muscle states of its own sensors (mapping.yaml 'record'). "
                                   "Writes a .npz recording (format in musculo_control/model/"
                                   "mapping_recording.py).")
    p.add_argument("--out", type=Path, default=Path("out/mapping_recording.npz"),
                   help="recording file to write (default: out/mapping_recording.npz)")
    p.add_argument("--targets", type=int, default=None,
                   help="number of joint targets (the same as --set mapping.record.targets=N)")
    add_common(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    writable_file(args.out, "--out")
    setup = setup_from_args(args, MAPPING_FILES)
    mapping_items = dict(setup.overrides.mapping)
    if args.targets is not None:
        mapping_items["record.targets"] = args.targets
    config = load_mapping_config(setup.robot.config_dir, mapping_items).record
    rec = record_on_mock(setup, config)
    path = save_recording(rec, args.out)
    unsafe = rec.meta.get("unsafe_ticks", 0)
    print(f"recorded {rec.n_samples} samples over {rec.meta['duration_s']:.0f} s "
          f"({config.targets} targets), {unsafe} control ticks the supervisor did not pass")
    print(f"wrote {path}")
    return 0
