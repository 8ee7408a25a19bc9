"""Benchmark of the node graph at real time, quiet and loaded: rates, periods, latency, CPU and
memory per process, and whether the controller held the arm.

The graph ``mock_arm.launch.py`` starts (nodes/graph.py; by default the shared layout: the
potentiometer and tendon driver nodes in ``hardware_process``, the dynamics, QP and goal nodes
in ``control_process``, the mock arm alone; ``--process-per-node`` for the other layout;
``--realtime`` adds the config folder's real-time profile) on the wall clock, the controller
holding the arm at its start pose, watched for ``--duration`` seconds by an observer in this
process that takes only the 125 Hz and slower streams and /diagnostics (an observer taking the
500 Hz streams too costs about as much CPU as a node). Two cases, one after the other on fresh
graphs: quiet, then with ``--busy-loops`` spinning processes (default one per core), as a lab
computer that also runs RViz, a recorder and cameras. Per case:

- ``muscle_commands`` and ``dynamics``: the rate from the stamps and the stamp interval p50 /
  p99 / max; the tendon driver's tick loop: ticks per second (and the share of its nominal
  rate), late and skipped ticks; the potentiometer node's samples converted per second and its
  job's ticks, late and skipped (the growth of their /diagnostics counts from the window's
  first report to its last, per second between those two reports);
- from ``controller/state`` (every QP tick): the tick period, the tick's compute time and the
  age of the newest joint sample at the tick (sensing to command), p50 / p99 / max;
- per process: CPU share of one core (``/proc/<pid>/stat`` over the window) and RSS, against
  bench.yaml ``targets.node_cpu_share`` (judged only when the load average before the graph
  started was quiet: the graph itself is this benchmark's load); for a process of one
  controller node, its work in the window (potentiometer samples converted, driver ticks, QP
  ticks, snapshots) against the nominal rate, for a shared process each of its nodes' (on a
  busy machine a node that skips work spends less: CPU shares compare only at the same work);
  the controller's processes together against ``targets.controller_cpu_share`` (a process per
  node) and the driver nodes' RSS against ``targets.driver_node_rss_mb``;
- "held the arm" only when the mock let the arm go, no fault latched and at most 0.1 % of the
  QP's ticks were at minimum tension; otherwise the ticks and the episodes with their rules.

Baseline, measured in the same run before the graphs start: a bare Python loop sleeping to a
125 Hz schedule in this process, its period p50 / p99 / max: what the machine's scheduler gives
a timer with nothing else of ours running. The QP tick period p99 is reported against it.

    python benchmarks/bench_graph.py [--config DIR] [--duration S] [--process-per-node]
                                     [--realtime] [--busy-loops N] [--domain-id N]
                                     [--out DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from musculo_control.loop.parts import load_parts
from musculo_control.loop.timing import Schedule
from musculo_control.nodes.graph import GraphOptions, layout_label
from musculo_control.paths import default_config_dir
from musculo_control.testing.machine_load import busy_loops
from musculo_control.tick_benchmark.config import load_bench_config
from musculo_control.tick_benchmark.measure import (
    MachineLoad,
    markdown_table,
    summary_ms,
    write_reports,
)


def _baseline_periods(rate_hz: float, seconds: float) -> np.ndarray:
    """Periods [s] of a bare sleep-to-deadline loop at ``rate_hz`` in this process."""
    schedule = Schedule(1.0 / rate_hz, time.monotonic())
    starts = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        now = time.monotonic()
        if schedule.due(now):
            starts.append(now)
        time.sleep(max(0.0, schedule.next_s - time.monotonic()))
    return np.diff(starts)


def _cpu_s(pid: int) -> float:
    """User + system CPU time of process ``pid`` [s]."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


#: Nodes whose tick loop counts are read from /diagnostics (the observer does not take their
#: 500 Hz streams: on 2 cores its own callbacks would be a load of the size measured).
_TICKING = ("tendon_driver_node", "potentiometer_node")


def _tick_counts(obs: Any, node: str, t0: float, t1: float) -> tuple[int, int, int, float]:
    """(ticks, late, skipped, span [s]) of ``node``'s first tick job between ``t0`` and ``t1``:
    the counts' growth from the first to the last /diagnostics of the window, and the time
    between those two reports by their stamps (the counts' own interval: with a report a
    second, a 30 s window holds about 29 s of counts)."""
    def counts(d: Any) -> np.ndarray:
        key = next(k for k in d.values if k.startswith("job 0 "))
        return np.array([int(x) for x in d.values[key].split(" / ")])

    inside = [d for d in obs.diagnostics_of(node) if t0 <= d.t <= t1]
    if len(inside) < 2:
        return (0, 0, 0, math.nan)
    ticks, late, skipped = (int(x) for x in counts(inside[-1]) - counts(inside[0]))
    return ticks, late, skipped, inside[-1].stamp - inside[0].stamp


def _value_count(obs: Any, node: str, key: str, t0: float, t1: float) -> tuple[int, float]:
    """How much the count ``key`` of ``node``'s /diagnostics grew between ``t0`` and ``t1``,
    and over how long [s] (as :func:`_tick_counts`)."""
    inside = [d for d in obs.diagnostics_of(node) if t0 <= d.t <= t1 and key in d.values]
    if len(inside) < 2:
        return 0, math.nan
    return (int(inside[-1].values[key]) - int(inside[0].values[key]),
            inside[-1].stamp - inside[0].stamp)


def _row(case: str, samples_s: Any, extra: str = "") -> dict[str, Any]:
    s = summary_ms(samples_s)
    return {"case": case, "p50_ms": round(s["p50_ms"], 3), "p99_ms": round(s["p99_ms"], 3),
            "max_ms": round(s["max_ms"], 3), "count": s["count"], "note": extra}


def _measure(parts: Any, args: argparse.Namespace, bench: Any, duration: float,
             busy: int) -> dict[str, Any]:
    """One watched run of the graph with ``busy`` spinning processes; its rows and figures."""
    from musculo_control.nodes.launcher import GraphProcesses, private_domain_id
    from musculo_control.testing.observer import GraphObserver

    loop, rates = parts.controller.loop, parts.drivers.rates
    options = _options(args)
    domain = args.domain_id if args.domain_id is not None else private_domain_id()
    seconds = duration + 200.0
    with busy_loops(busy, seconds), \
            tempfile.TemporaryDirectory(prefix="bench_graph_") as workdir, \
            GraphProcesses(options, Path(workdir), domain_id=domain) as graph, \
            GraphObserver(parts, domain_id=domain, fast_streams=False) as obs:
        def running() -> bool:
            mock = obs.diagnostics_of("mock_hardware_node")
            return bool(mock) and mock[-1].message == "running" and len(obs.commands) > 0

        print(f"starting the graph ({busy} busy loops) ...", flush=True)
        released = obs.wait_until(running, 60.0)
        if not released and not obs.wait_until(lambda: len(obs.commands) > 0, 60.0):
            print("the graph did not start; node logs:\n" + "\n".join(
                f"--- {n}\n{graph.log(n)[-2000:]}" for n in graph.nodes), file=sys.stderr)
            raise SystemExit(1)
        refused = [line.strip() for n in graph.nodes for line in graph.log(n).splitlines()
                   if "not permitted" in line]
        obs.wait_for(1.0, 30.0)  # past the release transient
        pids = {name: proc.pid for name, proc in graph.processes.items()}
        members = {name: [n.name for n in launch.nodes] for name, launch in graph.launches.items()}
        cpu0 = {name: _cpu_s(pid) for name, pid in pids.items()}
        wall0, t0 = time.monotonic(), obs.now_s()
        print(f"watching for {duration:g} s ...", flush=True)
        obs.wait_for(duration, duration + 30.0)
        wall = time.monotonic() - wall0
        t1 = obs.now_s()
        cpu = {name: (_cpu_s(pid) - cpu0[name]) / wall for name, pid in pids.items()}
        rss = {name: _rss_mb(pid) for name, pid in pids.items()}
        records = {name: obs.snapshot(rec).since(t0) for name, rec in (
            ("muscle_commands", obs.commands), ("dynamics", obs.dynamics),
            ("controller/state", obs.controller_state))}
        ticks = {node: _tick_counts(obs, node, t0, t1) for node in _TICKING}
        published, published_s = _value_count(obs, "potentiometer_node", "published", t0, t1)
        qp = [d for d in obs.diagnostics_of("activation_qp_node") if t0 <= d.t <= t1]
        latched = sorted({d.message.split(":", 2)[1].strip() for d in qp
                          if d.message.startswith("latched")})
        episodes = qp[-1].values.get("minimum-tension episodes", "") if qp else ""
    rows = []
    nominal = {"muscle_commands": loop.control_rate_hz, "dynamics": loop.dynamics_rate_hz}
    for topic, hz in nominal.items():
        stamps = np.asarray(records[topic].stamp)
        stamps = stamps[stamps < t1]
        intervals = np.diff(stamps)
        rate = (stamps.size - 1) / (stamps[-1] - stamps[0]) if stamps.size > 1 else 0.0
        rows.append(_row(f"{topic}: stamp interval", intervals,
                         f"{rate:.1f} Hz by stamps (nominal {hz:g})"))
    job = ticks["tendon_driver_node"]
    driver_hz = job[0] / job[3]
    rows.append({"case": "tendon_driver_node: tick loop, from /diagnostics",
                 "p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan"),
                 "count": job[0],
                 "note": f"{driver_hz:.1f} ticks/s (nominal {rates.driver_rate_hz:g}: "
                         f"{100.0 * driver_hz / rates.driver_rate_hz:.1f} %) over "
                         f"{job[3]:.1f} s, {job[1]} late, {job[2]} skipped"})
    # its job polls the input (single-threaded executor) or checks its age (EventsExecutor,
    # which hands each sample over as it comes): its work is the samples it converts
    job = ticks["potentiometer_node"]
    rows.append({"case": "potentiometer_node: samples converted, from /diagnostics",
                 "p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan"),
                 "count": published,
                 "note": f"{published / published_s:.1f} samples/s (nominal "
                         f"{rates.sensor_rate_hz:g}); its job {job[0] / job[3]:.1f} ticks/s, "
                         f"{job[1]} late, {job[2]} skipped"})
    states = records["controller/state"].values
    period = np.array([s["tick_period_s"] for s in states])
    compute = np.array([s["compute_time_s"] for s in states])
    joint_age = np.array([s["joint_age_s"] for s in states])
    unsafe = int(sum(s["supervisor_state"] != 0.0 for s in states))
    rows += [_row("QP node: tick period", period[period > 0]),
             _row("QP node: tick compute", compute),
             _row("QP node: joint sample age at the tick (sensing to command)", joint_age,
                  f"{unsafe} ticks not running")]
    # held: let go by the mock, no latched fault, at most 0.1 % of the ticks at minimum tension
    held = released and not latched and unsafe <= 0.001 * max(len(states), 1)
    # each controller node's work in the window against its nominal rate: on a busy machine a
    # node that skips ticks also spends less, so its CPU share is scaled to the nominal work
    dynamics = np.asarray(records["dynamics"].stamp)
    # (done, over how long [s], nominal rate [Hz])
    work = {"potentiometer_node": (published, published_s, rates.sensor_rate_hz),
            "tendon_driver_node": (ticks["tendon_driver_node"][0], ticks["tendon_driver_node"][3],
                                   rates.driver_rate_hz),
            "activation_qp_node": (len(states), wall, loop.control_rate_hz),
            "dynamics_node": (int(np.sum(dynamics < t1)), wall, loop.dynamics_rate_hz)}
    return {"rows": rows, "cpu": cpu, "rss": rss, "unsafe": unsafe, "ticks": len(states),
            "work": {n: (done / span, hz) for n, (done, span, hz) in work.items()},
            "members": members,
            "released": released, "latched": latched, "held": held, "episodes": episodes,
            "refused": refused, "busy_loops": busy, "wall_s": wall}


def _options(args: argparse.Namespace) -> GraphOptions:
    """The graph the benchmark runs: the launch files' at wall clock, no goals of the goal node."""
    return GraphOptions(args.config, use_sim_time=False, goal_mode="none",
                        one_process=not args.process_per_node, realtime=args.realtime)


def _process_row(case: dict[str, Any], name: str, target: str) -> dict[str, Any]:
    """One process's CPU share and RSS, and the work of each of its nodes whose work is
    counted against the nominal rate (a starved node skips work and spends less: a CPU share is
    comparable only at the same work)."""
    row = {"process": name, "cpu_share_of_one_core": round(case["cpu"][name], 3),
           "rss_mb": round(case["rss"][name], 1), "work_per_s": "", "target": target}
    nodes = [n for n in case["members"].get(name, [name]) if n in case["work"]]
    if nodes == [name]:
        done, nominal = case["work"][name]
        row["work_per_s"] = f"{done:.1f} of {nominal:g}"
    elif nodes:
        row["work_per_s"] = "; ".join(f"{n} {case['work'][n][0]:.1f} of {case['work'][n][1]:g}"
                                      for n in nodes)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds watched (default: bench.yaml graph_duration_s)")
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    parser.add_argument("--process-per-node", action="store_true",
                        help="each node in its own process (default: the shared layout of "
                             "the launch files, the drivers in hardware_process and the "
                             "dynamics, QP and goal nodes in control_process)")
    parser.add_argument("--realtime", action="store_true",
                        help="with the config folder's real-time profile (realtime.yaml)")
    parser.add_argument("--busy-loops", type=int, default=-1, metavar="N",
                        help="the loaded case: N spinning processes (default -1: one per "
                             "core; 0: measure the quiet case only)")
    parser.add_argument("--domain-id", type=int,
                        default=int(os.environ["ROS_DOMAIN_ID"])
                        if os.environ.get("ROS_DOMAIN_ID", "").isdigit() else None,
                        help="the graph's ROS_DOMAIN_ID (default: the environment's, else one "
                             "derived from this process's id)")
    parser.add_argument("--loaded-only", action="store_true",
                        help="measure the loaded case only (a long hold under load)")
    args = parser.parse_args()
    try:
        import musculo_control.testing.observer  # noqa: F401 (rclpy is there)
    except ImportError as exc:
        print(f"bench_graph needs rclpy ({exc}): pip install -e '.[ros]'", file=sys.stderr)
        return 2
    bench = load_bench_config(args.config)
    duration = args.duration if args.duration is not None else bench.graph_duration_s
    if not duration > 2.0:
        parser.error(f"--duration must be > 2 s, got {duration}")
    parts = load_parts(args.config)
    loop = parts.controller.loop
    machine = MachineLoad(bench.quiet_load_average)
    print(f"load average (1 min) at the start: {machine.start}")

    print(f"baseline: a bare {loop.control_rate_hz:g} Hz sleep loop for "
          f"{bench.graph_baseline_s:g} s ...", flush=True)
    baseline = _row(f"baseline: bare {loop.control_rate_hz:g} Hz sleep loop, period",
                    _baseline_periods(loop.control_rate_hz, bench.graph_baseline_s))
    cases = [] if args.loaded_only and args.busy_loops != 0 else \
        [_measure(parts, args, bench, duration, 0)]
    if args.busy_loops != 0:
        cases.append(_measure(parts, args, bench, duration, args.busy_loops))
    machine.finish()
    targets = bench.targets.node_cpu_share
    # the graph is this benchmark's own load: only the load before it decides the verdicts
    busy = machine.start > machine.quiet

    def judged(value: float, bound: float, unit: str = "") -> str:
        if busy:
            return f"<= {bound:g}{unit}: not judged: load average {machine.start}"
        return f"<= {bound:g}{unit}: {'met' if value <= bound else 'NOT met'}"

    def verdict(process: str, case: dict[str, Any]) -> str:
        out = []
        bound = getattr(targets, process, None)
        if bound is not None:
            out.append(judged(case["cpu"][process], bound))
        if process in ("potentiometer_node", "tendon_driver_node"):
            out.append("RSS " + judged(case["rss"][process], bench.targets.driver_node_rss_mb,
                                       " MB"))
        return "; ".join(out)

    def controller_verdict(case: dict[str, Any]) -> str:
        names = [n for n in case["cpu"] if n != "mock_hardware_node"]
        total = sum(case["cpu"][n] for n in names)
        text = f"the controller's processes (all but the mock arm): {total:.3f} cores"
        if args.process_per_node:
            text += " (" + judged(total, bench.targets.controller_cpu_share) + ")"
        return text

    layout = layout_label(_options(args))
    profile = "real-time profile" if args.realtime else "no real-time profile"
    command = " ".join(["python benchmarks/bench_graph.py", *sys.argv[1:]])
    lines = [f"Measured with `{command}` on {time.strftime('%Y-%m-%d')}.", "",
             f"Node graph at real time ({layout}, {profile}), {duration:g} s per case, "
             f"{parts.robot.n_muscles} muscles ({args.config.name}); {machine.describe()}", ""]
    summary: dict[str, Any] = {"duration_s": duration, "machine": machine.as_dict(),
                               "layout": layout, "realtime": args.realtime, "cases": []}
    for case in cases:
        name = "quiet" if case["busy_loops"] == 0 else f"{case['busy_loops']} busy loops"
        p_row = next(r for r in case["rows"] if r["case"] == "QP node: tick period")
        p_row["note"] = f"p99 {p_row['p99_ms'] / baseline['p99_ms']:.1f}x the baseline's"
        said = ("held the arm" if case["held"] else "**did not hold the arm**")
        lines += [f"### {name}", "",
                  f"{said}: {case['unsafe']} of {case['ticks']} QP ticks at minimum tension"
                  f"{', latched: ' + ', '.join(case['latched']) if case['latched'] else ''}"
                  f"{', real-time refused: ' + case['refused'][0] if case['refused'] else ''}",
                  f"{case['episodes']}" if case["unsafe"] else "", "",
                  *markdown_table([baseline, *case["rows"]]), "",
                  *markdown_table([_process_row(case, n, verdict(n, case))
                                   for n in sorted(case["cpu"])]),
                  f"\nall processes: {sum(case['cpu'].values()):.2f} cores; "
                  f"{controller_verdict(case)}", ""]
        summary["cases"].append({k: v for k, v in case.items() if k != "rows"}
                                | {"rows": [baseline, *case["rows"]]})
    text = "\n".join(lines) + "\n"
    print(text)
    name = "bench_graph" + ("_process_per_node" if args.process_per_node else "") \
        + ("_realtime" if args.realtime else "") + ("_loaded" if args.loaded_only else "")
    rows = [dict(r, load=c["busy_loops"]) for c in summary["cases"] for r in c["rows"]]
    for path in write_reports(args.out, name, rows, text, summary):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
