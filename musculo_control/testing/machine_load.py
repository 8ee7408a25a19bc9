"""Load on purpose: busy loops that stand for the rest of a lab computer's work.

A lab runs the graph on a computer that also runs RViz, a bag recorder, cameras; a behaviour
seen only on an idle machine is not proven. :func:`busy_loops` starts processes that spin at
the normal priority for at most a given time (they end by themselves if their parent dies) and
stops them on the way out. Used by ``musculo simulate faults --graph --wall-clock
--busy-loops N``, ``musculo soak --graph`` and the wall-clock tests.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager


def _spin(deadline: float) -> None:
    # a session of its own, as another program of the lab's would have: where the kernel
    # schedules by session autogroups, a busy loop in the caller's session would share the
    # caller's group (the observer's, in a test) instead of competing with it as a peer
    os.setsid()
    x = 0
    while time.monotonic() < deadline:
        x += 1


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextmanager
def busy_loops(count: int, seconds: float) -> Iterator[int]:
    """``count`` processes (0: none; -1: one per core) that spin for at most ``seconds`` [s]."""
    n = cores() if count < 0 else count
    deadline = time.monotonic() + seconds
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_spin, args=(deadline,), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        yield n
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(5.0)
