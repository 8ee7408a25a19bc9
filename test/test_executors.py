"""The executors a node process can spin (nodes/executors.py): rclpy's EventsExecutor where rclpy
has it (Jazzy 7.1.4 on, Kilted), the single-threaded one everywhere (Humble's path). Whichever
runs, a node's tick loop must behave the same: on simulated time a job runs on the same /clock
values (the lockstep graph tests depend on it), on the wall clock jobs, services and callbacks
run, and a node process stopped by SIGINT still sends its last messages with a live context."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from graph_harness import domain_id  # noqa: E402

from musculo_control.nodes.discovery import localhost_discovery  # noqa: E402
from musculo_control.nodes.executors import (  # noqa: E402
    EVENTS,
    SINGLE_THREADED,
    events_executor_class,
    is_events,
    make_executor,
    resolve,
)
from musculo_control.nodes.node_config import CommonNodeParams  # noqa: E402
from musculo_control.paths import default_config_dir  # noqa: E402

KINDS = [SINGLE_THREADED] + ([EVENTS] if events_executor_class() is not None else [])


def test_auto_is_the_events_executor_where_rclpy_has_it_on_the_wall_clock(monkeypatch):
    has = events_executor_class() is not None
    assert resolve("auto") == (EVENTS if has else SINGLE_THREADED, "")
    assert resolve("auto", sim_time=True) == (SINGLE_THREADED, "")
    assert resolve("events", sim_time=True) == (EVENTS if has else SINGLE_THREADED,
                                                "" if has else resolve("events")[1])
    assert resolve("single_threaded") == (SINGLE_THREADED, "")
    import musculo_control.nodes.executors as executors

    monkeypatch.setattr(executors, "events_executor_class", lambda: None)
    kind, warning = executors.resolve("events")
    assert kind == SINGLE_THREADED and "EventsExecutor" in warning
    assert executors.resolve("auto") == (SINGLE_THREADED, "")


class _Spinning:
    """The tick loops of ``nodes`` on an executor of ``kind``, in a thread."""

    def __init__(self, kind: str, nodes) -> None:
        from musculo_control.nodes.tick_loop import spin_tick_loops

        self.executor = make_executor(kind)
        assert is_events(self.executor) == (kind == EVENTS)
        for node in nodes:
            self.executor.add_node(node)
        self.stop = threading.Event()
        self.failed: list[BaseException] = []

        def run() -> None:
            try:
                spin_tick_loops([n.tick_loop for n in nodes], self.executor, self.stop)
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                self.failed.append(exc)

        self.thread = threading.Thread(target=run, daemon=True)

    def __enter__(self) -> _Spinning:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10.0)
        assert not self.thread.is_alive()
        assert not self.failed, self.failed


def _wait(condition, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.002)
    return condition()


class _SimTicker:
    """A node on simulated time with a 10 ms job that records the clock of each run, and a
    /clock publisher; :meth:`step` publishes a clock and waits until the node has it."""

    def __init__(self) -> None:
        from rosgraph_msgs.msg import Clock

        from musculo_control.nodes.ros_common import StageNode

        self.node = StageNode("ticker", CommonNodeParams, wall_clock=False)
        self.node.set_parameters([rclpy.parameter.Parameter("use_sim_time", value=True)])
        self.seen: list[float] = []
        self.node.every(0.01, lambda: self.seen.append(round(self.node.clock_s(), 6)))
        self.clock_node = rclpy.create_node("clock_source")
        self.pub = self.clock_node.create_publisher(Clock, "/clock", 10)
        assert _wait(lambda: self.pub.get_subscription_count() > 0)

    def step(self, t_s: float) -> None:
        from musculo_control import messages
        from musculo_control.nodes.ros_common import MSGS
        from musculo_control.stamps import Stamp

        self.pub.publish(messages.clock_msg(MSGS, Stamp.from_seconds(t_s)))
        assert _wait(lambda: abs(self.node.clock_s() - t_s) < 1e-9), (t_s, self.node.clock_s())


@pytest.mark.parametrize("kind", KINDS)
def test_a_job_on_simulated_time_runs_on_the_clock_values_its_schedule_says(ros, kind):
    """/clock in period steps: one run per step on that clock; a step short of the period: none;
    a jump of five periods: one run, and the grid restarts from it (loop/timing.py Schedule)."""
    ticker = _SimTicker()
    seen = ticker.seen

    def publish(t_s: float, runs: int) -> None:
        ticker.step(t_s)
        if runs:
            assert _wait(lambda: len(seen) >= runs), (t_s, seen)
        else:
            time.sleep(0.3)  # long enough for a wrong run to show

    with _Spinning(kind, [ticker.node]):
        t, runs = 1.0, 1
        publish(t, runs)
        for _ in range(20):
            t, runs = round(t + 0.01, 6), runs + 1
            publish(t, runs)
        publish(t + 0.002, 0)  # short of the period
        t, runs = round(t + 0.01, 6), runs + 1
        publish(t, runs)
        t, runs = round(t + 0.05, 6), runs + 1  # a stall: one run
        publish(t, runs)
        time.sleep(0.3)
        t, runs = round(t + 0.01, 6), runs + 1
        publish(t, runs)
    want = [round(1.0 + 0.01 * k, 6) for k in range(22)] + [1.26, 1.27]
    assert seen == want


@pytest.mark.parametrize("kind", KINDS)
def test_after_a_late_tick_the_job_runs_on_the_clock_its_schedule_says_with_nothing_else(
        ros, kind):
    """The mock arm's lockstep holds /clock until a node's output of the instants before has
    come. After a late tick (a 13 ms step on a 10 ms job) the schedule's grid restarts from it:
    the next run is due at 23 ms, and the clock, stepped by 1 ms, stops there until it comes.
    (A timer of the ROS clock keeps its own grid, 20 and 30 ms: the schedule refused its call
    at 20 ms and the job waited for 30 ms, which the held clock never reached; seen in the
    node graph as a clock held until the mock gave up on the node.)"""
    ticker = _SimTicker()
    seen = ticker.seen
    with _Spinning(kind, [ticker.node]):
        for t in (1.0, 1.013):
            ticker.step(t)
            assert _wait(lambda t=t: bool(seen) and seen[-1] == t, 5.0), (t, seen)
        for k in range(14, 24):  # 1 ms steps to the deadline, held there
            ticker.step(round(1.0 + k * 1e-3, 6))
        assert _wait(lambda: seen[-1] == 1.023, 5.0), seen
    assert seen == [1.0, 1.013, 1.023]


@pytest.mark.parametrize("kind", KINDS)
def test_on_the_wall_clock_jobs_services_and_callbacks_run(ros, kind):
    from rcl_interfaces.srv import GetParameters
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Bool

    from musculo_control.nodes.ros_common import StageNode

    ticker = StageNode("ticker", CommonNodeParams, wall_clock=True)
    ticks: list[float] = []
    ticker.every(0.01, lambda: ticks.append(time.monotonic()))
    got: list[bool] = []
    ticker.create_subscription(Bool, "events", lambda m: got.append(m.data), 10)
    other = rclpy.create_node("other")
    pub = other.create_publisher(Bool, "events", 10)
    client = other.create_client(GetParameters, "/ticker/get_parameters")
    own = SingleThreadedExecutor()
    own.add_node(other)
    with _Spinning(kind, [ticker]):
        assert client.wait_for_service(timeout_sec=20.0)
        future = client.call_async(GetParameters.Request(names=["executor"]))
        own.spin_until_future_complete(future, timeout_sec=20.0)
        assert future.done() and future.result().values[0].string_value == "auto"
        assert _wait(lambda: pub.get_subscription_count() > 0)
        for _ in range(5):
            pub.publish(Bool(data=True))
        assert _wait(lambda: len(got) == 5), got
        n = len(ticks)
        time.sleep(0.5)
    assert len(ticks) > n + 5  # the jobs kept running beside the events


@pytest.mark.parametrize("kind", KINDS)
def test_a_node_process_stopped_by_sigint_sends_its_last_messages(kind, tmp_path):
    """The tendon driver in its own process under ``kind``: SIGINT ends it with exit code 0
    and no error (the EventsExecutor's own SIGINT handler would shut the context down first,
    and the driver's last minimum-tension messages would fail)."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    domain = domain_id()
    env = {**os.environ, **localhost_discovery(os.environ), "ROS_DOMAIN_ID": str(domain)}
    log = open(tmp_path / "driver.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "musculo_control.nodes.tendon_driver_node", "--ros-args",
         "--params-file", str(default_config_dir() / "ros_params.yaml"),
         "-p", f"executor:={kind}"], stdout=log, stderr=subprocess.STDOUT, env=env,
        start_new_session=True)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    try:
        node = rclpy.create_node("listener", context=context)
        stamps: list[float] = []
        node.create_subscription(JointState, "hw/tendon_commands",
                                 lambda m: stamps.append(time.monotonic()),
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        from rclpy.executors import SingleThreadedExecutor

        own = SingleThreadedExecutor(context=context)
        own.add_node(node)
        deadline = time.monotonic() + 180.0  # a loaded machine starts a process slowly
        while len(stamps) < 50 and time.monotonic() < deadline:
            own.spin_once(timeout_sec=0.05)
        assert len(stamps) >= 50, (tmp_path / "driver.log").read_text()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(60.0)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
        rclpy.try_shutdown(context=context)
    text = (tmp_path / "driver.log").read_text()
    assert code == 0, text
    assert "during shutdown" not in text and "Traceback" not in text, text
