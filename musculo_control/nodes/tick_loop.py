"""The tick loop of a node, or of the nodes of one process.

rclpy's SingleThreadedExecutor costs 200 to 300 microseconds of CPU per wake-up on the 2-core
test machine (it rebuilds its wait set from every timer, subscription, service and QoS-event
waitable at each wake-up), which at 500 Hz is a quarter of a core per node before any work. A
MultiThreadedExecutor adds locking and no parallelism (the GIL). So a node's periodic work runs
in :class:`TickLoop`, whose deadlines are :class:`~musculo_control.loop.timing.Schedule` objects
(the same rules, tested on a fake clock: a drift-free grid, a late tick counted and the grid
restarted from it, never two ticks bunched). In real time the loop sleeps to the next deadline
and every ``housekeeping_period_s`` lets the executor run whatever is ready (parameter and
acknowledge services, the gauge topic, the diagnostics timer) without blocking. On simulated
time (``use_sim_time``) each step of the ROS clock, set by /clock, runs the jobs its
schedules say are due (:meth:`TickLoop._follow_clock`).

With rclpy's EventsExecutor (:mod:`musculo_control.nodes.executors`) there is no wait set to
rebuild: the loop waits for the next deadline *in* the executor, which runs each event (a
service request, a timer, a message of a subscription the node takes as it arrives: the
potentiometer node's samples) the moment it comes. Measured on the 2-core test machine, a
wait in it costs about 25 microseconds of CPU more than a sleep, and serving it every
housekeeping period from a sleep loop as much as that for a 500 Hz loop and more for slower
ones (each call into it is some 60 microseconds cold).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.executors import ShutdownException, TimeoutException
from rclpy.node import Node

from musculo_control.loop.timing import Schedule
from musculo_control.nodes.executors import is_events


class TickLoop:
    """A node's periodic work on :class:`Schedule` deadlines (see the module docstring)."""

    def __init__(self, node: Node, housekeeping_period_s: float,
                 wall_clock: bool | None = None) -> None:
        self.node = node
        self.housekeeping_period_s = housekeeping_period_s
        # the loop runs on the wall clock unless the node runs on simulated time
        self.wall_clock = (not node.get_parameter("use_sim_time").value
                           if wall_clock is None else wall_clock)
        self.jobs: list[tuple[Schedule, Callable[[], None]]] = []
        self._unreported: set[int] = set()  # ids of the schedules values() leaves out
        self._on_clock: Any = None  # the clock's jump handler (simulated time)
        self.failure: BaseException | None = None  # a job's exception there, to raise

    def every(self, period_s: float, work: Callable[[], None], report: bool = True) -> Schedule:
        """Call ``work`` every ``period_s`` (wall time, or ROS time on simulated time); its
        ticks are counted in :meth:`values` unless ``report`` is false (the node's own
        reports: /diagnostics, timing)."""
        if self.wall_clock:
            schedule = Schedule(period_s, time.monotonic())
        else:
            schedule = Schedule(period_s, self._clock_s())
            if self._on_clock is None:
                self._follow_clock()
        self.jobs.append((schedule, work))
        if not report:
            self._unreported.add(id(schedule))
        return schedule

    def _clock_s(self) -> float:
        return float(self.node.get_clock().now().nanoseconds) * 1e-9

    def _follow_clock(self) -> None:
        """On simulated time: every forward step of the ROS clock runs the jobs that are due,
        from the clock's jump callback (in the executor's thread, inside the /clock
        subscription's callback that set the time), so a job runs on the clock step that
        reaches its deadline, under either executor.

        Not rclpy timers on the ROS clock: such a timer keeps its own grid, which the
        schedule's grid, restarted after a late tick, need not match; refused there, the job
        waited a period for the timer's next call, and the mock arm's lockstep holds the clock
        until the job's output comes, so that call never came (seen in the graph tests: the
        clock held until the mock gave up on the node, then a stale input and minimum tension;
        ``test/test_executors.py``). rcl calls the jump callback from C, where a Python
        exception must not pass: a job's exception is kept and raised from the spin
        (:func:`spin_until`)."""
        def on_jump(_jump: Any) -> None:
            if self.failure is not None:
                return
            try:
                now = self._clock_s()
                for schedule, work in self.jobs:
                    if schedule.due(now):
                        work()
            except BaseException as exc:  # noqa: BLE001 - raised from the spin instead
                self.failure = exc

        self._on_clock = self.node.get_clock().create_jump_callback(
            JumpThreshold(min_forward=Duration(nanoseconds=1), min_backward=None,
                          on_clock_change=False),
            post_callback=on_jump)

    def values(self) -> dict[str, str]:
        """Late and skipped ticks of every job (for diagnostics)."""
        reported = [s for s, _ in self.jobs if id(s) not in self._unreported]
        return {f"job {i} ({1.0 / s.period_s:g} Hz) ticks / late / skipped":
                f"{s.ticks} / {s.late} / {s.skipped}" for i, s in enumerate(reported)}


def _housekeeping(executor: Any, most: int = 10) -> None:
    """Run the callbacks that are ready now (at most ``most``), without blocking."""
    for _ in range(most):
        try:
            handler, _, _ = executor.wait_for_ready_callbacks(timeout_sec=0.0)
        except (TimeoutException, ShutdownException):
            return
        handler()
        exc = handler.exception()
        if exc is not None:
            raise exc


#: Poll period of a plain executor loop for the stop request [s].
_STOP_POLL_S = 0.1


def spin_until(executor: Any, stop: threading.Event,
               loops: Sequence[TickLoop] = ()) -> None:
    """The executor's spin, until ``stop`` is set; a job of ``loops`` that raised on
    simulated time raises here."""
    while not stop.is_set():
        executor.spin_once(timeout_sec=_STOP_POLL_S)
        for loop in loops:
            if loop.failure is not None:
                raise loop.failure


def spin_tick_loops(loops: Sequence[TickLoop], executor: Any,
                    stop: threading.Event) -> None:
    """Run the jobs of every loop in ``loops`` (the nodes of one process) until ``stop``.

    Wall-clock jobs: one thread sleeps to the earliest deadline of all of them and runs every
    job that is due, in the order the nodes were given; every (shortest) housekeeping period
    the executor serves what is ready. Jobs on simulated time run when the executor handles
    the /clock message that reaches their deadline. A process with both (the potentiometer
    node polls on the wall clock on simulated time too, beside nodes on /clock) runs its
    wall-clock jobs in a second thread while the executor spins in this one: an executor woken
    every poll period rebuilds its wait set each time and would fall behind /clock. (Polling
    the simulated-time jobs from that thread instead was tried: a job then reads the clock
    after /clock moved between its due check and its stamp, and two outputs carry one stamp.)
    """
    wall = [job for loop in loops if loop.wall_clock for job in loop.jobs]
    timers = any(not loop.wall_clock and loop.jobs for loop in loops)
    if not wall:
        spin_until(executor, stop, loops)
        return
    housekeeping_s = min(loop.housekeeping_period_s for loop in loops)
    if not timers:
        _wall_loop(wall, stop, executor, housekeeping_s)
        return
    failed: list[BaseException] = []

    def wall_thread() -> None:
        try:
            _wall_loop(wall, stop, None, housekeeping_s)
        except BaseException as exc:  # handed to the main thread, which re-raises it
            failed.append(exc)
            stop.set()

    thread = threading.Thread(target=wall_thread, name="wall-clock jobs", daemon=True)
    thread.start()
    try:
        spin_until(executor, stop, loops)
    finally:
        stop.set()
        thread.join()
    if failed:
        raise failed[0]


def _wall_loop(jobs: Sequence[tuple[Schedule, Callable[[], None]]], stop: threading.Event,
               executor: Any, housekeeping_s: float) -> None:
    """Sleep to the earliest deadline, run what is due; with ``executor``, let it serve what
    is ready every ``housekeeping_s``, or, an EventsExecutor, wait in it to the deadline,
    serving each event as it comes."""
    now = time.monotonic()
    for schedule, _ in jobs:
        schedule.next_s = now
    housekeeping = Schedule(housekeeping_s, now)
    wait_in_executor = executor is not None and is_events(executor)
    serves = executor is not None and not wait_in_executor
    schedules = [s for s, _ in jobs] + ([housekeeping] if serves else [])
    while not stop.is_set():
        delay = min(s.next_s for s in schedules) - time.monotonic()
        if wait_in_executor:
            executor.spin_once(timeout_sec=max(delay, 0.0))  # returns after one event
        elif delay > 0.0:
            time.sleep(delay)
        for schedule, work in jobs:
            if schedule.due(time.monotonic()):
                work()
        if serves and housekeeping.due(time.monotonic()):
            _housekeeping(executor)
