"""CPU of the driver nodes' own work, in one process: a tendon-driver tick and a potentiometer
sample, each after a sleep as in the graph.

The graph benchmark (``bench_graph.py``) measures each node's process: its CPU share mixes the
node's Python with rclpy's and the middleware's threads, and on a shared computer the nodes'
work rates move from run to run. Here a ``tendon_driver_node`` and a ``potentiometer_node`` are
built in this process (``--namespace``: their topics' namespace, so that two runs of this file,
say of two versions of the package side by side, do not see each other's samples), fed by
publishers of this process (a tendon state every tick, a controller command every fourth, as
at 500 and 125 Hz), and the CPU time of this thread (``time.thread_time``) is summed over each
call of the node's work: the driver's tick job, the potentiometer node's handling of one
sample. Between two calls the process sleeps ``--sleep-ms`` (the graph's period): the caches
are then as cold as a node's are at its next wake-up, which on a busy 2-core computer costs
several times what the same calls cost back to back (printed beside: ``hot``).

    python benchmarks/bench_node_tick.py [--config DIR] [--calls N] [--sleep-ms MS]
                                         [--namespace NS]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from musculo_control.paths import default_config_dir


def _per_call_us(calls: int, sleep_s: float, feed: Callable[[int], object],
                 work: Callable[[object], None]) -> float:
    """Mean CPU time of this thread per ``work(feed(i))`` [us], ``sleep_s`` before each."""
    total = 0.0
    for i in range(calls):
        fed = feed(i)
        if sleep_s > 0.0:
            time.sleep(sleep_s)
        t0 = time.thread_time()
        work(fed)
        total += time.thread_time() - t0
    return 1e6 * total / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=default_config_dir())
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--sleep-ms", type=float, default=2.0)
    parser.add_argument("--namespace", default="bench_node_tick")
    args = parser.parse_args()
    try:
        import rclpy
        from rclpy.node import Node
        from sensor_msgs.msg import JointState
    except ImportError as exc:
        print(f"bench_node_tick needs rclpy ({exc}): pip install -e '.[ros]'", file=sys.stderr)
        return 2
    config = args.config.resolve()
    rclpy.init(args=["bench_node_tick", "--ros-args", "--params-file",
                     str(config / "ros_params.yaml"), "-p", f"config_dir:={config}",
                     "-r", f"__ns:=/{args.namespace}"])
    from musculo_control.loop.driver_parts import load_driver_parts
    from musculo_control.nodes.executors import EVENTS
    from musculo_control.nodes.node_config import ACTIVATION_QP_NODE
    from musculo_control.nodes.potentiometer_node import PotentiometerNode
    from musculo_control.nodes.ros_common import MSGS, QOS_STATE_PUB, now_stamp
    from musculo_control.nodes.tendon_driver_node import TendonDriverNode
    from musculo_control.serialized import SerializedJointStateWriter

    parts = load_driver_parts(config)
    cal = parts.drivers.calibration
    m = len(parts.muscle_names)
    sleep_s = args.sleep_ms * 1e-3
    rows = []

    # the tendon driver: a tendon state each tick, a command of its commander every fourth
    driver = TendonDriverNode()
    job = driver.tick_loop.jobs[0][1]
    commander, arm = Node(ACTIVATION_QP_NODE), Node("bench_arm")
    states = SerializedJointStateWriter(MSGS, [str(a) for a in parts.actuator_ids])
    commands = SerializedJointStateWriter(MSGS, parts.muscle_names)
    state_pub = arm.create_publisher(JointState, "hw/tendon_states", QOS_STATE_PUB)
    command_pub = commander.create_publisher(JointState, "muscle_commands", QOS_STATE_PUB)
    encoder = cal.length_to_encoder(cal.reference_length_m)
    cells = cal.n_to_loadcell(np.full(m, 20.0))
    time.sleep(1.0)  # discovery

    def feed_driver(i: int) -> None:
        stamp = now_stamp(arm)
        state_pub.publish(states.write(stamp, position=encoder + 0.1 * (i % 7), effort=cells))
        if i % 4 == 0:
            command_pub.publish(commands.write(stamp, effort=np.full(m, 20.0 + i % 3)))

    for sleep in (sleep_s, 0.0):
        us = _per_call_us(args.calls, sleep, feed_driver, lambda _: job())
        rows.append(("tendon_driver_node: one tick", "cold" if sleep else "hot", us))

    # the potentiometer node: one sample handed over, as the EventsExecutor does (where
    # rclpy has none the node polls instead: not measured here)
    pot = PotentiometerNode()
    samples = SerializedJointStateWriter(MSGS, parts.joint_names)
    counts = cal.rad_to_counts(np.zeros(len(parts.joint_names)))

    def feed_pot(i: int) -> bytes:
        return samples.write(now_stamp(pot), position=counts + i % 5)

    for sleep in (sleep_s, 0.0) if pot.executor_kind == EVENTS else ():
        us = _per_call_us(args.calls, sleep, feed_pot, pot._on_counts)  # type: ignore[arg-type]
        rows.append(("potentiometer_node: one sample", "cold" if sleep else "hot", us))

    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"CPU of this thread per call, mean of {args.calls} ({args.sleep_ms:g} ms asleep "
          f"before each 'cold' call); 1-min load average {load} at the end")
    for what, how, us in rows:
        print(f"  {what:34s} {how:5s} {us:8.1f} us")
    for node in (driver, pot, commander, arm):
        node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
