"""Which rclpy executor a process of nodes spins: the EventsExecutor where rclpy has it.

rclpy's ``SingleThreadedExecutor`` rebuilds its wait set from every timer, subscription,
service and QoS-event waitable of its nodes at each wake-up (200-300 microseconds of CPU on
the 2-core test machine), so the tick loop lets it run only every ``housekeeping_period_s``
(:mod:`musculo_control.nodes.tick_loop`). ``rclpy.experimental.EventsExecutor`` (rclpy of
Jazzy from 7.1.4 and of Kilted; not Humble's) keeps a queue of events instead, filled by the
middleware's callbacks as messages, requests and timer deadlines come: waiting on it costs
nothing per entity, so the tick loop sleeps *in* it and runs what comes at once, and a node
may take a stream as it arrives instead of polling for it (the potentiometer node).

On simulated time a node's jobs run from the clock's jump callback, inside the handling of
the /clock message that reaches their deadline (:mod:`musculo_control.nodes.tick_loop`), under
either executor. While they ran from rclpy timers on the ROS clock the two differed: when
/clock messages queued up, the single-threaded executor ran the timers that were due before it
took the next message, while the EventsExecutor ran its events in the order they came, so a
tick could read a clock steps later than its deadline (measured then: the operator-stop graph
test left the hand 3 cm from its goal in 2 of 5 runs with the EventsExecutor on simulated
time, never with the single-threaded one); ``auto`` keeps the single-threaded executor on
simulated time.

Each node's ``executor`` parameter: ``auto`` (the default: the EventsExecutor where rclpy has
it, on the wall clock; the single-threaded one on simulated time or where rclpy has no
EventsExecutor), ``events`` (the EventsExecutor, also on simulated time; the single-threaded
one with a warning where rclpy has none) or ``single_threaded``; the nodes of one process must
resolve to the same one.

Newer sources of the EventsExecutor set their own SIGINT and SIGTERM handlers when it is made
(they stop it and shut the context down, before a node could send its last messages; the
Kilted wheel's, rclpy 9.1, does not): :func:`musculo_control.nodes.process.run_nodes` makes it
first and puts its own handlers back.
"""

from __future__ import annotations

from typing import Any

from rclpy.executors import Executor, SingleThreadedExecutor

from musculo_control.nodes.node_config import EXECUTOR_CHOICES

__all__ = ["EXECUTOR_CHOICES", "events_executor_class", "resolve", "make_executor", "is_events"]

EVENTS = "events"
SINGLE_THREADED = "single_threaded"


def events_executor_class() -> Any | None:
    """rclpy's EventsExecutor factory, or None where this rclpy has none (Humble)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return None
    return EventsExecutor


def resolve(choice: str, sim_time: bool = False) -> tuple[str, str]:
    """The executor a node's ``executor`` parameter gives here (``sim_time``: the node runs on
    simulated time): (``events`` or ``single_threaded``, a warning or '')."""
    if choice == SINGLE_THREADED or (choice == "auto" and sim_time):
        return SINGLE_THREADED, ""
    if events_executor_class() is not None:
        return EVENTS, ""
    if choice == EVENTS:
        return SINGLE_THREADED, ("executor 'events': this rclpy has no "
                                 "rclpy.experimental.EventsExecutor (Humble); running the "
                                 "single-threaded executor")
    return SINGLE_THREADED, ""


def make_executor(kind: str) -> Executor:
    """A new executor of ``kind`` (``events`` or ``single_threaded``) on the default context."""
    if kind == EVENTS:
        factory = events_executor_class()
        if factory is not None:
            return factory()  # type: ignore[no-any-return]
    return SingleThreadedExecutor()


def is_events(executor: Any) -> bool:
    """Whether ``executor`` is an EventsExecutor (it is not a subclass of rclpy's Executor)."""
    return not isinstance(executor, Executor)
