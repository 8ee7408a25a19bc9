"""Pinocchio against MuJoCo as the rigid-body backend: time per call and agreement.

On the synthetic chain arms (model/synthetic.py, 7 to 40 joints), which both libraries read from
the same URDF, each backend's (model/rigid_body.py) calls are timed with the same poses and
speeds: the mass matrix with its inverse, the bias terms (gravity, Coriolis), a frame Jacobian,
and the whole dynamics pass of the 20 Hz snapshot. Their results are compared at the same time
(largest differences of M, g, C qd and the Jacobian). With ``--mjcf FILE`` the MuJoCo backend is
also timed on that model (e.g. MyoSuite's MyoArm, which Pinocchio cannot read), in its reduced
coordinates, with the hand frame ``--frame``.

    python benchmarks/bench_rigid_body.py [--count N] [--mjcf FILE --frame NAME] [--out DIR]

doc/mjcf_models.md quotes the figures and argues the choice of backend with them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pinocchio as pin

from musculo_control.model.joint_coupling import JointCoupling
from musculo_control.model.mujoco_body import MujocoBody
from musculo_control.model.mujoco_tendons import compile_spec, mjcf_spec
from musculo_control.model.rigid_body import PinocchioBody
from musculo_control.model.synthetic import write_synthetic_arm
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

#: (joints, muscles) of the synthetic arms timed
ARMS = ((7, 30), (14, 60), (28, 120), (40, 300))
POSES = 256


def _calls(body: Any, frame: Any, poses: np.ndarray, speeds: np.ndarray) -> dict[str, Any]:
    """The timed calls of one backend, each taking the call index."""
    ws = body.workspace()
    k = len(poses)
    return {
        "dynamics pass": lambda i: body.dynamics(ws, poses[i % k], speeds[i % k], frame),
        "gravity torque": lambda i: body.gravity_torque(ws, poses[i % k]),
        "frame Jacobian": lambda i: body.jacobians(ws, poses[i % k], (frame,)),
        "frame twist": lambda i: body.twist(ws, poses[i % k], speeds[i % k], frame),
    }


def _agreement(a: Any, b: Any, fa: Any, fb: Any, poses: np.ndarray,
               speeds: np.ndarray) -> dict[str, float]:
    """Largest differences between two backends' dynamics passes, relative to the largest
    entry of each quantity."""
    wa, wb = a.workspace(), b.workspace()
    worst = {"M": 0.0, "g": 0.0, "C qd": 0.0, "J": 0.0}
    for q, qd in zip(poses[:32], speeds[:32]):
        ta, tb = a.dynamics(wa, q, qd, fa), b.dynamics(wb, q, qd, fb)
        for key, x, y in (("M", ta.mass_matrix, tb.mass_matrix),
                          ("g", ta.gravity_torque, tb.gravity_torque),
                          ("C qd", ta.coriolis_torque, tb.coriolis_torque),
                          ("J", ta.jacobian, tb.jacobian)):
            scale = max(float(np.abs(y).max()), 1e-12)
            worst[key] = max(worst[key], float(np.abs(x - y).max()) / scale)
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=positive_int, default=None,
                        help="timed calls per case (default: bench.yaml calls)")
    parser.add_argument("--mjcf", type=Path, default=None, help="also time this MJCF (MuJoCo)")
    parser.add_argument("--frame", default=None, help="its hand frame (body, site or joint)")
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    args = parser.parse_args()
    bench = load_bench_config(default_config_dir())
    count = args.count or bench.calls
    machine = MachineLoad(bench.quiet_load_average)
    print(f"load average (1 min) at the start: {machine.start}")
    rng = np.random.default_rng(bench.seed)
    rows: list[dict[str, Any]] = []
    agreement: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, m in ARMS:
            folder = write_synthetic_arm(Path(tmp) / f"arm{n}", n, m)
            urdf = folder / "arm.urdf"
            pbody = PinocchioBody(pin.buildModelFromUrdf(str(urdf)))
            spec = mujoco.MjSpec.from_file(str(urdf))
            spec.compiler.fusestatic = False
            model = compile_spec(spec, urdf)
            mbody = MujocoBody(model, JointCoupling(model, str(urdf)))
            gravity = np.array([0.0, 0.0, -9.81])
            pbody.set_gravity(gravity)
            mbody.set_gravity(gravity)
            hand = pbody.body_names()[-1]
            pframe = pbody.find_frame(hand, np.zeros(3))
            mframe = mbody.find_frame(hand, np.zeros(3))
            lo, hi = pbody.lower_rad, pbody.upper_rad
            poses = lo + (hi - lo) * rng.random((POSES, n))
            speeds = rng.uniform(-2.0, 2.0, (POSES, n))
            agreement[f"{n} joints"] = _agreement(mbody, pbody, mframe, pframe, poses, speeds)
            for lib, body, frame in (("Pinocchio", pbody, pframe), ("MuJoCo", mbody, mframe)):
                for case, fn in _calls(body, frame, poses, speeds).items():
                    stats = summary_ms(time_calls(fn, count))
                    rows.append({"model": f"synthetic {n} joints", "library": lib,
                                 "case": case, **stats})
                    print(f"{n:>3} joints {lib:<10} {case:<16} p50 {stats['p50_ms']:.4f} ms  "
                          f"p99 {stats['p99_ms']:.4f} ms")
    if args.mjcf is not None:
        model = compile_spec(mjcf_spec(args.mjcf), args.mjcf)
        body = MujocoBody(model, JointCoupling(model, str(args.mjcf)))
        frame = body.find_frame(args.frame or model.body(model.nbody - 1).name, np.zeros(3))
        if frame is None:
            raise SystemExit(f"--frame {args.frame}: {body.frame_names()}")
        lo, hi = body.lower_rad, body.upper_rad
        poses = lo + (hi - lo) * rng.random((POSES, body.coupling.n))
        speeds = rng.uniform(-1.0, 1.0, (POSES, body.coupling.n))
        label = f"{args.mjcf.name} ({model.nv} dofs, {body.coupling.n} independent)"
        for case, fn in _calls(body, frame, poses, speeds).items():
            stats = summary_ms(time_calls(fn, count))
            rows.append({"model": label, "library": "MuJoCo", "case": case, **stats})
            print(f"{label} {case:<16} p50 {stats['p50_ms']:.4f} ms  p99 {stats['p99_ms']:.4f} ms")
    machine.finish()
    notes = [f"{name}: MuJoCo against Pinocchio, largest relative difference " +
             ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
             for name, worst in agreement.items()]
    notes.append(f"{count} calls per case; {machine.describe()}")
    for note in notes:
        print(note)
    text = "\n".join(["# Rigid-body backends: Pinocchio and MuJoCo", "", *markdown_table(rows),
                      "", *[f"- {n}" for n in notes], ""])
    paths = write_reports(args.out, "bench_rigid_body", rows, text,
                          {"rows": rows, "agreement": agreement, "machine": machine.as_dict()})
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
