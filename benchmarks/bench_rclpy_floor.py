"""The floor under the node graph's CPU: what rclpy and Fast DDS cost with no work of ours.

Each case is a bare rclpy process that wakes on a drift-free schedule (a sleep loop, as the
nodes' tick loop), takes every queued ``sensor_msgs/JointState`` of one input stream and
publishes ``k`` JointStates per wake-up, with nothing else: no conversion, no check, no
computation. A source process feeds the input at the sensor rate and a sink takes every output
(so the publications are delivered, as in the graph). The figure is the CPU share of one core of
the case's process over ``--duration`` seconds (``/proc``: user + system of all its threads,
DDS's included). Cases, with the graph's rates from the config folder (hardware.yaml
``rates``, controller.yaml ``loop``):

- wake at the driver rate, take the input, publish 0, 1 or 2 messages (the tendon driver node
  takes ``hw/tendon_states`` and publishes ``hw/tendon_commands`` and ``muscle_states``);
- wake at the control rate, take the input, publish 3 messages (the QP node's command, state
  record and activations).

Messages carry as many names and values as the arm has muscles. The baseline of the run is a
plain sleep loop at the driver rate without rclpy. Compare with the nodes' own figures from
``benchmarks/bench_graph.py``: what a node costs above the floor of its pattern is ours.

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

from musculo_control.bench.config import load_bench_config
from musculo_control.bench.measure import MachineLoad, markdown_table, write_reports
from musculo_control.loop.build import load_parts
from musculo_control.nodes.launcher import private_domain_id
from musculo_control.paths import default_config_dir


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


def _child(role: str, rate_hz: float, publish: int, names: int, seconds: float) -> None:
    """One process of a case: ``source`` (publishes ``in``), ``case`` (takes ``in``, publishes
    ``out0..``), ``sink`` (takes ``out0`` and ``out1``)."""
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = Node(f"floor_{role}")
    from musculo_control.nodes.ros_common import QOS_STATE_PUB as reliable  # the nodes' own

    queue = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                       reliability=ReliabilityPolicy.BEST_EFFORT,
                       durability=DurabilityPolicy.VOLATILE)
    msg = JointState()
    msg.name = [f"m{i}" for i in range(names)]
    msg.position = msg.velocity = msg.effort = array.array("d", [0.0] * names)

    def never(m: object) -> None:  # the subscriptions are taken from, never spun
        return None

    outputs = {"source": 1, "case": publish, "sink": 0}[role]
    pubs = [node.create_publisher(JointState, "in" if role == "source" else f"out{i}",
                                  reliable) for i in range(outputs)]
    subs = {"source": [], "case": ["in"], "sink": ["out0", "out1", "out2"]}[role]
    takes = [node.create_subscription(JointState, t, never, queue) for t in subs]
    clock = node.get_clock()

    def tick() -> None:
        for sub in takes:
            with sub.handle:
                while sub.handle.take_message(JointState, False) is not None:
                    pass
        for pub in pubs:
            msg.header.stamp = clock.now().to_msg()
            pub.publish(msg)

    share = _cpu_share(seconds, lambda s: _sleep_loop(rate_hz, s, tick))
    print(f"{share:.6f}", flush=True)
    node.destroy_node()
    rclpy.shutdown()


def _case(rate_hz: float, publish: int, names: int, source_hz: float, seconds: float,
          env: dict[str, str]) -> float:
    """CPU share of one core of a case process, its source and sink running beside it."""
    def start(role: str, hz: float, k: int, s: float) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, __file__, "--child", role, str(hz), str(k),
                                 str(names), str(s)], stdout=subprocess.PIPE, text=True,
                                env=env)

    helpers = [start("source", source_hz, 1, seconds + 6.0), start("sink", rate_hz, 0,
                                                                      seconds + 6.0)]
    time.sleep(2.0)  # discovery
    case = start("case", rate_hz, publish, seconds)
    out, _ = case.communicate(timeout=seconds + 60.0)
    for proc in helpers:
        proc.kill()
        proc.wait()
    if case.returncode != 0:
        raise SystemExit(f"floor case failed (exit {case.returncode})")
    return float(out.strip().splitlines()[-1])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        role, hz, k, names, seconds = sys.argv[2:7]
        _child(role, float(hz), int(k), int(names), float(seconds))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per case")
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    args = parser.parse_args()
    parts = load_parts(args.config)
    rates, loop = parts.drivers.rates, parts.controller.loop
    names = parts.robot.n_muscles
    machine = MachineLoad(load_bench_config(args.config).quiet_load_average)
    print(f"load average (1 min) at the start: {machine.start}")
    env = dict(os.environ, ROS_DOMAIN_ID=str(private_domain_id()))
    base = _cpu_share(args.duration, lambda s: _sleep_loop(rates.driver_rate_hz, s))
    rows = [{"case": f"baseline: plain sleep loop at {rates.driver_rate_hz:g} Hz, no rclpy",
             "cpu_share_of_one_core": round(base, 4), "vs_baseline": 1.0}]
    cases = [(rates.driver_rate_hz, k) for k in (0, 1, 2)] + [(loop.control_rate_hz, 3)]
    for hz, k in cases:
        print(f"case: wake at {hz:g} Hz, take, publish {k} ...", flush=True)
        share = _case(hz, k, names, rates.sensor_rate_hz, args.duration, env)
        rows.append({"case": f"rclpy: wake at {hz:g} Hz, take every {rates.sensor_rate_hz:g} "
                             f"Hz input, publish {k} JointState of {names}",
                     "cpu_share_of_one_core": round(share, 4),
                     "vs_baseline": round(share / base, 1) if base > 0 else float("nan")})
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
