"""``musculo identify``: fit the mock arm's unknowns to the robot's own bags (doc/identify.md).

``musculo identify BAG... --out FILE``: fit, write the ``mock_arm.yaml`` overlay ``FILE`` and
the JSON beside it (values, uncertainties, correlations, what the data determined, what to
record). ``musculo identify --report --overlay FILE BAG... --out DIR``: on held-out bags, the
prediction errors of the default mock and of the identified one over the horizons of
``identify.yaml``, side by side, with a figure.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from musculo_control.commands.checks import writable_dir, writable_file
from musculo_control.commands.options import add_common, override_items, setup_from_args
from musculo_control.errors import ConfigError, InputError
from musculo_control.hardware.calibration import load_calibration
from musculo_control.paths import default_config_dir
from musculo_control.sim.bag_score import rerun, score_bag, setup_of_run
from musculo_control.sim.bag_signals import recorded_run
from musculo_control.sim.identify.config import IdentifyConfig, load_identify_config
from musculo_control.sim.identify.fit import WHAT_TO_RECORD, FitResult, fit
from musculo_control.sim.identify.overlay import json_path, overlay_text
from musculo_control.sim.identify.recording import Recording, read_recording
from musculo_control.sim.identify.report import (
    HorizonErrors,
    MetricsComparison,
    angle_ratios,
    horizon_errors,
    horizon_windows,
    plot_horizons,
    table,
)
from musculo_control.sim.identify.windows import MockFamily, base_key, make_windows
from musculo_control.sim.mock_arm import MockArm
from musculo_control.sim.results import dumps
from musculo_control.sim.setup import EXPERIMENT_NAMES, Setup


def add_parser(sub: Any) -> None:
    """Register ``musculo identify``."""
    p = sub.add_parser("identify", help="fit the mock arm's unknowns to the robot's bags",
                       description="Fits the mock arm's unknown parameters (identify.yaml: lag, "
                                   "friction, damping, link masses) so that the mock, started "
                                   "from recorded states and driven by the recorded commands, "
                                   "predicts the recorded joint angles and tensions over short "
                                   "windows; writes a mock_arm.yaml overlay. With --report: "
                                   "the prediction errors of the default and the identified "
                                   "mock on held-out bags, and for a bag of one of the paper's "
                                   "experiments its metrics against both mocks' runs of it.")
    p.add_argument("bags", nargs="+", type=Path, metavar="BAG",
                   help="rosbag2 folders with /joint_states, /muscle_states, /muscle_commands")
    p.add_argument("--out", type=Path, required=True,
                   help="the overlay to write (a .yaml; its .json beside it); with --report "
                        "the folder of the report")
    p.add_argument("--report", action="store_true",
                   help="compare the default and the identified mock on these (held-out) bags")
    p.add_argument("--overlay", type=Path, default=None,
                   help="with --report: the overlay an earlier `musculo identify` wrote")
    p.add_argument("--identify-config", type=Path, default=None, metavar="FILE",
                   help="the identification's settings (default: identify.yaml of the config "
                        "folder)")
    add_common(p)
    p.set_defaults(func=run)


def identify_path(args: argparse.Namespace, setup: Setup) -> Path:
    return Path(args.identify_config or setup.robot.config_dir / "identify.yaml")


def identify_config(args: argparse.Namespace, setup: Setup) -> IdentifyConfig:
    path = identify_path(args, setup)
    if not path.is_file():
        raise ConfigError(str(path), "<file>", "identify.yaml: the parameters to fit and their "
                          "bounds (see config/planar_arm/identify.yaml and doc/identify.md)",
                          "no such file")
    return load_identify_config(path)


def _family(setup: Setup, cfg: IdentifyConfig, identify_file: str) -> MockFamily:
    robot = setup.robot
    cal = load_calibration(robot, robot.config_dir / "hardware.yaml")
    return MockFamily(robot, cal, setup.mock_config, cfg.parameters,
                      nominal_geometry=cfg.nominal_geometry,
                      file=str(robot.config_dir / "mock_arm.yaml"), identify_file=identify_file)


def excitation(rec: Recording) -> dict[str, float]:
    """How much a recording moves and commands: RMS joint speed and command rate."""
    qd = np.diff(rec.q_rad, axis=0) / np.diff(rec.t_s)[:, None]
    fd = np.diff(rec.command_n, axis=0) / np.maximum(np.diff(rec.command_t_s), 1e-9)[:, None]
    return {"duration_s": rec.duration_s,
            "joint_speed_rms_rad_s": float(np.sqrt(np.mean(qd ** 2))),
            "command_rate_rms_n_s": float(np.sqrt(np.mean(fd ** 2))) if len(fd) else 0.0,
            "tension_mean_n": float(np.mean(rec.tension_n))}


def print_fit(result: FitResult) -> None:
    width = max(34, *(len(k) + 2 for k in result.keys))
    print(f"{'parameter':<{width}}{'start':>10}{'fitted':>11}{'std':>10}  determined")
    for key, a, b, s, ok, why in zip(result.keys, result.x0, result.x, result.std,
                                     result.determined, result.reasons):
        print(f"{key:<{width}}{a:>10.4g}{b:>11.4g}{s:>10.2g}  {'yes' if ok else 'no: ' + why}")
    print(f"scaled residual rms {result.rms0:.3g} -> {result.rms:.3g} over {result.windows} "
          f"windows, {result.evaluations} evaluations, {result.wall_s:.1f} s")


def run_fit(args: argparse.Namespace) -> int:
    writable_file(args.out, "--out")
    setup = setup_from_args(args)
    cfg = identify_config(args, setup)
    family = _family(setup, cfg, str(identify_path(args, setup)))
    recs = [read_recording(b, setup.robot) for b in args.bags]
    w = cfg.windows
    windows = make_windows(recs, w.length_s, w.stride_s, w.skip_start_s,
                           lost_periods=w.lost_command_periods, max_windows=w.max_windows)
    if not windows:
        raise InputError("bags", f"recordings longer than {w.length_s + w.skip_start_s} s "
                                 f"(identify.yaml windows)",
                         [f"{r.name}: {r.duration_s:.2f} s" for r in recs])
    print(f"musculo identify: {len(recs)} bag(s), {len(windows)} windows of {w.length_s} s, "
          f"{len(family.keys)} parameters")
    result = fit(family, recs, windows, cfg, progress=print)
    print_fit(result)
    todo = [f"{k}: record {WHAT_TO_RECORD[base_key(k)]}"
            for k, ok in zip(result.keys, result.determined) if not ok]
    for line in todo:
        print(f"  to determine {line}")
    args.out.write_text(overlay_text(family, result, nominal_geometry=cfg.nominal_geometry,
                                     source=", ".join(str(b) for b in args.bags)))
    doc = {"bags": [str(b) for b in args.bags], "config": str(setup.robot.config_dir),
           "nominal_geometry": cfg.nominal_geometry, **result.as_dict(),
           "excitation": {r.name: excitation(r) for r in recs}, "what_to_record": todo}
    json_path(args.out).write_text(dumps(doc))
    print(f"wrote {args.out} and {json_path(args.out)}")
    return 0


def fitted_x(path: Path, family: MockFamily) -> np.ndarray:
    """The fitted values of ``family``'s parameters from an overlay's JSON."""
    jp = json_path(path)
    try:
        doc = json.loads(jp.read_text())
        params = doc["parameters"]
        return np.array([float(params[k]["fitted"]) for k in family.keys])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"--overlay {path}", f"{jp} written by `musculo identify` with the "
                         f"parameters {list(family.keys)}", f"{type(exc).__name__}: {exc}") \
            from None


def compare(setup: Setup, cfg: IdentifyConfig, family: MockFamily, x: np.ndarray,
            recs: list[Recording]) -> dict[str, HorizonErrors]:
    """Default mock (mock_arm.yaml as it is) against the identified one, on ``recs``."""
    w = cfg.windows
    windows = horizon_windows(recs, cfg.horizons_s, cfg.report_stride_s, w.skip_start_s,
                              w.lost_command_periods)
    if not windows:
        raise InputError("bags", f"held-out recordings longer than {max(cfg.horizons_s)} s",
                         [f"{r.name}: {r.duration_s:.2f} s" for r in recs])
    default = MockArm(setup.robot, family.calibration, setup.mock_config,
                      file=family.file)
    kw = {"delay_s": w.command_delay_s, "rate_half_width_s": w.velocity_fit_half_width_s}
    return {"default mock": horizon_errors(default, recs, windows, cfg.horizons_s, **kw),
            "identified mock": horizon_errors(family.build(x), recs, windows, cfg.horizons_s,
                                              **kw)}


def run_report(args: argparse.Namespace) -> int:
    if args.overlay is None:
        raise SystemExit("musculo identify --report: --overlay FILE is required (the overlay "
                         "an earlier `musculo identify` wrote)")
    writable_dir(args.out, "--out")
    setup = setup_from_args(args)
    cfg = identify_config(args, setup)
    family = _family(setup, cfg, str(identify_path(args, setup)))
    x = fitted_x(args.overlay, family)
    recs = [read_recording(b, setup.robot) for b in args.bags]
    t0 = time.perf_counter()
    errors = compare(setup, cfg, family, x, recs)
    print(table(errors))
    png = plot_horizons(errors, args.out / "identify_report.png")
    ratio = angle_ratios(errors)
    runs = [experiment_metrics(args, bag) for bag in args.bags]
    doc = {"bags": [str(b) for b in args.bags], "overlay": str(args.overlay),
           **{k: e.as_dict() for k, e in errors.items()}, "angle_error_ratio": ratio,
           "experiment_metrics": [r.as_dict() for r in runs if r is not None],
           "wall_s": time.perf_counter() - t0}
    (args.out / "identify_report.json").write_text(dumps(doc))
    print(f"wrote {png} and {args.out / 'identify_report.json'}")
    return 0


def experiment_metrics(args: argparse.Namespace, bag: Path) -> MetricsComparison | None:
    """The metrics of ``bag``'s experiment (its metadata's) as recorded and as the default
    and the identified mock (``--overlay``) run it on the runner; None (said) for a bag that
    names none of the paper's experiments."""
    recorded = recorded_run(bag)
    if recorded is None or recorded.experiment not in EXPERIMENT_NAMES:
        what = "no experiment" if recorded is None else f"'{recorded.experiment}'"
        print(f"{bag}: its metadata names {what}; its experiment's metrics are not compared")
        return None
    folder = args.config or default_config_dir()
    items = override_items(args)
    default = setup_of_run(folder, recorded, items)
    identified = setup_of_run(folder, recorded, items, args.overlay)
    print(f"{bag}: {recorded.experiment} / {recorded.controller or 'osc'} "
          f"{recorded.start_pose}".rstrip() + ", run on the default and the identified mock")
    result = MetricsComparison(
        str(bag), recorded.experiment, recorded.controller, recorded.start_pose,
        {"recorded": score_bag(default, recorded.experiment, bag)[1],
         "default mock": rerun(default, recorded),
         "identified mock": rerun(identified, recorded)})
    print(result.table())
    return result


def run(args: argparse.Namespace) -> int:
    """``musculo identify``."""
    return run_report(args) if args.report else run_fit(args)
