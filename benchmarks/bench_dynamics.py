"""Benchmark of the 20 Hz dynamics snapshot and of l(q) + Jm(q) for a robot (default: 18 muscles).

Prints p50 / p99 / max per call and, measured in the same run, the same muscle Jacobian computed
the way a straightforward user would (Pinocchio: one frame Jacobian per via-point; an MJCF
robot: MuJoCo's whole position stage), with the ratio, and the load average before and after.
Target (bench.yaml, issue 11): snapshot p99 <= 0.2 ms, judged only when the machine was quiet.

    python benchmarks/bench_dynamics.py [--config DIR] [--count N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

from musculo_control.config.parser import load
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.model.robot import Robot, load_robot
from musculo_control.model.task import TaskConfig
from musculo_control.paths import default_config_dir
from musculo_control.tick_benchmark.config import load_bench_config
from musculo_control.tick_benchmark.measure import (
    MachineLoad,
    markdown_table,
    positive_int,
    summary_ms,
    time_calls,
    write_reports,
)


class PerPointJacobian:
    """Baseline: each via-point as a Pinocchio frame, one getFrameJacobian call per point."""

    def __init__(self, robot: Robot) -> None:
        self.model = robot.arm.model.copy()
        self.paths = []
        for spec in robot.muscles_config.muscles:
            ids = []
            for k, vp in enumerate(spec.path):
                joint, placement = robot.arm.link_placement(vp.link)
                local = pin.SE3(np.eye(3), placement.act(np.array(vp.point_m)))
                ids.append(self.model.addFrame(
                    pin.Frame(f"{spec.name}_{k}", joint, 0, local, pin.FrameType.OP_FRAME)))
            self.paths.append(ids)
        self.data = self.model.createData()

    def __call__(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pin.computeJointJacobians(self.model, self.data, q)
        pin.updateFramePlacements(self.model, self.data)
        lengths = np.zeros(len(self.paths))
        jm = np.zeros((len(self.paths), self.model.nv))
        for i, ids in enumerate(self.paths):
            for a, b in zip(ids[:-1], ids[1:]):
                d = self.data.oMf[b].translation - self.data.oMf[a].translation
                n = np.linalg.norm(d)
                ja = pin.getFrameJacobian(self.model, self.data, a, pin.LOCAL_WORLD_ALIGNED)[:3]
                jb = pin.getFrameJacobian(self.model, self.data, b, pin.LOCAL_WORLD_ALIGNED)[:3]
                lengths[i] += n
                jm[i] += (d / n) @ (jb - ja)
        return lengths, jm


class FullPositionPass:
    """Baseline of an MJCF robot: MuJoCo's whole position stage (mj_fwdPosition: also inertia,
    collision, constraints) per call, where the tendon backend runs only the three stages it
    needs."""

    def __init__(self, robot: Robot) -> None:
        import mujoco

        self.mujoco = mujoco
        self.geo = robot.geometry
        self.data = mujoco.MjData(self.geo.model)  # type: ignore[attr-defined]

    def __call__(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        from musculo_control.model.mujoco_tendons import tendon_jacobian

        geo, d = self.geo, self.data
        d.qpos[geo.qpos_adr] = q
        self.mujoco.mj_fwdPosition(geo.model, d)
        jac = tendon_jacobian(geo.model, d)[np.ix_(geo.tendon_ids, geo.dof_adr)]
        return np.array(d.ten_length[geo.tendon_ids]), jac


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--count", type=positive_int, default=None,
                        help="timed calls per case (default: bench.yaml calls)")
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    args = parser.parse_args()
    bench = load_bench_config(args.config)
    count = args.count or bench.calls
    target_ms = bench.targets.snapshot_p99_ms
    machine = MachineLoad(bench.quiet_load_average)
    print(f"load average (1 min) at the start: {machine.start}")

    robot = load_robot(args.config)
    task = load(TaskConfig, args.config / "controller.yaml", "task")
    est = DynamicsEstimator(robot, task)
    rng = np.random.default_rng(bench.seed)
    lo, hi = robot.arm.lower_rad, robot.arm.upper_rad
    poses = lo + (hi - lo) * rng.random((256, robot.arm.n_joints))
    qd = np.zeros(robot.arm.n_joints)
    baseline = FullPositionPass(robot) if robot.arm.is_mjcf else PerPointJacobian(robot)
    # the baseline is an oracle too: both must agree before their times mean anything
    l_ref, jm_ref = baseline(poses[0])
    kin = robot.geometry.kinematics_at(poses[0])
    if not (np.allclose(kin.length_m, l_ref) and np.allclose(kin.jacobian, jm_ref, atol=1e-12)):
        raise SystemExit("muscle Jacobian disagrees with the baseline")

    cases = {
        "dynamics snapshot": lambda i: est.compute(poses[i % 256], qd),
        "l(q) + Jm(q)": lambda i: robot.geometry.kinematics_at(poses[i % 256]),
        f"l(q) + Jm(q), {type(baseline).__name__} baseline": lambda i: baseline(poses[i % 256]),
    }
    rows = []
    for name, fn in cases.items():
        stats = summary_ms(time_calls(fn, count))
        rows.append({"case": name, **stats})
        print(f"{name:<36} p50 {stats['p50_ms']:.4f} ms  p99 {stats['p99_ms']:.4f} ms  "
              f"max {stats['max_ms']:.3f} ms")
    machine.finish()
    speedup = rows[2]["p50_ms"] / rows[1]["p50_ms"]
    verdict = machine.verdict(rows[0]["p99_ms"] <= target_ms)
    notes = [f"l + Jm is {speedup:.1f}x faster than the {type(baseline).__name__} baseline (p50, "
             f"same run)",
             f"snapshot p99 {rows[0]['p99_ms']:.4f} ms, target <= {target_ms} ms: {verdict}",
             f"{robot.n_muscles} muscles, {robot.arm.n_joints} joints, {count} calls; "
             f"{machine.describe()}"]
    for note in notes:
        print(note)
    text = "\n".join(["# Dynamics snapshot benchmark", "", *markdown_table(rows), "",
                      *[f"- {n}" for n in notes], ""])
    paths = write_reports(args.out, "bench_dynamics", rows, text,
                          {"rows": rows, "snapshot_p99_ms": rows[0]["p99_ms"],
                           "muscle_speedup_vs_baseline": speedup, "verdict": verdict,
                           "machine": machine.as_dict()})
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
