"""``musculo simulate faults`` (the fault matrix) and ``musculo soak``, ROS-free.

``musculo simulate faults [--json FILE] [--out DIR]`` injects every fault of
``reliability.yaml`` ``faults.cases`` into the supervised loop and prints, per fault, whether
it was detected, how fast, the largest command, NaN, and whether the loop recovered; it writes
``faults.json`` and ``faults.md`` under ``--out`` and the JSON also to ``--json``:
``{"faults": [{"name", "detected", "detection_time_ms", "max_command_N", "any_nan",
"recovered", ...}], ...}``.

``musculo simulate faults --graph [--real-time-factor F]`` injects the same faults into the
running node graph instead (:mod:`musculo_control.testing.graph_faults`; needs rclpy): the same
JSON (``"loop": "node graph"``), plus ``faults_runner_and_graph.md``, the runner's matrix and
the graph's side by side. ``--wall-clock [--busy-loops N]``: the graph on the wall clock with
its real-time profile, the machine loaded by N spinning processes (``"loop": "node graph at
wall clock, N busy loops"``).

``musculo soak [--hours H | --duration S] [--json FILE]`` runs the soak of ``reliability.yaml``
``soak`` and reports memory, drift at rest, tick accounting and safety figures.

Both take ``--set safety.KEY=V`` and ``--set reliability.faults.KEY=V`` /
``reliability.soak.KEY=V`` besides the simulation overrides.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_dir, writable_file
from musculo_control.commands.options import add_common, setup_from_args
from musculo_control.commands.pages import check_page, write_page_block
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.loop.parts import load_parts
from musculo_control.sim.fault_matrix import (
    comparison_markdown,
    load_fault_matrix_config,
    matrix_markdown,
    run_matrix,
)
from musculo_control.sim.setup import RELIABILITY_FILES, Setup
from musculo_control.sim.soak import run_soak
from musculo_control.sim.soak_schedule import load_soak_config


def _setup(args: argparse.Namespace) -> tuple[Setup, dict[str, Any], dict[str, Any]]:
    """(the setup, safety.yaml overrides, reliability.yaml overrides) of ``--set``."""
    setup = setup_from_args(args, RELIABILITY_FILES)
    return setup, setup.overrides.safety, dict(setup.overrides.reliability)


def _write_json(doc: dict[str, Any], *paths: Path | None) -> None:
    text = json.dumps(doc, indent=2, default=_jsonable) + "\n"
    for path in paths:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


# -- the fault matrix ---------------------------------------------------------------------------
def run_faults(args: argparse.Namespace) -> int:
    """``musculo simulate faults``: the fault matrix."""
    writable_dir(args.out, "--out")
    writable_file(args.json, "--json")
    if getattr(args, "page", None) is not None:
        check_page(args.page, _page_block_name(args), _PAGE_WRITER)
    setup, safety, reliability = _setup(args)
    folder = setup.robot.config_dir
    cfg = load_fault_matrix_config(folder, setup.robot, reliability)
    if args.controller != cfg.controller:
        cfg = dataclasses.replace(cfg, controller=args.controller)
    graph = getattr(args, "graph", False)
    if graph:
        # the runner's matrix too (seconds), for the side-by-side table
        runner, _ = run_matrix(setup, cfg, safety, progress=False)
        results, baseline = _graph_matrix(args, folder, setup, cfg)
    else:
        results, baseline = run_matrix(setup, cfg, safety, progress=True)
    table = matrix_markdown(results)
    print(table, end="")
    within = [r for r in results if r.meets_target]
    missed = [r for r in results if not r.meets_target]
    verdict = (f"{len(within)}/{len(results)} faults reported within "
               f"{cfg.detection_target_ms:.0f} ms and stopped within their bound "
               f"(warnings never), with every command inside "
               f"[min, {results[0].limit_N if results else 0:.0f} N] and no NaN; "
               f"{sum(r.recovered for r in results)}/{len(results)} recovered; fault-free run: "
               f"{baseline['alarms']} alarms.")
    print("\n" + verdict)
    for r in missed:
        after = "-" if r.detection_time_ms is None else f"{r.detection_time_ms:.1f}"
        safe = "-" if r.safe_state_ms is None else f"{r.safe_state_ms:.1f}"
        print(f"  {r.name}: detected={r.detected} after {after} ms "
              f"({r.rule or 'no rule'}), stop after {safe} ms (bound "
              f"{r.safe_target_ms}), max command {r.max_command_N:.1f} N, NaN {r.any_nan}")
    doc = {"faults": [r.as_dict() for r in results],
           "target": {"detection_time_ms": cfg.detection_target_ms,
                      "max_command_N": results[0].limit_N if results else None},
           "fault_free_run": baseline, "controller": cfg.controller,
           "loop": _loop_name(args) if graph else "runner",
           "scenario": {k: v for k, v in dataclasses.asdict(cfg).items() if k != "cases"}}
    out: Path = args.out
    _write_json(doc, out / "faults.json", args.json)
    (out / "faults.md").write_text(matrix_markdown(results))
    written = [out / "faults.json", out / "faults.md"]
    if graph:
        side_by_side = comparison_markdown(runner, results)
        (out / "faults_runner_and_graph.md").write_text(side_by_side)
        written.append(out / "faults_runner_and_graph.md")
        print("\n" + side_by_side, end="")
    page = getattr(args, "page", None)
    if page is not None:
        name = _page_block_name(args)
        report = (side_by_side if graph and not getattr(args, "wall_clock", False) else table)
        written.append(write_page_block(page, name, _PAGE_WRITER,
                                        f"{report.rstrip()}\n\n{verdict}",
                                        _command_line(args)))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


#: the command named in the markers of the blocks ``--page`` writes (commands/pages.py)
_PAGE_WRITER = "musculo simulate faults --page"


def _page_block_name(args: argparse.Namespace) -> str:
    """The generated block ``--page`` writes: one per loop the matrix ran on."""
    if not getattr(args, "graph", False):
        return "faults"
    return "faults-wall-clock" if getattr(args, "wall_clock", False) else "faults-graph"


def _command_line(args: argparse.Namespace) -> str:
    """The command that reproduces this matrix (the options given, in a fixed order)."""
    parts = ["musculo", "simulate", "faults"]
    if args.controller != "osc":
        parts += ["--controller", args.controller]
    if getattr(args, "graph", False):
        parts.append("--graph")
        if getattr(args, "wall_clock", False):
            parts.append("--wall-clock")
            if args.busy_loops:
                parts += ["--busy-loops", str(args.busy_loops)]
        else:
            parts += ["--real-time-factor", f"{args.real_time_factor:g}"]
    if args.config is not None:
        parts += ["--config", str(args.config)]
    if args.seed is not None:
        parts += ["--seed", str(args.seed)]
    parts += [f"--set '{o}'" for o in args.overrides]
    parts += ["--page", str(args.page)]
    return " ".join(parts)


def _graph_matrix(args: argparse.Namespace, folder: Path, setup: Setup,
                  cfg: Any) -> tuple[list[Any], dict[str, Any]]:
    """The matrix on the node graph; the nodes read the config folder, so only
    ``reliability.faults`` overrides (the scenario, which the observer drives) apply."""
    overrides = setup.overrides
    if (overrides.safety or overrides.controller or overrides.experiments or overrides.mock_arm
            or overrides.robot):
        raise SystemExit("musculo simulate faults --graph: the nodes read the config folder "
                         "itself; --set applies only to reliability.faults.* (copy the folder "
                         "and edit it to change other values)")
    if not args.real_time_factor > 0:
        raise SystemExit(f"--real-time-factor must be > 0, got {args.real_time_factor}")
    try:
        from musculo_control.testing.graph_faults import run_graph_matrix
    except ImportError as exc:
        raise SystemExit(f"--graph needs rclpy ({exc}); install with: "
                         "pip install -e '.[ros]'") from exc
    wall = getattr(args, "wall_clock", False)
    busy = getattr(args, "busy_loops", 0)
    if busy and not wall:
        raise SystemExit("--busy-loops needs --wall-clock (on simulated time the lockstep "
                         "slows the simulation down instead)")
    parts = load_parts(folder)
    return run_graph_matrix(parts, cfg, args.out / "graph_runs", args.real_time_factor,
                            wall_clock=wall, busy_loops=busy)


def _loop_name(args: argparse.Namespace) -> str:
    if not getattr(args, "wall_clock", False):
        return "node graph"
    busy = getattr(args, "busy_loops", 0)
    loops = "one per core" if busy < 0 else str(busy)
    return f"node graph at wall clock, {loops} busy loops"


# -- the soak -----------------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    p = sub.add_parser("soak", help="long run with random goals and pushes: memory, drift, ticks",
                       description="Runs the supervised closed loop for simulated hours with "
                                   "random reachable goals and random pushes (reliability.yaml "
                                   "'soak') and reports memory growth (tracemalloc), drift of "
                                   "the hand at rest, the runner's tick accounting and safety "
                                   "events.")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--hours", type=float, default=None, help="simulated hours")
    group.add_argument("--duration", type=float, default=None, help="simulated seconds")
    p.add_argument("--controller", choices=CONTROLLER_NAMES, default=None,
                   help="controller (default: reliability.yaml soak.controller)")
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    p.add_argument("--graph", action="store_true",
                   help="on the ROS 2 node graph at wall clock instead (the duration in wall "
                        "seconds; needs rclpy): latches, ticks in a stop, hand error, "
                        "each process's memory")
    p.add_argument("--busy-loops", type=int, default=1, metavar="N",
                   help="with --graph: N processes spinning for the whole soak (-1: one per "
                        "core; default 1)")
    p.add_argument("--no-realtime", action="store_true",
                   help="with --graph: without the config folder's real-time profile")
    p.add_argument("--process-per-node", action="store_true",
                   help="with --graph: each node in its own process")
    add_common(p)
    p.set_defaults(func=run_soak_command)


def run_soak_command(args: argparse.Namespace) -> int:
    writable_file(args.json, "--json")
    setup, safety, reliability = _setup(args)
    folder = setup.robot.config_dir
    if args.hours is not None:
        reliability["soak.duration_s"] = args.hours * 3600.0
    elif args.duration is not None:
        reliability["soak.duration_s"] = args.duration
    if args.controller is not None:
        reliability["soak.controller"] = args.controller
    cfg = load_soak_config(folder, setup.robot, reliability)
    if getattr(args, "graph", False):
        return _graph_soak(args, setup, cfg)
    report = run_soak(setup, cfg, safety,
                      progress=lambda line: print(line, file=sys.stderr, flush=True))
    doc = report.as_dict()
    mem, rest, holds = doc["memory"], doc["rest"], doc["holds"]
    ticks, safe = doc["ticks"], doc["safety"]
    print(f"soak: {doc['simulated_s']:.0f} s simulated in {doc['wall_s']:.0f} s wall "
          f"({doc['realtime_factor']:.1f}x real time, tracemalloc on)")
    print(f"  memory (tracemalloc): {mem['traced_start_bytes'] / 1e6:.3f} MB after warm-up -> "
          f"{mem['traced_end_bytes'] / 1e6:.3f} MB at the end; growth "
          f"{mem['growth_bytes'] / 1e3:.1f} kB, slope {mem['slope_bytes_per_hour'] / 1e3:.1f} "
          f"kB/h; process RSS {mem['rss_start_bytes'] / 1e6:.1f} -> "
          f"{mem['rss_end_bytes'] / 1e6:.1f} MB")
    print(f"  rest at the start goal ({rest['count']} rests): max drift from the first "
          f"{1e3 * rest['max_drift_m']:.1f} mm, error trend "
          f"{1e3 * rest['error_trend_m_per_hour']:.2f} mm/h, creep within a rest window "
          f"{1e3 * rest['max_creep_in_window_m']:.2f} mm")
    print(f"  holds ({holds['count']}): error to goal p50 "
          f"{100 * holds['error_to_goal_m']['p50']:.1f} cm, max "
          f"{100 * holds['error_to_goal_m']['max']:.1f} cm")
    print(f"  ticks: missed {ticks['missed']} (run {ticks['run']}); control ticks observed "
          f"{ticks['control_ticks_observed']}")
    print(f"  safety: {safe['unsafe_ticks']} ticks in a stop, faults "
          f"{safe['faults_by_rule']}, warnings {safe['warnings_by_rule']}, max command "
          f"{safe['max_command_N']:.1f} N (limit {safe['limit_N']:.0f} N), non-finite "
          f"{safe['nonfinite_commands'] + safe['nonfinite_sent']}")
    _write_json(doc, args.json)
    if args.json:
        print(f"wrote {args.json}")
    return 0


def _graph_soak(args: argparse.Namespace, setup: Setup, cfg: Any) -> int:
    """``musculo soak --graph``: the soak on the node graph at wall clock."""
    try:
        from musculo_control.testing.graph_soak import GraphSoakOptions, run_graph_soak
    except ImportError as exc:
        raise SystemExit(f"--graph needs rclpy ({exc}); install with: "
                         "pip install -e '.[ros]'") from exc
    import tempfile

    options = GraphSoakOptions(realtime=not args.no_realtime, busy_loops=args.busy_loops,
                               one_process=not args.process_per_node)
    parts = load_parts(setup.robot.config_dir)
    work = Path(tempfile.mkdtemp(prefix="musculo_soak_graph_"))
    print(f"soak on the node graph at wall clock for {cfg.duration_s:.0f} s, "
          f"{'' if options.realtime else 'no '}real-time profile, {options.busy_loops} busy "
          f"loops (-1: one per core); node logs in {work}", file=sys.stderr, flush=True)
    doc = run_graph_soak(setup, parts, cfg, options, work,
                         progress=lambda line: print(line, file=sys.stderr, flush=True))
    rest, hold = doc["hand_error_rest_m"], doc["hand_error_hold_m"]
    print(f"soak on the graph: {doc['duration_s']:.0f} s at wall clock, {doc['busy_loops']} busy "
          f"loops, {doc['layout']}, real-time profile "
          f"{'on' if doc['realtime'] else 'off'}"
          + (f" (refused: {doc['realtime_refused'][0]})" if doc["realtime_refused"] else ""))
    print(f"  {doc['ticks_at_minimum_tension']} of {doc['ticks']} QP ticks in a stop "
          f"({100 * doc['minimum_tension_fraction']:.3f} %); latched: "
          f"{len(doc['latched'])} ({doc['acknowledged']} acknowledged); {doc['episodes']}")
    print(f"  hand error at rest p50 {1e3 * rest['p50']:.1f} / p99 {1e3 * rest['p99']:.1f} / max "
          f"{1e3 * rest['max']:.1f} mm ({doc['rests']} rests, drift "
          f"{1e3 * doc['rest_drift_m']:.1f} mm); holding p50 {1e3 * hold['p50']:.1f} / p99 "
          f"{1e3 * hold['p99']:.1f} / max {1e3 * hold['max']:.1f} mm")
    print("  RSS after warm-up -> end: " + ", ".join(
        f"{n} {doc['rss_start_mb'].get(n, float('nan')):.0f} -> {v:.0f} MB"
        for n, v in doc["rss_end_mb"].items()))
    _write_json(doc, args.json)
    if args.json:
        print(f"wrote {args.json}")
    return 0
