"""``musculo init``: a runnable config folder from an MJCF, then its validation report.

The folder is written by :func:`musculo_control.sim.scaffold.write_config` (what it proposes,
and why, is printed); the validation loads every file as the commands that use them do
(``musculo simulate``, the fault matrix, the soak, the benchmarks, the node graph), and prints
the model at the home pose and what the user may still want to change.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from musculo_control.commands.model_report import dynamics_note
from musculo_control.hardware.drivers import load_drivers
from musculo_control.safety.config import load_safety_config
from musculo_control.sim.fault_matrix import load_fault_matrix_config
from musculo_control.sim.mapping_recorder import load_mapping_config
from musculo_control.sim.scaffold import write_config
from musculo_control.sim.setup import Overrides, Setup, load_setup
from musculo_control.sim.soak_schedule import load_soak_config
from musculo_control.tick_benchmark.config import load_bench_config


def add_parser(sub: Any) -> None:
    p = sub.add_parser("init", help="write a runnable config folder from an MJCF",
                       description="Reads an MJCF (joints, couplings, muscles and their tendons, "
                                   "keyframes), proposes the task frame, home pose, experiment "
                                   "poses and limits, writes every config file with each key "
                                   "documented, and validates the folder.")
    p.add_argument("mjcf", type=Path, help="the MJCF file (e.g. myo_sim/arm/myoarm.xml)")
    p.add_argument("--out", type=Path, required=True, help="config folder to write")
    p.add_argument("--task-frame", default=None,
                   help="the task frame (a body, site or joint) instead of the proposed one")
    p.add_argument("--home", default=None, metavar="KEYFRAME|qpos0|middle",
                   help="the home pose: a keyframe's, qpos0, or the middle of every joint's "
                        "range (default: the first keyframe, else qpos0, moved 10 %% of the "
                        "range inside the limits; the middle instead when more experiments "
                        "can start from there)")
    p.add_argument("--move-m", type=float, default=0.2,
                   help="length of experiment B's hand move [m] (default 0.2, the paper's)")
    p.add_argument("--force", action="store_true", help="overwrite an existing config folder")
    p.set_defaults(func=run)


def validate(folder: Path) -> Setup:
    """Load every file of ``folder`` as the commands do; the first problem raises."""
    setup = load_setup(folder, Overrides())
    setup.controller_config.task.check_robot(setup.robot, str(folder / "controller.yaml"))
    drivers = load_drivers(setup.robot)
    load_safety_config(folder, drivers.tendons.config)
    load_fault_matrix_config(folder, setup.robot)
    load_soak_config(folder, setup.robot)
    load_mapping_config(folder)
    load_bench_config(folder)
    return setup


def report(setup: Setup) -> list[str]:
    """The validation report: the model at the home pose and the experiments set up."""
    robot = setup.robot
    arm = robot.arm
    q = robot.home_pose_rad
    hand = arm.hand_pose(q)[0]
    g = arm.body.gravity_torque(robot.new_data(), q)
    snap_rows = setup.controller_config.task.rows
    lines = [f"model: {arm.n_joints} joints, {robot.n_muscles} muscles "
             f"(peak force {robot.f1_n.min():.0f}-{robot.f1_n.max():.0f} N, "
             f"{robot.f1_source[0]}); {dynamics_note(robot) or arm.body.library}",
             f"task: rows {list(snap_rows)} of frame '{arm.config.task_frame}'; hand at home "
             f"{np.round(hand, 3).tolist()} m; largest gravity torque at home "
             f"{np.abs(g).max():.2f} Nm ({arm.joint_names[int(np.argmax(np.abs(g)))]})",
             f"experiments set up: {list(setup.experiments.configured())}"]
    for note in getattr(arm.body, "limit_notes", []):
        lines.append(f"limit: {note}")
    return lines


def run(args: argparse.Namespace) -> int:
    scaffold = write_config(args.mjcf, args.out, task_frame=args.task_frame,
                            home=args.home, move_m=args.move_m, overwrite=args.force)
    print(f"wrote {args.out}: {', '.join(scaffold.files)}")
    print("proposed:")
    for line in scaffold.choices:
        print(f"  - {line}")
    for line in scaffold.switched_off:
        print(f"  - switched off: {line}")
    setup = validate(args.out)
    print("validation: every file loads as the commands load it")
    for line in report(setup):
        print(f"  {line}")
    print(next_commands(setup, args.out))
    return 0


def next_commands(setup: Setup, folder: Path) -> str:
    """The commands to run next: the model report and every experiment the folder sets up
    (``musculo simulate`` refuses one it does not)."""
    experiments = setup.experiments.configured()
    commands = [f"musculo model-report --config {folder}"]
    commands += [f"musculo simulate {e} --config {folder}" for e in experiments]
    line = "next: " + "; ".join(commands)
    if not experiments:
        line += ("\n  (no experiment of the paper can be set up on this arm: see 'switched off' "
                 "above; the controller still runs in the node graph, musculo graph --config "
                 f"{folder})")
    return line
