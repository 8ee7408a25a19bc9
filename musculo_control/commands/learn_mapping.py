"""``musculo learn-mapping RECORDING --out FILE``: fit l(q) per muscle to a recording and write
the model file that robot.yaml ``muscle_geometry.learned_model`` selects (see
:mod:`musculo_control.model.mapping_fit`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_file
from musculo_control.config.parser import overrides_by_file
from musculo_control.model.learned_mapping import save_mapping
from musculo_control.model.mapping_fit import fit_mapping
from musculo_control.model.mapping_recording import load_recording
from musculo_control.model.robot import load_robot
from musculo_control.paths import default_config_dir
from musculo_control.sim.mapping_recorder import load_mapping_config


def add_parser(sub: Any) -> None:
    p = sub.add_parser("learn-mapping", help="learn the joint-muscle mapping l(q) from a "
                                             "recording",
                       description="Fits each muscle's length as a polynomial of the joints it "
                                   "spans, with the encoder offsets as unknowns (mapping.yaml "
                                   "'fit'); writes a model file with the recorded joint box, "
                                   "l_min/l_max, the fit errors and the library versions.")
    p.add_argument("recording", type=Path, help="a recording (.npz) of record-mapping or "
                                                "mapping-from-bag")
    p.add_argument("--out", type=Path, required=True, help="model file to write (.npz)")
    p.add_argument("--config", type=Path, default=None,
                   help="config folder of the robot (default: the recording's, else the "
                        "shipped arm)")
    p.add_argument("--set", dest="overrides", action="append", default=[],
                   metavar="mapping.KEY=V", help="override mapping.yaml, e.g. "
                                                 "mapping.fit.degrees=[3,4,5] (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    writable_file(args.out, "--out")
    items = overrides_by_file(args.overrides, ("mapping",))["mapping"]  # mapping.yaml only
    rec = load_recording(args.recording)
    folder = args.config or (Path(rec.config_dir) if rec.config_dir
                             and Path(rec.config_dir).is_dir() else default_config_dir())
    robot = load_robot(folder)
    config = load_mapping_config(folder, items).fit
    mapping, fits = fit_mapping(rec, config, joint_names=robot.arm.joint_names,
                                muscle_names=robot.muscle_names, robot_file=robot.robot_file,
                                progress=True)
    path = save_mapping(mapping, args.out)
    worst = max(fits, key=lambda f: f.validation_rms_m)
    print(f"learned l(q) of {len(fits)} muscles from {rec.n_samples} samples: "
          f"{mapping.exponents.shape[0]} basis terms in all; held-out RMS error "
          f"{1e3 * min(f.validation_rms_m for f in fits):.3f}-{1e3 * worst.validation_rms_m:.3f} "
          f"mm (largest: {mapping.muscle_names[fits.index(worst)]})")
    print(f"wrote {path}; use it with robot.yaml muscle_geometry.learned_model or "
          f"--set robot.muscle_geometry.learned_model={path}")
    return 0
