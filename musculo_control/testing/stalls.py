"""Stalls: a process of the running node graph frozen (SIGSTOP), then let go (SIGCONT), at wall
clock, and what that did to the arm.

A lab computer pauses a process now and then (page faults, another program's burst, a
hypervisor); :func:`freeze` does that on purpose to the process of one node and measures, on the
mock arm's true hand and on the stops the tendon driver and the controller reported, whether
the pause dropped the arm (a driver that only held never sent minimum tension). The
graph runs as a lab runs it (``musculo graph``, ``ros2 launch``): the shared layout, the
tendon driver and the potentiometer node in a process of their own. ``test_stalls.py`` judges
the figures; ``benchmarks/bench_stalls.py`` reports them.
"""

from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from musculo_control.safety.supervisor_state import SupervisorState

if TYPE_CHECKING:  # the observer is rclpy's; this module stays importable without it
    from musculo_control.testing.observer import GraphObserver

#: A /diagnostics message of a latched fault begins so (the controller's report).
_LATCHED = SupervisorState.LATCHED


@dataclass(frozen=True)
class FreezeResult:
    """What one freeze of a process did to the arm."""

    node: str  # a node of the frozen process
    freeze_s: float  # how long it was frozen [s]
    hand_moved_m: float  # the true hand's largest distance from where it was at the freeze [m]
    hand_drop_m: float  # how far it fell below that height [m]
    hand_speed_max_m_s: float  # its largest speed, over SPEED_WINDOW_S [m/s]
    driver_stops: tuple[str, ...]  # the stops the tendon driver said it made ("hold", ...)
    controller_stops: tuple[str, ...]  # ... and the controller
    latched: tuple[str, ...]  # /diagnostics messages of a latched fault
    resumed: bool  # the controller runs again at the end of the window

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _stops(obs: GraphObserver, node: str, t0: float) -> tuple[str, ...]:
    """The stop phases ("hold", "descend", "cut") a node's /diagnostics named since ``t0``."""
    seen: list[str] = []
    for d in obs.diagnostics_of(node):
        if d.t < t0:
            continue
        for phase in ("hold", "descend", "cut"):
            if f"({phase})" in d.message.split(":", 1)[0] and phase not in seen:
                seen.append(phase)
    return tuple(seen)


#: The hand's speed is its displacement over this much time [s].
SPEED_WINDOW_S = 0.05
#: Before a freeze the hand must have kept within this of one point [m] ...
STILL_M = 0.002
#: ... for this long [s], so that what the freeze did is not the end of an earlier motion.
STILL_S = 1.0


def wait_still(obs: GraphObserver, timeout_s: float = 20.0) -> bool:
    """Wait until the true hand has stayed within :data:`STILL_M` for :data:`STILL_S`."""
    def still() -> bool:
        recent = obs.snapshot(obs.hand).since(obs.now_s() - STILL_S)
        if len(recent) < 10:
            return False
        path = np.asarray(recent.values, dtype=float).reshape(-1, 3)
        return float(np.linalg.norm(path - path[-1], axis=1).max()) <= STILL_M

    return obs.wait_until(still, timeout_s)


def freeze(graph: Any, obs: GraphObserver, node: str, freeze_s: float,
           settle_s: float = 2.0) -> FreezeResult:
    """Freeze the process of ``node`` for ``freeze_s`` [s] (wall time), once the hand is still
    (:func:`wait_still`), then watch the arm for ``settle_s`` more; the true hand
    (``mock/hand``) from the freeze on against where it was when the freeze began."""
    wait_still(obs)
    hand0 = np.asarray(obs.snapshot(obs.hand).values[-1], dtype=float)
    t0 = obs.now_s()
    pid = graph.pid(node)
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(freeze_s)
    finally:
        os.kill(pid, signal.SIGCONT)
    obs.wait_for(settle_s, settle_s + 60.0)
    return _measured(obs, node, freeze_s, t0, hand0)


def watch(obs: GraphObserver, seconds: float) -> FreezeResult:
    """Watch the arm for ``seconds`` without freezing anything (a row with node ``-`` and no
    freeze): what the load alone does to it."""
    hand0 = np.asarray(obs.snapshot(obs.hand).values[-1], dtype=float)
    t0 = obs.now_s()
    obs.wait_for(seconds, seconds + 120.0)
    return _measured(obs, "-", 0.0, t0, hand0)


def _measured(obs: GraphObserver, node: str, freeze_s: float, t0: float,
              hand0: np.ndarray) -> FreezeResult:
    """The row of a window that began at ``t0`` with the hand at ``hand0``."""
    hand = obs.snapshot(obs.hand).since(t0)
    path = np.asarray(hand.values, dtype=float).reshape(-1, 3)
    stamps = np.asarray(hand.stamp, dtype=float)
    moved = float(np.linalg.norm(path - hand0, axis=1).max()) if len(path) else math.nan
    drop = float(max(hand0[2] - path[:, 2].min(), 0.0)) if len(path) else math.nan
    speed = 0.0
    if len(path) > 1:
        # over SPEED_WINDOW_S: the arm's motion, not the jitter of two samples' stamps
        later = np.searchsorted(stamps, stamps + SPEED_WINDOW_S)
        ok = later < len(stamps)
        if np.any(ok):
            i, j = np.flatnonzero(ok), later[ok]
            speed = float((np.linalg.norm(path[j] - path[i], axis=1)
                           / (stamps[j] - stamps[i])).max())
    qp = obs.diagnostics_of("activation_qp_node")
    latched = tuple(d.message for d in qp if d.t >= t0 and d.message.startswith(_LATCHED))
    resumed = bool(qp) and qp[-1].message.startswith(SupervisorState.RUNNING)
    return FreezeResult(node, freeze_s, moved, drop, speed,
                        _stops(obs, "tendon_driver_node", t0),
                        _stops(obs, "activation_qp_node", t0), latched, resumed)


def freezes_markdown(results: list[FreezeResult]) -> str:
    """The freezes as a Markdown table."""
    lines = ["| frozen | for [ms] | hand moved [cm] | drop [cm] | max speed [m/s] "
             "| driver's stops | controller's stops | latched | resumed |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.node} | {1e3 * r.freeze_s:.0f} | {100 * r.hand_moved_m:.2f} | "
                     f"{100 * r.hand_drop_m:.2f} | {r.hand_speed_max_m_s:.2f} | "
                     f"{', '.join(r.driver_stops) or '-'} | "
                     f"{', '.join(r.controller_stops) or '-'} | {len(r.latched)} | "
                     f"{'yes' if r.resumed else '**no**'} |")
    return "\n".join(lines) + "\n"
