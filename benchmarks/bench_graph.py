"""Benchmark of the node graph at real time: rates, periods, latency and CPU per node.

The graph ``mock_arm.launch.py`` starts (nodes/graph.py), each node in its own process (or,
with ``--one-process``, all but the mock arm in ``control_process``) on the wall clock (no
simulated time, no lockstep, ``realtime_priority`` 0 as shipped), the controller holding the
arm at its start pose; watched for ``--duration`` seconds by an observer in this process that
takes only the 125 Hz and slower streams and /diagnostics (an observer taking the 500 Hz
streams too costs about as much CPU as a node, on a 2-core machine a load of the size
measured). Figures:

- ``muscle_commands`` and ``dynamics``: the rate from the stamps and the stamp interval p50 /
  p99 / max; the tendon driver's and the potentiometer's tick loops: ticks per second, late and
  skipped ticks (their /diagnostics counts over the window);
- from ``controller/state`` (every QP tick): the tick period, the tick's compute time and the
  age of the newest joint sample at the tick (sensing to command), p50 / p99 / max;
- per node process: CPU share of one core (``/proc/<pid>/stat`` over the window) and RSS,
  against bench.yaml ``targets.node_cpu_share`` (judged only when the load average before the
  graph started was quiet: the graph itself is this benchmark's load);
- ticks at minimum tension (none expected: the graph holds the arm).

Baseline, measured in the same run before the graph starts: a bare Python loop sleeping to a
125 Hz schedule in this process, its period p50 / p99 / max: what the machine's scheduler gives
a timer with nothing else of ours running. The QP tick period p99 is reported against it.

Prints the load average before and after; the figures are only comparable on a quiet machine.

    python benchmarks/bench_graph.py [--config DIR] [--duration S] [--one-process] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from musculo_control.benchmark import (
    MachineLoad,
    load_bench_config,
    markdown_table,
    summary_ms,
    write_reports,
)
from musculo_control.loop.build import load_parts
from musculo_control.loop.timing import Schedule
from musculo_control.paths import default_config_dir


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


def _tick_counts(obs: Any, node: str, t0: float, t1: float) -> tuple[int, int, int]:
    """(ticks, late, skipped) of ``node``'s first tick job between ``t0`` and ``t1``, from the
    first and last /diagnostics of the window."""
    def counts(d: Any) -> np.ndarray:
        key = next(k for k in d.values if k.startswith("job 0 "))
        return np.array([int(x) for x in d.values[key].split(" / ")])

    inside = [d for d in obs.diagnostics_of(node) if t0 <= d.t <= t1]
    if len(inside) < 2:
        return (0, 0, 0)
    first, last = counts(inside[0]), counts(inside[-1])
    return tuple(int(x) for x in last - first)  # type: ignore[return-value]


def _row(case: str, samples_s: Any, extra: str = "") -> dict[str, Any]:
    s = summary_ms(samples_s)
    return {"case": case, "p50_ms": round(s["p50_ms"], 3), "p99_ms": round(s["p99_ms"], 3),
            "max_ms": round(s["max_ms"], 3), "count": s["count"], "note": extra}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds watched (default: bench.yaml graph_duration_s)")
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    parser.add_argument("--one-process", action="store_true",
                        help="every node but the mock arm in one process (control_process)")
    args = parser.parse_args()
    try:
        from musculo_control.nodes.graph import GraphOptions
        from musculo_control.nodes.launcher import GraphProcesses, private_domain_id
        from musculo_control.nodes.observer import GraphObserver
    except ImportError as exc:
        print(f"bench_graph needs rclpy ({exc}): pip install -e '.[ros]'", file=sys.stderr)
        return 2
    bench = load_bench_config(args.config)
    duration = args.duration if args.duration is not None else bench.graph_duration_s
    if not duration > 2.0:
        parser.error(f"--duration must be > 2 s, got {duration}")
    parts = load_parts(args.config)
    loop, rates = parts.controller.loop, parts.drivers.rates
    machine = MachineLoad(bench.quiet_load_average)
    print(f"load average (1 min) at the start: {machine.start}")

    print(f"baseline: a bare {loop.control_rate_hz:g} Hz sleep loop for "
          f"{bench.graph_baseline_s:g} s ...", flush=True)
    rows = [_row(f"baseline: bare {loop.control_rate_hz:g} Hz sleep loop, period",
                 _baseline_periods(loop.control_rate_hz, bench.graph_baseline_s))]

    options = GraphOptions(args.config, use_sim_time=False, goal_mode="none",
                           one_process=args.one_process)
    domain = private_domain_id()
    with tempfile.TemporaryDirectory(prefix="bench_graph_") as work, \
            GraphProcesses(options, Path(work), domain_id=domain) as graph, \
            GraphObserver(parts, domain_id=domain, fast_streams=False) as obs:
        def running() -> bool:
            mock = obs.diagnostics_of("mock_hardware_node")
            return bool(mock) and mock[-1].message == "running" and len(obs.commands) > 0

        print("starting the graph ...", flush=True)
        released = obs.wait_until(running, 60.0)
        if not released:
            # a machine too slow for the config's timing limits: the controller never holds the
            # arm for long enough and the mock keeps it; the figures still say why
            if not obs.wait_until(lambda: len(obs.commands) > 0, 60.0):
                print("the graph did not start; node logs:\n" + "\n".join(
                    f"--- {n}\n{graph.log(n)[-2000:]}" for n in graph.nodes), file=sys.stderr)
                return 1
            print("the mock arm never released the arm (the controller did not hold it for its "
                  "release time within 60 s): measuring the graph as it runs", flush=True)
        obs.wait_for(1.0, 30.0)  # past the release transient
        pids = {name: proc.pid for name, proc in graph.processes.items()}
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
    machine.finish()

    nominal = {"muscle_commands": loop.control_rate_hz, "dynamics": loop.dynamics_rate_hz}
    for topic, hz in nominal.items():
        stamps = np.asarray(records[topic].stamp)
        stamps = stamps[stamps < t1]
        intervals = np.diff(stamps)
        rate = (stamps.size - 1) / (stamps[-1] - stamps[0]) if stamps.size > 1 else 0.0
        rows.append(_row(f"{topic}: stamp interval", intervals,
                         f"{rate:.1f} Hz by stamps (nominal {hz:g})"))
    tick_hz = {"tendon_driver_node": rates.driver_rate_hz,
               "potentiometer_node": 2.0 * rates.sensor_rate_hz}  # ros_params poll_rate_hz
    for node, job in ticks.items():
        rows.append({"case": f"{node}: tick loop, from /diagnostics", "p50_ms": float("nan"),
                     "p99_ms": float("nan"), "max_ms": float("nan"), "count": job[0],
                     "note": f"{job[0] / wall:.1f} ticks/s (nominal {tick_hz[node]:g}), "
                             f"{job[1]} late, {job[2]} skipped"})
    states = records["controller/state"].values
    period = np.array([s["tick_period_s"] for s in states])
    compute = np.array([s["compute_time_s"] for s in states])
    joint_age = np.array([s["joint_age_s"] for s in states])
    unsafe = int(sum(s["supervisor_state"] != 0.0 for s in states))
    base = rows[0]["p99_ms"]
    p_row = _row("QP node: tick period", period[period > 0])
    p_row["note"] = f"p99 {p_row['p99_ms'] / base:.1f}x the baseline's"
    rows += [p_row, _row("QP node: tick compute", compute),
             _row("QP node: joint sample age at the tick (sensing to command)", joint_age,
                  f"{unsafe} ticks not running")]
    table = markdown_table(rows)
    targets = bench.targets.node_cpu_share
    # the graph is this benchmark's own load: only the load before it decides the verdicts
    busy = machine.start > machine.quiet

    def verdict(process: str) -> str:
        bound = getattr(targets, process, None)
        if bound is None:
            return ""
        if busy:
            return f"<= {bound:g}: not judged: load average {machine.start}"
        return f"<= {bound:g}: {'met' if cpu[process] <= bound else 'NOT met'}"

    nodes = [{"process": n, "cpu_share_of_one_core": round(cpu[n], 3),
              "rss_mb": round(rss[n], 1), "target": verdict(n)} for n in sorted(cpu)]
    node_table = markdown_table(nodes)
    verdict = ("the controller held the arm" if released else
               "the mock arm never released the arm (the controller never held it long enough)")
    layout = "one process for all but the mock" if args.one_process else "one process per node"
    lines = [f"Node graph at real time ({layout}), {duration:g} s, {parts.robot.n_muscles} muscles "
             f"({args.config.name}); {machine.describe()}", "",
             f"{verdict}; {unsafe} of {len(states)} QP ticks not running (at minimum tension)",
             "", *table, "", *node_table, f"\nall nodes: {sum(cpu.values()):.2f} cores"]
    text = "\n".join(lines) + "\n"
    print(text)
    summary = {"rows": rows, "nodes": nodes, "duration_s": duration,
               "qp_period_p99_vs_baseline": round(p_row["p99_ms"] / base, 2),
               "unsafe_ticks": unsafe, "ticks": len(states), "released": released,
               "machine": machine.as_dict()}
    name = "bench_graph_one_process" if args.one_process else "bench_graph"
    for path in write_reports(args.out, name, rows, text, summary):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
