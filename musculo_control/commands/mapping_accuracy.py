"""``musculo mapping-accuracy``: a learned mapping against the truth the mock arm knows, and how
its error falls with the recording's length (see :mod:`musculo_control.sim.mapping_errors`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from musculo_control.commands.checks import writable_dir
from musculo_control.model.learned_mapping import load_mapping
from musculo_control.model.mapping_fit import fit_mapping
from musculo_control.model.mapping_recording import load_recording
from musculo_control.model.robot import load_robot
from musculo_control.paths import default_config_dir
from musculo_control.sim.mapping_errors import errors, geometry_errors, mock_truth, prefix
from musculo_control.sim.mapping_recorder import load_mapping_config


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mapping-accuracy",
                       help="score a learned mapping against the mock arm's own tendons",
                       description="At the true poses of a held-out mock recording: RMS and "
                                   "max error of every muscle length and moment arm, learned "
                                   "mapping and via-point geometry, against MuJoCo's tendon "
                                   "lengths and Jacobian. With --train, also fits on growing "
                                   "prefixes of that recording and plots the errors against "
                                   "its length.")
    p.add_argument("model", type=Path, help="model file of learn-mapping")
    p.add_argument("--held-out", type=Path, required=True,
                   help="a record-mapping recording not used for the fit (another seed)")
    p.add_argument("--train", type=Path, default=None,
                   help="the training recording: fit on its first 1/8, 1/4, 1/2, all")
    p.add_argument("--config", type=Path, default=None, help="config folder (default: shipped)")
    p.add_argument("--stride", type=int, default=5, help="score every this many held-out samples")
    p.add_argument("--out", type=Path, default=Path("out/mapping_accuracy"),
                   help="folder for accuracy.json and learning_curve.png")
    p.set_defaults(func=run)


def _mm(x: float) -> str:
    return f"{1e3 * x:.3f}"


def run(args: argparse.Namespace) -> int:
    writable_dir(args.out, "--out")
    folder = args.config or default_config_dir()
    robot = load_robot(folder)  # the description's geometry, what the controller otherwise uses
    mapping = load_mapping(args.model)
    held = load_recording(args.held_out)
    truth = mock_truth(robot, held, mapping, stride=args.stride)
    learned = errors(truth, mapping.evaluate)
    described = geometry_errors(truth, robot.geometry)
    doc: dict[str, Any] = {"model": str(args.model), "held_out": str(args.held_out),
                           "excluded_outside_box": truth.excluded,
                           "muscles": list(robot.muscle_names),
                           "joints": list(robot.arm.joint_names),
                           "learned": learned, "via_point": described}
    print(f"{truth.q_rad.shape[0]} held-out poses ({truth.excluded} outside the recorded box "
          f"not scored); errors against the mock's MuJoCo tendons:")
    print(f"{'muscle':<24} {'l rms/max [mm]':>18} {'arm rms/max [mm/rad]':>22}   via-point "
          f"l, arm")
    for i, name in enumerate(robot.muscle_names):
        arm_rms = np.sqrt(np.mean(np.square(learned["moment_arm_rms_by_joint_m"][i])))
        arm_max = max(learned["moment_arm_max_by_joint_m"][i])
        v_rms = np.sqrt(np.mean(np.square(described["moment_arm_rms_by_joint_m"][i])))
        print(f"{name:<24} {_mm(learned['per_muscle_length_rms_m'][i]):>8} / "
              f"{_mm(learned['per_muscle_length_max_m'][i]):<8} {_mm(arm_rms):>9} / "
              f"{_mm(arm_max):<10}   {_mm(described['per_muscle_length_rms_m'][i])}, "
              f"{_mm(v_rms)}")
    for label, e in (("learned", learned), ("via-point", described)):
        print(f"{label}: l rms {_mm(e['length_rms_m'])} mm, max {_mm(e['length_max_m'])} mm; "
              f"moment arms rms {_mm(e['moment_arm_rms_m'])} mm/rad, max "
              f"{_mm(e['moment_arm_max_m'])} mm/rad")
    if args.train is not None:
        doc["learning_curve"] = learning_curve(args, robot, folder, held)
    (args.out / "accuracy.json").write_text(json.dumps(doc, indent=1))
    print(f"wrote {args.out / 'accuracy.json'}")
    return 0


def learning_curve(args: argparse.Namespace, robot: Any, folder: Path,
                   held: Any) -> list[dict[str, Any]]:
    """Fit on growing prefixes of the training recording; plot the held-out errors."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = load_recording(args.train)
    config = load_mapping_config(folder).fit
    total = float(train.stamp_s[-1] - train.stamp_s[0])
    rows = []
    described = None
    for fraction in (0.125, 0.25, 0.5, 1.0):
        part = prefix(train, fraction * total)
        mapping, _ = fit_mapping(part, config, joint_names=robot.arm.joint_names,
                                 muscle_names=robot.muscle_names)
        # score every length on the poses inside the full recording's box, the same set
        truth = mock_truth(robot, held, None, stride=args.stride)
        inside = np.all((truth.q_rad >= train.q_rad.min(axis=0))
                        & (truth.q_rad <= train.q_rad.max(axis=0)), axis=1)
        sub = truth._replace(q_rad=truth.q_rad[inside], length_m=truth.length_m[inside],
                             jacobian=truth.jacobian[inside])
        # a shorter recording has a smaller box: evaluated at its nearest point
        clamp = (lambda m: lambda q: m.evaluate(np.clip(q, m.lower_rad, m.upper_rad)))(mapping)
        e = errors(sub, clamp)
        described = described or geometry_errors(sub, robot.geometry)
        rows.append({"duration_s": fraction * total, "samples": part.n_samples,
                     "length_rms_m": e["length_rms_m"], "length_max_m": e["length_max_m"],
                     "moment_arm_rms_m": e["moment_arm_rms_m"],
                     "moment_arm_max_m": e["moment_arm_max_m"]})
        print(f"  first {fraction * total:5.0f} s ({part.n_samples} samples): l rms "
              f"{_mm(e['length_rms_m'])} mm, moment arms rms {_mm(e['moment_arm_rms_m'])} "
              f"mm/rad, max {_mm(e['moment_arm_max_m'])} mm/rad")
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    t = [r["duration_s"] for r in rows]
    for ax, key, label in ((axes[0], "length", "muscle length l [mm]"),
                           (axes[1], "moment_arm", "moment arm -Jm [mm/rad]")):
        ax.loglog(t, [1e3 * r[f"{key}_rms_m"] for r in rows], "o-", label="learned, RMS")
        ax.loglog(t, [1e3 * r[f"{key}_max_m"] for r in rows], "s--", label="learned, max")
        if described is not None:
            ax.axhline(1e3 * described[f"{key}_rms_m"], color="grey", ls=":",
                       label="via-point model, RMS")
        ax.set_xlabel("recording length [s]")
        ax.set_ylabel(f"error of {label}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Learned joint-muscle mapping vs the mock arm's tendons (held-out poses)",
                 fontsize=10)
    fig.tight_layout()
    png = args.out / "learning_curve.png"
    fig.savefig(png, dpi=110)
    plt.close(fig)
    print(f"wrote {png}")
    return rows
