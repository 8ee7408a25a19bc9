"""``musculo operating-point``: the activation an arm needs to hold still
(:mod:`musculo_control.sim.holding_effort`, solved by :mod:`musculo_control.control.static_hold`),
as a table, JSON and a plot.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_file
from musculo_control.control.controller_config import load_controller_config
from musculo_control.model.robot import load_robot
from musculo_control.paths import default_config_dir
from musculo_control.sim.holding_effort import operating_point_report


def print_report(rep: dict[str, Any]) -> None:
    """The holds, the elbow sweep and the checks as tables on standard output."""
    print(f"config: {rep['config']}")
    print(f"static hold (tau_ref = g), exact BVLS; k = {rep['activation_weight_k']}, "
          f"r = {rep['nullspace_weight_r']}")
    print(f"{'pose':<14}{'elbow h':>8}{'|g|':>7}{'|a| eq10':>10}{'res/|g|':>9}"
          f"{'|a| eq11':>10}{'|tau_n|':>9}{'max f':>8}")
    print(f"{'':<14}{'[m]':>8}{'[Nm]':>7}{'':>10}{'[%]':>9}{'':>10}{'[Nm]':>9}{'[N]':>8}")
    for p in rep["poses"]:
        e10, e11 = p["eq10"], p["eq11"]
        print(f"{p['name']:<14}{p['elbow_z_m']:>8.3f}{p['gravity_norm_nm']:>7.2f}"
              f"{e10['activation_norm']:>10.2f}{100 * e10['residual_fraction']:>9.1f}"
              f"{e11['activation_norm']:>10.2f}{e11['tau_null_nm']:>9.2f}"
              f"{e10['max_tension_n']:>8.0f}")
    print("(elbow h: height of robot.yaml poses.elbow_frame against gravity)")
    sw = rep["sweep"]
    if sw is None:
        print(f"\n{rep['note']}")
        return
    hand = " ".join(f"{v:+.3f}" for v in sw["hand_m"])
    print(f"\nelbow sweep from '{sw['from_pose']}', hand fixed at [{hand}] m")
    # the joints the sweep moves, by name (robot.yaml poses.ik_joints)
    names = rep["sweep_joints"]
    index = [rep["joint_names"].index(n) for n in names]
    widths = [max(8, len(n) + 1) for n in names]
    print(f"{'elbow h':>8}{'drop':>7}" + "".join(f"{n:>{w}}" for n, w in zip(names, widths))
          + f"{'|g|':>7}{'|a| eq10':>10}{'res/|g|':>9}{'|a| eq11':>10}{'res/|g|':>9}{'|tau_n|':>9}"
          + f"{'push':>8}")
    print(f"{'[m]':>8}{'[m]':>7}" + "".join(f"{'[rad]':>{w}}" for w in widths)
          + f"{'[Nm]':>7}{'':>10}{'[%]':>9}{'':>10}{'[%]':>9}{'[Nm]':>9}{'[N]':>8}")
    for p in sw["points"]:
        q = p["q_rad"]
        print(f"{p['elbow_z_m']:>8.3f}{p['drop_m']:>7.3f}"
              + "".join(f"{q[j]:>{w}.2f}" for j, w in zip(index, widths))
              + f"{p['gravity_norm_nm']:>7.2f}{p['eq10_activation_norm']:>10.2f}"
              f"{100 * p['eq10_residual_fraction']:>9.1f}{p['eq11_activation_norm']:>10.2f}"
              f"{100 * p['eq11_residual_fraction']:>9.1f}{p['eq11_tau_null_nm']:>9.2f}"
              + (f"{p['eq11_push_n']:>+8.2f}" if p["eq11_push_n"] is not None else f"{'-':>8}"))
    print("(push: eq. 11's net force on the elbow along its self-motion, + raises it)")
    c = rep["checks"]
    if len(sw["points"]) < 2:
        print("  (the elbow cannot move with the hand held: no sweep)")
    lo, hi = c["target_band"]
    print("\nchecks:")
    print(f"  ||a|| eq10 at '{c['pose']}' = {c['pose_activation_norm']:.2f}, "
          f"in [{lo:g}, {hi:g}]: {_yes(c['pose_in_band'])}")
    print(f"  ||a|| eq10 falls monotonically as the elbow is lowered: "
          f"{_yes(c['curve_falls_monotonically'])}")
    print(f"  ... to at most {c['target_fall_ratio']:g} of its start: "
          f"{_yes(c['falls_far_enough'])} (end / start = {c['end_over_start']:.2f})")
    print(f"  ||a|| eq11 <= eq10 along the sweep: {_yes(c['eq11_at_most_eq10'])}")
    print(f"  largest eq10 torque residual: {100 * c['max_eq10_residual_fraction']:.1f} % of |g|")
    print(f"  eq. 11 lowers the elbow down to home's height (experiment C): "
          f"{_yes(c['eq11_lowers_elbow_to_home'])}")
    rest = rep["home_rest"]
    print(f"  home pose at rest under eq. 11 (experiment A): {_yes(c['home_at_rest'])}")
    if rest is not None:
        print(f"    push {rest['push_lower_n']:+.2f} N one step lower, {rest['push_n']:+.2f} N "
              f"at home, {rest['push_higher_n']:+.2f} N one step higher "
              f"({100 * rest['step_m']:g} cm of elbow height, the hand held)")


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def write_plot(rep: dict[str, Any], path: Path) -> None:
    """||a|| (eq. 10, 11) and the torque residual against elbow height, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = rep["sweep"]["points"]
    z = [p["elbow_z_m"] for p in pts]
    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    ax1.plot(z, [p["eq10_activation_norm"] for p in pts], "o-", label="eq. 10")
    ax1.plot(z, [p["eq11_activation_norm"] for p in pts], "s--", label="eq. 11")
    lo, hi = rep["checks"]["target_band"]
    if z:  # the target band applies at the sweep's start pose only
        half = 0.5 * rep["sweep"]["step_m"]
        ax1.fill_between([z[0] - half, z[0] + half], lo, hi, color="0.85",
                         label=f"target at '{rep['checks']['pose']}'")
    ax1.set_ylabel("||a|| to hold still")
    ax1.set_title(f"static hold, hand fixed, elbow lowered from '{rep['sweep']['from_pose']}' "
                  f"(k = {rep['activation_weight_k']}, r = {rep['nullspace_weight_r']})",
                  fontsize=9)
    ax1.legend(fontsize=8)
    ax1.grid(True, alpha=0.3)
    ax2.plot(z, [100 * p["eq10_residual_fraction"] for p in pts], "o-", label="eq. 10 residual")
    ax2.plot(z, [100 * p["eq11_residual_fraction"] for p in pts], "s--",
             label="eq. 11 residual")
    ax2.set_ylabel("torque residual [% of |g|]")
    ax2.set_xlabel("elbow height [m] (against gravity)")
    ax2.grid(True, alpha=0.3)
    ax3 = ax2.twinx()
    ax3.plot(z, [p["gravity_norm_nm"] for p in pts], ":", color="k", label="|g|")
    ax3.set_ylabel("|g| [Nm]")
    lines = ax2.get_legend_handles_labels()
    lines3 = ax3.get_legend_handles_labels()
    ax2.legend(lines[0] + lines3[0], lines[1] + lines3[1], fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- command -----------------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    """Register ``musculo operating-point``."""
    p = sub.add_parser(
        "operating-point", help="activation needed to hold the experiment poses",
        description="Static hold (tau_ref = g) with paper eq. 10 and eq. 11 solved exactly "
                    "(BVLS) at the home pose and the named poses, and along a sweep that lowers "
                    "the elbow with the hand fixed. Checks the calibration targets of "
                    "poses.operating_point in robot.yaml.")
    p.add_argument("--config", type=Path, default=None, help="config folder (default: shipped arm)")
    p.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    p.add_argument("--plot", type=Path, default=None, help="also write the curve as a PNG here")
    p.add_argument("--check", action="store_true",
                   help="exit with status 1 when a calibration check fails")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``musculo operating-point``: report, and with ``--check`` exit non-zero on a failed check."""
    writable_file(args.json, "--json")
    writable_file(args.plot, "--plot")
    config_dir = args.config or default_config_dir()
    robot = load_robot(config_dir)
    controller = load_controller_config(config_dir)
    rep = operating_point_report(robot, controller.task, (controller.qp.k, controller.qp.r))
    print_report(rep)
    if args.json:
        args.json.write_text(json.dumps(rep, indent=2) + "\n")
        print(f"wrote {args.json}")
    if args.plot and rep["sweep"] is not None:
        write_plot(rep, args.plot)
        print(f"wrote {args.plot}")
    c = rep["checks"]
    if c is None:
        return 1 if args.check else 0
    ok = all(c[key] for key in ("pose_in_band", "curve_falls_monotonically", "falls_far_enough",
                                "eq11_at_most_eq10", "eq11_lowers_elbow_to_home",
                                "home_at_rest"))
    return 1 if args.check and not ok else 0
