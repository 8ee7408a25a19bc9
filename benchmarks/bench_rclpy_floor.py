"""The floor under the node graph's CPU and memory: what rclpy and Fast DDS cost with no work
of ours.

Each case is a bare rclpy process that takes every queued ``sensor_msgs/JointState`` of one
input stream and publishes ``k`` JointStates per wake-up, with nothing else: no conversion,
no check, no computation. A source process feeds the input at the sensor rate and a sink takes
every output (so the publications are delivered, as in the graph). The figures are the CPU
share of one core of the case's process over ``--duration`` seconds (``/proc``: user + system
of all its threads, DDS's included) and its RSS at the end. Cases, with the graph's rates from
the config folder (hardware.yaml ``rates``, controller.yaml ``loop``):

- wake at the driver rate, take the input, publish 0, 1 or 2 messages (the tendon driver node
  takes ``hw/tendon_states`` and publishes ``hw/tendon_commands`` and ``muscle_states``);
- wake at the control rate, take the input, publish 3 messages (the QP node's command, state
  record and activations);

each three ways: ``messages`` (rclpy builds a Python message of each sample taken and
converts each message published: how the nodes worked before), ``bytes`` (samples taken and
published as their serialized bytes: how the nodes work now, musculo_control/serialized.py),
and, where rclpy has the EventsExecutor, ``events``: bytes, the process woken by each input
sample through the EventsExecutor instead of its own sleep loop (the potentiometer node's
pattern). The baseline of the run is a plain sleep loop at the driver rate without rclpy, and
a bare process with rclpy, numpy and one node (its RSS: the memory floor of any node).
Compare with the nodes' own figures from ``benchmarks/bench_graph.py``: what a node costs
above the floor of its pattern is ours.

    python benchmarks/bench_rclpy_floor.py [--config DIR] [--duration S] [--out DIR]
"""

from __future__ import annotations

import argparse
import array
import os
import subprocess
import sys
import time
from pathlib import Path


def _cpu_share(seconds: float, work: object) -> float:
    """CPU time of this process per wall second while ``work`` runs for ``seconds``."""
    c0, w0 = time.process_time(), time.monotonic()
    work(seconds)  # type: ignore[operator]
    return (time.process_time() - c0) / (time.monotonic() - w0)


def _sleep_loop(rate_hz: float, seconds: float, tick: object = None) -> None:
    """Wake at ``rate_hz`` on a drift-free grid for ``seconds``, calling ``tick`` each time."""
    period = 1.0 / rate_hz
    next_s = time.monotonic()
    end = next_s + seconds
    while next_s < end:
        delay = next_s - time.monotonic()
        if delay > 0.0:
            time.sleep(delay)
        next_s += period
        if tick is not None:
            tick()  # type: ignore[operator]


#: Small array operations per wake-up in the arithmetic cases (about what a stage does with
#: one sample: conversions, checks, a filter, copies).
_ARITHMETIC_CALLS = 20


def _arithmetic(n: int, python: bool) -> object:
    """A tick doing :data:`_ARITHMETIC_CALLS` elementwise operations on ``n`` values: numpy
    calls on arrays, or (``python``) the same operations on Python floats, one by one."""
    import numpy as np

    if python:
        a, b = [1.0 + i for i in range(n)], [0.5 * i for i in range(n)]

        def tick_py() -> None:
            x = a
            for _ in range(_ARITHMETIC_CALLS // 2):
                x = [u - v for u, v in zip(x, b)]
                x = [u * 0.999 for u in x]

        return tick_py
    arr, brr = 1.0 + np.arange(n, dtype=float), 0.5 * np.arange(n, dtype=float)

    def tick_np() -> None:
        x = arr
        for _ in range(_ARITHMETIC_CALLS // 2):
            x = x - brr
            x = x * 0.999

    return tick_np


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _child(role: str, rate_hz: float, publish: int, names: int, seconds: float,
           variant: str) -> None:
    """One process of a case: ``source`` (publishes ``in``), ``case`` (takes ``in``, publishes
    ``out0..``), ``sink`` (takes ``out0`` and ``out1``), ``idle`` (one node, nothing else).
    Prints the case's CPU share and RSS [MB]."""
    import numpy  # noqa: F401 - every node has it: part of the floor
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = Node(f"floor_{role}")
    # the nodes' publishers' QoS (nodes/ros_common.py QOS_STATE_PUB), not imported: nothing of
    # ours may enter the floor's memory
    reliable = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                          reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.VOLATILE)
    if role == "idle":
        time.sleep(seconds)
        print(f"0.0 {_rss_mb():.1f}", flush=True)
        return
    queue = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                       reliability=ReliabilityPolicy.BEST_EFFORT,
                       durability=DurabilityPolicy.VOLATILE)
    msg = JointState()
    msg.name = [f"m{i}" for i in range(names)]
    msg.position = msg.velocity = msg.effort = array.array("d", [0.0] * names)
    raw = variant != "messages"
    data = bytes(serialize_message(msg))

    def never(m: object) -> None:  # the subscriptions are taken from, never spun
        return None

    outputs = {"source": 1, "case": publish, "sink": 0}[role]
    pubs = [node.create_publisher(JointState, "in" if role == "source" else f"out{i}",
                                  reliable) for i in range(outputs)]
    subs = {"source": [], "case": ["in"], "sink": ["out0", "out1", "out2"]}[role]
    clock = node.get_clock()

    def send() -> None:
        for pub in pubs:
            if raw:
                pub.publish(data)
            else:
                msg.header.stamp = clock.now().to_msg()
                pub.publish(msg)

    if role == "case" and variant == "events":
        from rclpy.experimental import EventsExecutor

        executor = EventsExecutor()
        node.create_subscription(JointState, "in", lambda m: send(), queue, raw=True)
        executor.add_node(node)

        def spin(s: float) -> None:
            end = time.monotonic() + s
            while time.monotonic() < end:
                executor.spin_once(timeout_sec=0.05)

        share = _cpu_share(seconds, spin)
    else:
        takes = [node.create_subscription(JointState, t, never, queue, raw=raw) for t in subs]

        def tick() -> None:
            for sub in takes:
                with sub.handle:
                    while sub.handle.take_message(JointState, raw) is not None:
                        pass
            send()

        share = _cpu_share(seconds, lambda s: _sleep_loop(rate_hz, s, tick))
    print(f"{share:.6f} {_rss_mb():.1f}", flush=True)
    node.destroy_node()
    rclpy.shutdown()


def _case(rate_hz: float, publish: int, names: int, source_hz: float, seconds: float,
          env: dict[str, str], variant: str) -> tuple[float, float]:
    """(CPU share of one core, RSS [MB]) of a case process, its source and sink beside it."""
    def start(role: str, hz: float, k: int, s: float, v: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, __file__, "--child", role, str(hz), str(k),
                                 str(names), str(s), v], stdout=subprocess.PIPE, text=True,
                                env=env)

    helpers = [start("source", source_hz, 1, seconds + 6.0, variant),
               start("sink", rate_hz, 0, seconds + 6.0, variant)]
    time.sleep(2.0)  # discovery
    case = start("case", rate_hz, publish, seconds, variant)
    out, _ = case.communicate(timeout=seconds + 60.0)
    for proc in helpers:
        proc.kill()
        proc.wait()
    if case.returncode != 0:
        raise SystemExit(f"floor case failed (exit {case.returncode})")
    share, rss = out.strip().splitlines()[-1].split()
    return float(share), float(rss)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        role, hz, k, names, seconds, variant = sys.argv[2:8]
        _child(role, float(hz), int(k), int(names), float(seconds), variant)
        return 0
    # here, not at the top: the case processes run this file and must load nothing of ours
    from musculo_control.loop.parts import load_parts
    from musculo_control.nodes.launcher import private_domain_id
    from musculo_control.paths import default_config_dir
    from musculo_control.tick_benchmark.config import load_bench_config
    from musculo_control.tick_benchmark.measure import MachineLoad, markdown_table, write_reports

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per case")
    parser.add_argument("--domain-id", type=int,
                        default=int(os.environ["ROS_DOMAIN_ID"])
                        if os.environ.get("ROS_DOMAIN_ID", "").isdigit() else None,
                        help="ROS_DOMAIN_ID of the cases (default: the environment's, else one "
                             "derived from this process's id)")
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    args = parser.parse_args()
    parts = load_parts(args.config)
    rates, loop = parts.drivers.rates, parts.controller.loop
    names = parts.robot.n_muscles
    machine = MachineLoad(load_bench_config(args.config).quiet_load_average)
    print(f"load average (1 min) at the start: {machine.start}")
    domain = args.domain_id if args.domain_id is not None else private_domain_id()
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    base = _cpu_share(args.duration, lambda s: _sleep_loop(rates.driver_rate_hz, s))
    woken = {python: _cpu_share(args.duration, lambda s, p=python: _sleep_loop(
        rates.driver_rate_hz, s, _arithmetic(names, p))) for python in (False, True)}
    idle = subprocess.run([sys.executable, __file__, "--child", "idle", "0", "0", "0", "3",
                           "messages"], capture_output=True, text=True, env=env, check=True)
    rows = [{"case": f"baseline: plain sleep loop at {rates.driver_rate_hz:g} Hz, no rclpy",
             "cpu_share_of_one_core": round(base, 4), "vs_baseline": 1.0, "rss_mb": ""},
            *({"case": f"the same, {_ARITHMETIC_CALLS} elementwise operations on {names} "
                       f"values per wake-up, " + ("Python floats" if python else
                                                  "numpy calls on arrays"),
               "cpu_share_of_one_core": round(share, 4),
               "vs_baseline": round(share / base, 1) if base > 0 else float("nan"),
               "rss_mb": ""} for python, share in woken.items()),
            {"case": "rclpy, numpy and one node, idle", "cpu_share_of_one_core": "",
             "vs_baseline": "", "rss_mb": float(idle.stdout.split()[-1])}]
    variants = ["messages", "bytes"]
    try:
        from rclpy.experimental import EventsExecutor  # noqa: F401
        variants.append("events")
    except ImportError:
        pass
    cases = [(rates.driver_rate_hz, k) for k in (0, 1, 2)] + [(loop.control_rate_hz, 3)]
    for hz, k in cases:
        for variant in variants:
            if variant == "events" and k != 1:
                continue  # the potentiometer node's pattern: one output per input sample
            print(f"case: wake at {hz:g} Hz, take, publish {k}, {variant} ...", flush=True)
            share, rss = _case(hz, k, names, rates.sensor_rate_hz, args.duration, env, variant)
            woken = (f"woken by each {rates.sensor_rate_hz:g} Hz input sample"
                     if variant == "events" else f"wake at {hz:g} Hz, take every "
                                                 f"{rates.sensor_rate_hz:g} Hz input")
            rows.append({"case": f"rclpy, {variant}: {woken}, publish {k} JointState of "
                                 f"{names}",
                         "cpu_share_of_one_core": round(share, 4),
                         "vs_baseline": round(share / base, 1) if base > 0 else float("nan"),
                         "rss_mb": rss})
    machine.finish()
    text = "\n".join([f"rclpy + Fast DDS floor, {args.duration:g} s per case; "
                      f"{machine.describe()}", "", *markdown_table(rows)]) + "\n"
    print(text)
    summary = {"rows": rows, "machine": machine.as_dict()}
    for path in write_reports(args.out, "bench_rclpy_floor", rows, text, summary):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
