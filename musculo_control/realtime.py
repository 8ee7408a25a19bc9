"""The real-time profile of a process of nodes: how its threads are scheduled (no ROS here).

A lab computer also runs RViz, a bag recorder and cameras; on the normal scheduler a node's
tick waits behind them. :class:`SchedulingProfile` asks the kernel for what a control loop
needs, as ros2_control's controller manager does for its update thread:

- ``realtime_priority``: SCHED_FIFO at this (low) priority for the *tick thread* only (the
  thread that calls :meth:`SchedulingProfile.apply`, which then runs every tick of the
  process). The middleware's threads stay on the normal scheduler: a runaway real-time thread
  of the DDS stack could starve the whole machine. The kernel's real-time throttling
  (``/proc/sys/kernel/sched_rt_runtime_us``) is left as it is.
- ``nice``: the niceness of every other thread of the process (the DDS threads that receive
  the samples the ticks take), so that they win their share of the CPU against other work
  without leaving the normal scheduler; and of the process's scheduling autogroup where the
  kernel groups processes by session (``/proc/sys/kernel/sched_autogroup_enabled``): there a
  thread's niceness counts only inside its group, and a group of busy processes in another
  session took the CPU from the middleware's threads for up to 100 ms (measured: samples and
  commands between the mock arm and the controller 60-105 ms late with a busy loop per core).
  The autogroup is the session's: every process of it shares the niceness.
- ``cpu_affinity``: the CPUs the tick thread may run on (empty: any).
- ``lock_memory``: ``mlockall`` of the process's current and future pages (no page fault in a
  tick).

Each request that the process is not permitted (no CAP_SYS_NICE, CAP_IPC_LOCK or rtprio /
memlock limit) falls back to the normal behaviour with a warning naming what was refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: mlockall flags (Linux <sys/mman.h>)
_MCL_CURRENT, _MCL_FUTURE = 1, 2


@dataclass(frozen=True)
class SchedulingProfile:
    """What one process asks of the scheduler (see the module docstring)."""

    realtime_priority: int = 0  # SCHED_FIFO priority of the tick thread; 0: normal scheduler
    nice: int = 0  # niceness of the process's other threads; 0: unchanged
    cpu_affinity: tuple[int, ...] = ()  # CPUs of the tick thread; empty: any
    lock_memory: bool = False  # mlockall(MCL_CURRENT | MCL_FUTURE)

    @staticmethod
    def strongest(profiles: list[SchedulingProfile]) -> SchedulingProfile:
        """One profile for a process of several nodes: the highest priority, the lowest
        niceness, the union of the CPUs, memory locked if any node asks."""
        if not profiles:
            return SchedulingProfile()
        cpus = sorted({c for p in profiles for c in p.cpu_affinity})
        return SchedulingProfile(max(p.realtime_priority for p in profiles),
                                 min(p.nice for p in profiles), tuple(cpus),
                                 any(p.lock_memory for p in profiles))

    @property
    def asked(self) -> bool:
        return bool(self.realtime_priority or self.nice or self.cpu_affinity
                    or self.lock_memory)

    def apply(self) -> tuple[list[str], list[str]]:
        """Apply the profile from the tick thread; (what was done, what was refused and why)."""
        done: list[str] = []
        refused: list[str] = []
        if self.nice:
            tick = threading_native_id()
            others = [t for t in thread_ids() if t != tick]
            try:
                for tid in others:
                    os.setpriority(os.PRIO_PROCESS, tid, self.nice)
                done.append(f"nice {self.nice} for {len(others)} other threads")
            except OSError as exc:
                refused.append(f"nice {self.nice}: {exc.strerror or exc}")
            if _autogroups_on():
                try:
                    Path("/proc/self/autogroup").write_text(f"{self.nice}\n")
                    done.append(f"autogroup nice {self.nice}")
                except OSError as exc:
                    refused.append(f"autogroup nice {self.nice}: {exc.strerror or exc}")
        if self.cpu_affinity:
            try:
                os.sched_setaffinity(0, set(self.cpu_affinity))
                done.append(f"tick thread on CPUs {list(self.cpu_affinity)}")
            except (OSError, ValueError) as exc:
                refused.append(f"cpu_affinity {list(self.cpu_affinity)}: {exc}")
        if self.lock_memory:
            try:
                _mlockall()
                done.append("memory locked")
            except OSError as exc:
                refused.append(f"lock_memory: {exc.strerror or exc}")
        if self.realtime_priority:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO,
                                      os.sched_param(self.realtime_priority))
                done.append(f"tick thread on SCHED_FIFO priority {self.realtime_priority}")
            except (OSError, AttributeError) as exc:
                refused.append(f"realtime_priority {self.realtime_priority} (SCHED_FIFO): "
                               f"{getattr(exc, 'strerror', None) or exc}")
        return done, refused


def _autogroups_on() -> bool:
    """Whether the kernel schedules by session autogroups."""
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1" \
            and Path("/proc/self/autogroup").exists()
    except OSError:
        return False


def thread_ids() -> list[int]:
    """The kernel ids of every thread of this process."""
    return sorted(int(p.name) for p in Path("/proc/self/task").iterdir())


def threading_native_id() -> int:
    """The kernel id of the calling thread."""
    import threading

    return threading.get_native_id()


def _mlockall() -> None:
    import ctypes  # only when memory is to be locked (ctypes.util loads subprocess)
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.mlockall(_MCL_CURRENT | _MCL_FUTURE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
