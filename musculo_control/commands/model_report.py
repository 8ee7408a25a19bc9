"""``musculo model-report``: joints, hand position, gravity torque and muscle geometry at q."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from musculo_control.commands.checks import writable_file
from musculo_control.errors import InputError
from musculo_control.model.robot import Robot, load_robot
from musculo_control.paths import default_config_dir


def add_parser(sub: Any) -> None:
    p = sub.add_parser("model-report", help="print the robot model at a pose",
                       description="Joints with limits, hand position, gravity torque and per "
                                   "muscle its length, l_min, l_max, peak force f1, moment arms "
                                   "(-Jm row) at q and their extremes over the joint range.")
    p.add_argument("--config", type=Path, default=None, help="config folder (default: shipped arm)")
    p.add_argument("--q", default=None,
                   help="comma-separated joint angles [rad] inside the joint limits (default: "
                        "home_pose_rad); negative values may follow directly: --q -0.43,0.48,...")
    p.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    p.set_defaults(func=run)


def parse_q(text: str | None, robot: Robot) -> np.ndarray:
    """Joint vector from '--q a,b,c' or the config's home pose."""
    if text is None:
        return robot.home_pose_rad.copy()
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError as exc:
        raise InputError("--q", "comma-separated numbers", text) from exc
    q = robot.arm.check_q(values, "--q")
    lo, hi = robot.arm.lower_rad, robot.arm.upper_rad
    outside = [f"{name} {v:+.3f} not in [{a:+.3f}, {b:+.3f}]"
               for name, v, a, b in zip(robot.arm.joint_names, q, lo, hi) if not a <= v <= b]
    if outside:
        raise InputError("--q", f"angles inside the joint limits of the {robot.arm.kind} [rad]",
                         "; ".join(outside))
    return q


def dynamics_note(robot: Robot) -> str:
    """Which library computes the rigid bodies, and in which coordinates (MJCF robots)."""
    arm = robot.arm
    if arm.coupling is None:
        return ""
    coupled = len(arm.coupling.coupled)
    how = (f"{coupled} coupled joints follow the {arm.n_joints} independent ones (reduced "
           f"coordinates, doc/mjcf_models.md)" if coupled else "no coupled joints")
    return f"rigid bodies computed by MuJoCo on {arm.description_path.name}: {how}"


def model_report(robot: Robot, q: np.ndarray) -> dict[str, Any]:
    """The report as a JSON-ready dict (keys documented in doc/cli.md)."""
    kin = robot.geometry.kinematics_at(q)
    hand = robot.arm.hand_pose(q)[0]
    g = robot.arm.body.gravity_torque(robot.new_data(), q)
    ranges = robot.moment_arm_range()
    muscles = []
    for i, name in enumerate(robot.muscle_names):
        muscles.append({
            "name": name,
            "actuator_id": robot.actuator_ids[i],
            "active": bool(robot.controlled[i]),
            "length_m": float(kin.length_m[i]),
            "lmin_m": float(robot.l_min_m[i]),
            "lmax_m": float(robot.l_max_m[i]),
            "length_range_source": robot.range_source[i],
            "moment_arms_m": [float(v) for v in -kin.jacobian[i]],
            "moment_arm_range_m": [[float(lo), float(hi)]
                                   for lo, hi in zip(ranges.min_m[i], ranges.max_m[i])],
            "f1_n": float(robot.f1_n[i]),
            "f1_source": robot.f1_source[i],
        })
    return {
        "config": str(robot.config_dir),
        "description": str(robot.arm.description_path),
        "read_note": dynamics_note(robot),
        "dynamics": robot.arm.body.library,
        "couplings": robot.arm.coupling.describe() if robot.arm.coupling is not None else [],
        "limit_notes": list(getattr(robot.arm.body, "limit_notes", [])),
        "muscle_geometry": robot.geometry.source,
        "base_frame": robot.arm.base_frame,
        "q_rad": [float(v) for v in q],
        "joints": [
            {"name": n, "lower_rad": float(lo), "upper_rad": float(hi)}
            for n, lo, hi in zip(robot.arm.joint_names, robot.arm.lower_rad, robot.arm.upper_rad)
        ],
        "hand_position_m": [float(v) for v in hand],
        "gravity_torque_Nm": [float(v) for v in g],
        "muscles": muscles,
    }


def print_report(rep: dict[str, Any]) -> None:
    print(f"config: {rep['config']}")
    print(f"description: {rep['description']}; muscle geometry: {rep['muscle_geometry']}; "
          f"base frame: {rep['base_frame']}")
    if rep["read_note"]:
        print(f"note: {rep['read_note']}")
    for line in rep["couplings"]:
        print(f"  coupled: {line}")
    for line in rep["limit_notes"]:
        print(f"  limit: {line}")
    print("joints (limits in rad):")
    for j, q in zip(rep["joints"], rep["q_rad"]):
        print(f"  {j['name']:<12} [{j['lower_rad']:+.2f}, {j['upper_rad']:+.2f}]  q = {q:+.3f}")
    print("hand position [m]:   " + " ".join(f"{v:+.3f}" for v in rep["hand_position_m"]))
    print("gravity torque [Nm]: " + " ".join(f"{v:+.2f}" for v in rep["gravity_torque_Nm"]))
    widths = [max(8, len(j["name"])) for j in rep["joints"]]
    names = " ".join(f"{j['name']:>{w}}" for j, w in zip(rep["joints"], widths))
    print("moment arms [cm] (-Jm row) per joint; lengths [m]; peak force f1 [N]")
    print(f"{'muscle':<24}{'ctrl':>5}{'l':>8}{'l_min':>8}{'l_max':>8}{'f1':>8}  {names}")
    for m in rep["muscles"]:
        arms = " ".join(f"{100 * v:>{w}.2f}" for v, w in zip(m["moment_arms_m"], widths))
        print(f"{m['name']:<24}{'yes' if m['active'] else 'no':>5}{m['length_m']:>8.3f}"
              f"{m['lmin_m']:>8.3f}{m['lmax_m']:>8.3f}{m['f1_n']:>8.0f}  {arms}")
    sources = sorted({m["f1_source"] for m in rep["muscles"]})
    print(f"f1 from: {', '.join(sources)}")
    print("moment arms over the joint range [cm], min..max (*: changes sign):")
    for m in rep["muscles"]:
        cells = []
        for lo, hi in m["moment_arm_range_m"]:
            flips = lo < -1e-4 < 1e-4 < hi
            cells.append(f"{100 * lo:+6.2f}..{100 * hi:+6.2f}{'*' if flips else ' '}")
        print(f"  {m['name']:<22}" + "  ".join(cells))


def run(args: argparse.Namespace) -> int:
    writable_file(args.json, "--json")
    robot = load_robot(args.config or default_config_dir())
    rep = model_report(robot, parse_q(args.q, robot))
    print_report(rep)
    if args.json:
        args.json.write_text(json.dumps(rep, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
