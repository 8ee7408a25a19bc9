"""The soak on the running node graph at wall clock (``musculo soak --graph``): what a lab's arm
does for half an hour on a loaded computer.

The schedule is the runner's soak (:class:`~musculo_control.sim.soak_schedule.SoakSchedule`,
``reliability.yaml`` ``soak``): random reachable hand goals (minimum-jerk moves, holds), pushes on
the elbow with the mock's hand-held gauge, rests at the start goal. An observer plays it on
``hand_goal/trajectory`` and ``mock/gauge`` against the graph the launch files start (on the
wall clock, the default layout, optionally the real-time profile and spinning processes that
load the machine), acknowledges a latched fault after ``acknowledge_after_s`` as an operator
would, and measures:

- latched faults, and the QP node's ticks at minimum tension (``controller/state``) with the
  episodes and rules its /diagnostics name;
- the true hand's error (``mock/hand``) against the goal in the quiet windows of rests and
  holds (p50 / p99 / max), and its drift at rest;
- each process's resident memory after the warm-up and at the end.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from musculo_control.loop.parts import LoopParts
from musculo_control.nodes.graph import GraphOptions, layout_label
from musculo_control.nodes.launcher import GraphProcesses, private_domain_id
from musculo_control.safety.supervisor_state import SupervisorState
from musculo_control.sim.rig import Rig
from musculo_control.sim.setup import Setup, start_pose
from musculo_control.sim.soak_schedule import SoakConfig, SoakSchedule
from musculo_control.testing.machine_load import busy_loops
from musculo_control.testing.observer import GraphObserver

#: How often the observer sends the goal and moves the gauge [s].
_GOAL_PERIOD_S = 0.02
#: Wall-clock bound of the start-up [s].
_START_TIMEOUT_S = 120.0


@dataclass
class GraphSoakOptions:
    """How the graph runs for the soak."""

    realtime: bool = True  # the config folder's real-time profile (realtime.yaml)
    busy_loops: int = 1  # spinning processes loading the machine (-1: one per core)
    one_process: bool = True  # the launch files' default layout: the shared one


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return math.nan


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": math.nan, "p99": math.nan, "max": math.nan}
    a = np.asarray(values)
    p50, p99 = np.percentile(a, [50, 99])
    return {"p50": float(p50), "p99": float(p99), "max": float(a.max())}


def run_graph_soak(setup: Setup, parts: LoopParts, cfg: SoakConfig, options: GraphSoakOptions,
                   workdir: Path, progress: Any = None) -> dict[str, Any]:
    """Run the soak on the graph for ``cfg.duration_s`` wall seconds; the figures."""
    rig = Rig(setup, cfg.controller)
    q0 = start_pose(setup.robot, cfg.start_pose)
    schedule = SoakSchedule(rig, cfg, q0)
    radius = setup.mock_config.gauge.contact_radius_m
    graph_options = GraphOptions(parts.config_dir, controller=cfg.controller,
                                 use_sim_time=False, goal_mode="none",
                                 one_process=options.one_process, realtime=options.realtime,
                                 extra={"mock_hardware_node": {
                                     "initial_pose_rad": [float(v) for v in q0]}})
    domain = private_domain_id()
    seconds = cfg.duration_s + _START_TIMEOUT_S + 60.0
    figures: dict[str, Any] = {}
    with busy_loops(options.busy_loops, seconds) as n_busy, \
            GraphProcesses(graph_options, workdir, domain_id=domain) as graph, \
            GraphObserver(parts, domain_id=domain, fast_streams=False) as obs:
        def running() -> bool:
            mock = obs.diagnostics_of("mock_hardware_node")
            return bool(mock) and mock[-1].message == "running" and len(obs.commands) > 0

        if not obs.wait_until(running, _START_TIMEOUT_S):
            raise RuntimeError(f"the graph did not start: node logs in {workdir}")
        pids = {name: proc.pid for name, proc in graph.processes.items()}
        refused = [line.strip() for name in graph.nodes for line in graph.log(name).splitlines()
                   if "not permitted" in line]
        t0 = obs.now_s()
        rss_start: dict[str, float] = {}
        acknowledged = 0
        latch_seen_t: float | None = None
        errors: list[tuple[str, float, float]] = []  # (quiet kind, time, |hand - goal|)
        push_tip: np.ndarray | None = None
        next_line = cfg.memory_every_s
        while True:
            t = obs.now_s() - t0
            if t >= cfg.duration_s:
                break
            goal = schedule.goal_at(t)
            quat = _quaternion(goal.rotation)
            obs.send_goal_point(goal.position_m, quat, goal.velocity_m_s,
                                goal.acceleration_m_s2)
            push = schedule.seg.push
            if push is not None and push[0] <= t < push[1]:
                t_touch, _, axis, depth = push
                if push_tip is None and len(obs.elbow) > 0:
                    push_tip = obs.snapshot(obs.elbow).values[-1] - radius * axis
                if push_tip is not None:
                    s = min((t - t_touch) / cfg.push_s, 1.0)
                    obs.push_gauge(push_tip + s * depth * axis, axis)
            elif push_tip is not None:
                obs.clear_gauge()
                push_tip = None
            quiet = schedule.quiet(t)
            if quiet and len(obs.hand) > 0:
                hand = obs.snapshot(obs.hand).values[-1]
                errors.append((quiet, t, float(np.linalg.norm(hand - goal.position_m))))
            latched = obs.controller_state.values[-1]["supervisor_state"] == 3.0 \
                if len(obs.controller_state) else False
            if latched:
                latch_seen_t = t if latch_seen_t is None else latch_seen_t
                if t - latch_seen_t >= cfg.acknowledge_after_s:
                    obs.acknowledge()
                    acknowledged += 1
                    latch_seen_t = None
            if not rss_start and t >= cfg.warmup_s:
                rss_start = {name: _rss_mb(pid) for name, pid in pids.items()}
            if progress is not None and t >= next_line:
                next_line += cfg.memory_every_s
                progress(f"  {t:7.0f} s of {cfg.duration_s:.0f} s: "
                         f"{_unsafe(obs, t0)} ticks at minimum tension, {acknowledged} "
                         f"acknowledged, RSS "
                         + ", ".join(f"{n} {_rss_mb(p):.0f} MB" for n, p in pids.items()))
            time.sleep(_GOAL_PERIOD_S)
        rss_end = {name: _rss_mb(pid) for name, pid in pids.items()}
        states = obs.snapshot(obs.controller_state).since(t0)
        codes = np.array([s["supervisor_state"] for s in states.values])
        qp = [d for d in obs.diagnostics_of("activation_qp_node") if d.t >= t0]
        latches = sorted({d.message for d in qp if d.message.startswith(SupervisorState.LATCHED)})
        episodes = qp[-1].values.get("minimum-tension episodes", "") if qp else ""
        figures = {
            "duration_s": cfg.duration_s, "busy_loops": n_busy, "realtime": options.realtime,
            "realtime_refused": refused, "layout": layout_label(graph_options),
            "ticks": int(codes.size), "ticks_at_minimum_tension": int(np.count_nonzero(codes)),
            "minimum_tension_fraction": float(np.count_nonzero(codes) / max(codes.size, 1)),
            "latched": latches, "acknowledged": acknowledged, "episodes": episodes,
            "hand_error_rest_m": _stats([e for k, _, e in errors if k == "rest"]),
            "hand_error_hold_m": _stats([e for k, _, e in errors if k == "hold"]),
            "rest_drift_m": _rest_drift([(t, e) for k, t, e in errors if k == "rest"]),
            "rss_start_mb": {k: round(v, 1) for k, v in rss_start.items()},
            "rss_end_mb": {k: round(v, 1) for k, v in rss_end.items()},
            "rests": schedule.rests,
        }
    return figures


def _unsafe(obs: GraphObserver, t0: float) -> int:
    states = obs.snapshot(obs.controller_state).since(t0)
    return sum(1 for s in states.values if s["supervisor_state"] != 0.0)


def _rest_drift(samples: list[tuple[float, float]]) -> float:
    """The largest change of the hand's rest error between the first rest and any later one
    (each rest's median) [m]."""
    if not samples:
        return math.nan
    rests: list[list[float]] = [[]]
    last_t = samples[0][0]
    for t, e in samples:
        if t - last_t > 1.0:
            rests.append([])
        rests[-1].append(e)
        last_t = t
    medians = [float(np.median(r)) for r in rests if r]
    return max(abs(m - medians[0]) for m in medians)


def _quaternion(rotation: Any) -> np.ndarray:
    from musculo_control.messages import quaternion_from_rotation

    if rotation is None:
        return np.array([0.0, 0.0, 0.0, 1.0])
    return np.asarray(quaternion_from_rotation(rotation))
