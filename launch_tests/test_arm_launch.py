"""Launch test: ``arm.launch.py`` with no arm behind the ``hw/`` topics (real time, as on the
robot before its drivers run). The suite must come up and wait safely, saying what is missing:

- every node comes up (no mock arm);
- each says on /diagnostics what it lacks: the potentiometer node no sample, the tendon
  driver no tendon state, the dynamics node no joint states, the controller no joint state
  (an ERROR naming the ``joint_state`` rule);
- the controller commands minimum tension on every muscle, and the driver sends minimum
  tension to every actuator, all along;
- every process exits cleanly.

    launch_test launch_tests/test_arm_launch.py
"""

from __future__ import annotations

import os
import sys

import pytest

rclpy = pytest.importorskip(
    "rclpy", reason="launch tests need ROS 2 (rclpy): source a ROS 2 Humble (or newer) setup "
                    "and the colcon install of musculo_control, then run launch_test on this file")
pytest.importorskip("launch_testing", reason="launch_testing is not installed")


sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    ARM_NODES,
    WAIT_TIMEOUT_S,
    CleanExit,  # noqa: F401 - launch_testing runs it after shutdown
    ObservedGraph,
    launch,
    minimum_tension,
    wait_nodes,
)

#: Watch the waiting suite this long [s].
WATCH_S = 3.0
#: What each node must say it lacks: (node, least level, words of its message).
MISSING = (("potentiometer_node", 2, ("no sample",)),
           ("tendon_driver_node", 2, ("no tendon state",)),
           ("dynamics_node", 1, ("no joint_states",)),
           ("activation_qp_node", 2, ("joint_state:", "no joint state")))


@pytest.mark.launch_test
def generate_test_description():
    return launch("arm.launch.py")


class TestArmWithoutHardware(ObservedGraph):
    SIM = False

    def test_the_suite_waits_at_minimum_tension_and_says_what_is_missing(self):
        obs, p = self.obs, self.parts
        took = wait_nodes(obs, ARM_NODES)
        print(f"\nall {len(ARM_NODES)} nodes up after {took:.1f} s", flush=True)

        def said(node: str, level: int, words: tuple[str, ...]) -> bool:
            last = obs.diagnostics_of(node)
            return bool(last) and last[-1].level >= level and all(
                w in last[-1].message for w in words)

        for node, level, words in MISSING:
            self.assertTrue(obs.wait_until(lambda n=node, lv=level, w=words: said(n, lv, w),
                                           WAIT_TIMEOUT_S), (node, obs.diagnostics_of(node)[-1:]))
            print(f"{node}: {obs.diagnostics_of(node)[-1]}", flush=True)
        t0 = obs.now_s()
        self.assertTrue(obs.wait_for(WATCH_S, WAIT_TIMEOUT_S))
        commands = obs.snapshot(obs.commands).since(t0)
        sent = obs.snapshot(obs.sent).since(t0)
        print(f"over {WATCH_S:g} s: {len(commands)} muscle_commands, {len(sent)} "
              f"hw/tendon_commands", flush=True)
        self.assertTrue(commands.values and all(minimum_tension(f, p.robot.hill.f_min_n)
                                                for f in commands.values),
                        "the controller commanded more than minimum tension without inputs")
        f_floor = p.drivers.tendons.config.min_tension_n
        self.assertTrue(sent.values and all(minimum_tension(f, f_floor) for f in sent.values),
                        "the driver sent more than minimum tension without commands")
        for node, level, words in MISSING:  # still waiting, still saying so
            self.assertTrue(said(node, level, words), (node, obs.diagnostics_of(node)[-1:]))
