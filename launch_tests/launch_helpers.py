"""Shared pieces of the launch tests: the real launch files with the tests' arguments, and the
graph observer of test/test_graph.py.

The graph is the installed ``mock_arm.launch.py`` (or ``arm.launch.py``), GUI and rclcpp
nodes off; it is watched by :class:`~musculo_control.testing.observer.GraphObserver` and judged
with the helpers of ``test/graph_harness.py`` (safe state, rates by stamps, first event after
an instant), the same as the node-graph tests that ``make test`` runs without ``ros2 launch``.

Most tests run on simulated time in lockstep (the mock arm publishes /clock at half real time
and holds it for a node that lags), as test/test_graph.py does, so that what they assert is
the loop's behaviour and not the load of the machine; the launch arguments say so
(``use_sim_time:=true real_time_factor:=0.5``) and a copy of the installed parameter file
turns lockstep on (``params_file:=``).

Imported only by the launch tests, after they have checked that the launch tools are there.
"""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
import time
import unittest
from pathlib import Path
from typing import Any

import launch_testing.actions
import launch_testing.asserts
import yaml
from ament_index_python.packages import get_package_share_directory
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource

from launch import LaunchDescription
from musculo_control.loop.parts import LoopParts, load_parts
from musculo_control.nodes.node_config import (
    ACTIVATION_QP_NODE,
    DYNAMICS_NODE,
    MOCK_HARDWARE_NODE,
    MUSCLE_MARKER_NODE,
    NODE_PARAMS,
    ROS_PARAMS_FILE,
    TENDON_DRIVER_NODE,
)
from musculo_control.testing.observer import GraphObserver

# the judging helpers of the node-graph tests (test/graph_harness.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))
from graph_harness import (  # noqa: E402
    REACH_TOLERANCE_M,
    SIM_RATE,
    errors_after,
    first_after,
    first_diagnostic,
    minimum_tension,
    on_grid,
    rate_by_count,
    rate_by_stamps,
    released,
)

PACKAGE = "musculo_control"
SHARE = Path(get_package_share_directory(PACKAGE))
#: The robot the launch files start by default (their ``config_dir`` left empty).
CONFIG_DIR = SHARE / "config" / "musashi_left_arm"
#: Nodes mock_arm.launch.py starts with use_rviz:=false (no muscle markers without RViz).
MOCK_NODES = tuple(n for n in NODE_PARAMS if n != MUSCLE_MARKER_NODE)
#: Nodes arm.launch.py starts with use_rviz:=false: no mock arm either.
ARM_NODES = tuple(n for n in MOCK_NODES if n != MOCK_HARDWARE_NODE)
#: Wall-clock bound of a start-up on a loaded machine [s].
STARTUP_TIMEOUT_S = 180.0
#: Wall-clock bound of any other wait [s].
WAIT_TIMEOUT_S = 180.0
#: Launch arguments of a test on simulated time.
SIM_TIME = {"use_sim_time": "true", "real_time_factor": str(SIM_RATE)}
#: ... and the mock arm's lockstep (with :func:`params_file`'s waits, as the node-graph tests).
LOCKSTEP = {**SIM_TIME, "lockstep": "true"}


def parts() -> LoopParts:
    """The stages of the installed robot (the observer's view of it)."""
    return load_parts(CONFIG_DIR)


def params_file(extra: dict[str, dict[str, Any]] | None = None, *,
                lockstep: bool = True) -> str:
    """The installed parameter file with ``extra`` parameters per node (and, with
    ``lockstep``, the mock arm waiting for lagging nodes, up to 5 s of wall time) written to
    a temporary file; its path."""
    doc = yaml.safe_load((CONFIG_DIR / ROS_PARAMS_FILE).read_text(encoding="utf-8"))
    extra = {k: dict(v) for k, v in (extra or {}).items()}
    if lockstep:
        extra.setdefault(MOCK_HARDWARE_NODE, {}).update(lockstep=True, lockstep_timeout_s=5.0)
        # and the nodes taking other nodes' outputs wait for what the clock says was sent
        # (as long as a sample takes to come on a loaded machine: test/graph_harness.py)
        for node in (TENDON_DRIVER_NODE, DYNAMICS_NODE, ACTIVATION_QP_NODE):
            extra.setdefault(node, {}).update(lockstep=True, lockstep_wait_s=2.0)
    for node, values in extra.items():
        doc.setdefault(node, {"ros__parameters": {}})["ros__parameters"].update(values)
    fd, path = tempfile.mkstemp(prefix="musculo_launch_test_", suffix=".yaml")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    # the nodes read it at start-up; launch_test's process ends after the post-shutdown tests
    atexit.register(Path(path).unlink, missing_ok=True)
    return path


def launch(file: str = "mock_arm.launch.py", **arguments: str) -> LaunchDescription:
    """The installed launch ``file`` with ``arguments`` (RViz, robot_state_publisher and goals
    off unless given), then ReadyToTest."""
    args = {"use_rviz": "false", "use_robot_state_publisher": "false", "goal_mode": "none",
            **arguments}
    return LaunchDescription([
        IncludeLaunchDescription(PythonLaunchDescriptionSource(str(SHARE / "launch" / file)),
                                 launch_arguments=list(args.items())),
        launch_testing.actions.ReadyToTest(),
    ])


def observer(stages: LoopParts, sim: bool) -> GraphObserver:
    """A graph observer on the domain of the environment (``ROS_DOMAIN_ID``)."""
    return GraphObserver(stages, use_sim_time=sim, name="launch_test_observer")


def wait_nodes(obs: GraphObserver, names: tuple[str, ...]) -> float:
    """Wait until every node of ``names`` is in the ROS graph; the wall time it took [s]."""
    t0 = time.monotonic()
    if not obs.wait_until(lambda: set(names) <= set(obs.node.get_node_names()),
                          STARTUP_TIMEOUT_S, poll_s=0.2):
        missing = set(names) - set(obs.node.get_node_names())
        raise AssertionError(f"nodes {sorted(missing)} not up after {STARTUP_TIMEOUT_S:.0f} s")
    return time.monotonic() - t0


def wait_released(obs: GraphObserver) -> float:
    """Wait until the controller holds the released arm; the observer's time then [s]."""
    if not obs.wait_until(lambda: released(obs), STARTUP_TIMEOUT_S):
        raise AssertionError("the controller never held the arm; last diagnostics: "
                             f"{obs.diagnostics[-8:]}")
    return obs.now_s()


class ObservedGraph(unittest.TestCase):
    """Tests of one launched graph, watched by ``self.obs`` (on simulated time unless
    ``SIM`` is false) with the robot's stages in ``self.parts``."""

    SIM = True

    @classmethod
    def setUpClass(cls) -> None:
        cls.parts = parts()
        cls.obs = observer(cls.parts, sim=cls.SIM)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.obs.close()


@launch_testing.post_shutdown_test()
class CleanExit(unittest.TestCase):
    """After shutdown: every process ended with exit code 0 (a test module imports it)."""

    def test_every_process_exits_cleanly(self, proc_info: Any) -> None:
        launch_testing.asserts.assertExitCodes(proc_info)


__all__ = ["ARM_NODES", "CONFIG_DIR", "LOCKSTEP", "MOCK_NODES", "REACH_TOLERANCE_M", "SIM_TIME",
           "STARTUP_TIMEOUT_S", "WAIT_TIMEOUT_S", "CleanExit", "ObservedGraph", "errors_after",
           "first_after", "first_diagnostic", "launch", "minimum_tension", "observer",
           "on_grid", "params_file", "parts", "rate_by_count", "rate_by_stamps", "released",
           "wait_nodes", "wait_released"]
