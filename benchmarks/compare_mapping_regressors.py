"""Why a polynomial and not a network: the learned mapping's function class, measured.

Fits the same recording two ways and scores both on held-out poses against the mock arm's
MuJoCo tendons (lengths and moment arms), with the time of one l(q) + Jm(q) evaluation:

- the project's per-muscle Chebyshev polynomials (``musculo learn-mapping``);
- a small fully connected network as in the paper's cited work (7 -> 64 -> 64 -> 18, tanh),
  trained with PyTorch's Adam on the same scaled inputs; its Jm is the network's exact
  derivative, evaluated in NumPy (closed form, no autograd per call).

PyTorch is not a dependency of the project: ``pip install torch==2.13.0`` to run this.

    python benchmarks/compare_mapping_regressors.py TRAIN HELD_OUT [--epochs N] [--config DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from musculo_control.model.mapping_fit import fit_mapping
from musculo_control.model.mapping_recording import load_recording
from musculo_control.model.robot import load_robot
from musculo_control.paths import default_config_dir
from musculo_control.sim.mapping_errors import errors, mock_truth
from musculo_control.sim.mapping_recorder import load_mapping_config


def p50_us(fn, q: np.ndarray, count: int = 3000) -> float:
    times = []
    for i in range(count):
        t0 = time.perf_counter()
        fn(q[i % len(q)])
        times.append(time.perf_counter() - t0)
    return 1e6 * float(np.median(times))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train", type=Path)
    parser.add_argument("held_out", type=Path)
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--epochs", type=int, default=3000)
    parser.add_argument("--hidden", type=int, default=64)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed (pip install torch==2.13.0); nothing to compare")
        return 0
    torch.set_num_threads(1)
    torch.manual_seed(0)
    robot = load_robot(args.config)
    train, held = load_recording(args.train), load_recording(args.held_out)
    t0 = time.perf_counter()
    mapping, _ = fit_mapping(train, load_mapping_config(args.config).fit,
                             joint_names=robot.arm.joint_names, muscle_names=robot.muscle_names)
    poly_fit_s = time.perf_counter() - t0
    truth = mock_truth(robot, held, mapping, stride=5)

    lo, hi = mapping.lower_rad, mapping.upper_rad
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    x = torch.tensor((train.q_rad - centre) / half)
    y_mean, y_std = train.length_m.mean(axis=0), train.length_m.std(axis=0)
    y = torch.tensor((train.length_m - y_mean) / y_std)
    n, m, h = x.shape[1], y.shape[1], args.hidden
    net = torch.nn.Sequential(torch.nn.Linear(n, h), torch.nn.Tanh(), torch.nn.Linear(h, h),
                              torch.nn.Tanh(), torch.nn.Linear(h, m)).double()
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.epochs)
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        opt.zero_grad()
        loss = torch.mean((net(x) - y) ** 2)
        loss.backward()
        opt.step()
        sched.step()
        if epoch % 500 == 0:
            rms_mm = float(loss.detach().sqrt()) * float(y_std.mean()) * 1e3
            print(f"  epoch {epoch}: train rms {rms_mm:.3f} mm", file=sys.stderr, flush=True)
    net_fit_s = time.perf_counter() - t0
    w1, b1, w2, b2, w3, b3 = (p.detach().numpy().copy() for p in net.parameters())

    def network(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = (q - centre) / half
        a1 = np.tanh(w1 @ z + b1)
        a2 = np.tanh(w2 @ a1 + b2)
        out = w3 @ a2 + b3
        jac = (w3 * (1.0 - a2**2)) @ ((w2 * (1.0 - a1**2)) @ (w1 / half))
        return y_mean + y_std * out, y_std[:, None] * jac

    rows = [("polynomial (learn-mapping)", errors(truth, mapping.evaluate),
             p50_us(mapping.evaluate, truth.q_rad), poly_fit_s,
             int(np.count_nonzero(mapping.coefficients))),
            (f"network {n}-{h}-{h}-{m} tanh (PyTorch Adam, {args.epochs} epochs)",
             errors(truth, network), p50_us(network, truth.q_rad), net_fit_s,
             sum(p.numel() for p in net.parameters()))]
    print(f"held-out poses: {truth.q_rad.shape[0]}; training samples {train.n_samples}")
    print("| function class | l RMS / max [mm] | moment arm RMS / max [mm/rad] | "
          "l + Jm p50 [us] | fit [s] | parameters |")
    print("|---|---|---|---|---|---|")
    for name, e, us, fit_s, params in rows:
        print(f"| {name} | {1e3 * e['length_rms_m']:.3f} / {1e3 * e['length_max_m']:.2f} | "
              f"{1e3 * e['moment_arm_rms_m']:.3f} / {1e3 * e['moment_arm_max_m']:.2f} | "
              f"{us:.1f} | {fit_s:.0f} | {params} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
