"""The node graph as the tests run it: real nodes in their own processes, real rclpy (the ROS 2
wheels of the test extra), one ROS_DOMAIN_ID per test, bounded time, processes torn down.

``running_graph`` starts exactly what ``mock_arm.launch.py`` starts (the same
:func:`~musculo_control.nodes.graph.graph_nodes`), by default on simulated time (the mock arm
publishes /clock below real time and holds it for a lagging node), and yields the processes
and an observer on the same domain. The judging helpers below (safe state, rates by stamps,
first event after an instant) serve these tests and the launch tests of ``launch_tests/``,
which watch the graph ``ros2 launch`` starts with the same observer.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from musculo_control.loop.parts import LoopParts
from musculo_control.nodes.graph import GraphOptions
from musculo_control.nodes.launcher import GraphProcesses
from musculo_control.nodes.node_config import ACTIVATION_QP_NODE, DYNAMICS_NODE, TENDON_DRIVER_NODE
from musculo_control.testing.observer import GraphObserver

#: Domain ids for the tests: apart from other runs on the machine (the pid), one per test.
_DOMAINS = itertools.count(1 + (os.getpid() % 20) * 4)
#: Real-time factor of the simulated-time tests: half speed leaves a loaded 2-core machine room.
SIM_RATE = 0.5
#: A step goal's tolerance [m], in the node-graph and launch tests. With the shipped integral
#: action (controller.gains.ki_s3) the hand ends 0.9-1.2 mm from a 10 cm step goal on the graph
#: (two runs) and 4.6 mm on the one-process launch (doc/ros.md); the paper's law alone stopped
#: 2.7-2.9 cm short in 2 of 3 runs, held there by the mock's wires' friction.
REACH_TOLERANCE_M = 0.01
#: Wall-clock limits of the waits [s].
START_TIMEOUT_S = 90.0


def domain_id() -> int:
    return 1 + next(_DOMAINS) % 100


@contextmanager
def running_graph(parts: LoopParts, workdir: Path, *, sim: bool = True, rtf: float = SIM_RATE,
                  lockstep: bool = True, goal_mode: str = "none",
                  extra: dict[str, dict[str, Any]] | None = None, fast_streams: bool = True,
                  **options: Any) -> Iterator[tuple[GraphProcesses, GraphObserver]]:
    """The graph of ``parts``' config folder, up and past its start-up, with an observer.

    A process per node unless ``one_process=True`` (the launch files' default): a test can
    stop one node's process; the real-time profile only with ``realtime=True``."""
    node_extra = {k: dict(v) for k, v in (extra or {}).items()}
    mock = node_extra.setdefault("mock_hardware_node", {})
    mock.setdefault("lockstep_timeout_s", 5.0)  # a loaded machine may stall a node for long
    # and a consumer waits for a sample the clock says was sent as long as it takes to come on
    # such a machine: one that gives up ticks on an older input, and when that is the dynamics
    # node's joint state, its snapshot's stamp holds the clock until lockstep_timeout_s ends
    for consumer in (TENDON_DRIVER_NODE, DYNAMICS_NODE, ACTIVATION_QP_NODE):
        node_extra.setdefault(consumer, {}).setdefault(
            "lockstep_wait_s", 0.4 * mock["lockstep_timeout_s"])
    options.setdefault("one_process", False)
    opts = GraphOptions(parts.config_dir, use_sim_time=sim, real_time_factor=rtf if sim else 1.0,
                        lockstep=sim and lockstep, goal_mode=goal_mode, extra=node_extra,
                        **options)
    domain = domain_id()
    graph = GraphProcesses(opts, workdir, domain_id=domain)
    observer = GraphObserver(parts, use_sim_time=sim, domain_id=domain, fast_streams=fast_streams)
    try:
        graph.start()
        yield graph, observer
    finally:
        observer.close()
        graph.stop()


def released(obs: GraphObserver) -> bool:
    """The controller holds the arm: the mock let it go and commands come."""
    mock = obs.diagnostics_of("mock_hardware_node")
    return bool(mock) and mock[-1].message == "running" and len(obs.commands) > 0


def wait_running(graph: GraphProcesses, obs: GraphObserver) -> float:
    """Wait until the controller holds the arm (the mock let it go and commands pull); the
    observer's time then [s]."""
    if not obs.wait_until(lambda: released(obs), START_TIMEOUT_S):
        raise AssertionError("the graph did not start:\n" + logs(graph))
    return obs.now_s()


def logs(graph: GraphProcesses, tail: int = 2000) -> str:
    return "\n".join(f"--- {name} (alive {graph.alive(name)}):\n{graph.log(name)[-tail:]}"
                     for name in graph.nodes)


def minimum_tension(tension_n: np.ndarray, f_min_n: float) -> bool:
    """Every muscle at the minimum tension (a cut, or a descend's end)."""
    return bool(np.all(np.abs(np.asarray(tension_n) - f_min_n) < 1e-6))


def stopping(commands: list[np.ndarray]) -> bool:
    """Each command no higher than the one before, tendon by tendon: a stop (a hold keeps the
    tensions, a descend lowers them, a cut is the minimum)."""
    values = np.asarray(commands, dtype=float)
    return len(values) > 0 and bool(np.all(np.diff(values, axis=0) <= 1e-6))


def first_rise(commands) -> str:
    """Where a recording of commands first rose, tendon by tendon (for a failed
    :func:`stopping`'s message): its stamp, the tendons and their values before and after."""
    values = np.asarray(commands.values, dtype=float)
    rises = np.argwhere(np.diff(values, axis=0) > 1e-6)
    if rises.size == 0:
        return "no rise"
    i = int(rises[0, 0])
    tendons = sorted({int(j) for k, j in rises if k == i})
    return (f"rose at {commands.t[i + 1]:.3f} s (after {commands.t[i]:.3f} s), tendons "
            f"{tendons}: {values[i, tendons].round(2).tolist()} -> "
            f"{values[i + 1, tendons].round(2).tolist()}")


def rate_by_stamps(stamps: list[float], t0: float, t1: float) -> tuple[float, float]:
    """(the publisher's rate from the median stamp interval [Hz], the share of its samples the
    observer received) over [t0, t1): the observer itself may drop samples when it is busy."""
    s = np.asarray(stamps)
    s = s[(s >= t0) & (s < t1)]
    rate = 1.0 / float(np.median(np.diff(s)))
    return rate, s.size / ((t1 - t0) * rate)


#: What each node counts of its output stream, in its diagnostics' values.
OUTPUT_COUNT = {"potentiometer_node": "published", "tendon_driver_node": "output ticks",
                "activation_qp_node": "ticks", "dynamics_node": "published"}


def rate_by_count(obs: GraphObserver, node: str, t0: float, t1: float) -> tuple[float, float]:
    """(the rate [Hz] at which ``node`` put out its stream over [t0, t1) by its own count, in
    its diagnostics stamped by its clock; that figure's resolution [Hz], one output over the
    span). A busy observer loses samples of a best-effort stream; the node's count does not."""
    key = OUTPUT_COUNT[node]
    points = sorted({(d.stamp, int(d.values[key])) for d in obs.diagnostics_of(node)
                     if key in d.values and t0 <= d.stamp < t1})
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        raise AssertionError(f"fewer than two diagnostics of {node} in [{t0:.3f}, {t1:.3f}) s")
    (s0, n0), (s1, n1) = points[0], points[-1]
    return (n1 - n0) / (s1 - s0), 1.0 / (s1 - s0)


def on_grid(stamps: list[float], t0: float, t1: float, period_s: float,
            tolerance: float = 0.05) -> float:
    """The share of the received stamps' intervals over [t0, t1) that are a whole number of
    ``period_s`` (within ``tolerance`` of one): a stream on its publisher's grid, however many
    of its samples the observer lost."""
    s = np.asarray(stamps)
    s = s[(s >= t0) & (s < t1)]
    periods = np.diff(s) / period_s
    whole = np.round(periods)
    return float(np.mean((whole >= 1) & (np.abs(periods - whole) <= tolerance)))


def errors_after(obs: GraphObserver, t0: float) -> list[Any]:
    """ERROR diagnostics received at or after ``t0``."""
    return [d for d in obs.diagnostics if d.t >= t0 and d.level >= 2]


def first_after(recording: Any, t0: float, condition: Any) -> float | None:
    """The first receive time at or after ``t0`` whose value meets ``condition``."""
    for t, value in zip(recording.t, recording.values):
        if t >= t0 and condition(value):
            return t
    return None


def first_diagnostic(obs: GraphObserver, t0: float, node: str, level: int,
                     words: tuple[str, ...] = ()) -> Any:
    """The first diagnostic of ``node`` at or after ``t0`` of at least ``level`` whose message
    holds every one of ``words``, or ``None``."""
    for d in obs.diagnostics_of(node):
        if d.t >= t0 and d.level >= level and all(w in d.message for w in words):
            return d
    return None


def config_copy(config_dir: Path, copy: Path, changes_by_file: dict[str, dict[str, Any]]) -> Path:
    """A copy of ``config_dir`` at ``copy`` with ``changes_by_file`` (file name -> dotted keys,
    which must exist, and their values; as ``--set``) written over it."""
    import shutil

    import yaml

    from musculo_control.config.parser import apply_overrides

    shutil.copytree(config_dir, copy)
    for name, changes in changes_by_file.items():
        data = apply_overrides(yaml.safe_load((copy / name).read_text()), changes, name)
        (copy / name).write_text(yaml.safe_dump(data, sort_keys=False))
    return copy
