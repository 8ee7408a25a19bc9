"""Launch test: killing the dynamics node (SIGKILL) makes the QP node send minimum tension on
every muscle within 100 ms, say why on /diagnostics (``snapshot_stale``) within 100 ms, and
stay there; the other processes exit cleanly at shutdown.

On simulated time in lockstep: the mock arm waits up to ``lockstep_timeout_s`` of wall time for
the dead node, then lets the clock run on; the 100 ms are simulated time, the loop's own
figure, whatever the machine's load.

    launch_test launch_tests/test_dynamics_loss.py
"""

from __future__ import annotations

import os
import signal
import sys
import unittest

import pytest

rclpy = pytest.importorskip(
    "rclpy", reason="launch tests need ROS 2 (rclpy): source a ROS 2 Humble (or newer) setup "
                    "and the colcon install of musculo_control, then run launch_test on this file")
pytest.importorskip("launch_testing", reason="launch_testing is not installed")

import launch_testing.asserts

sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    LOCKSTEP,
    WAIT_TIMEOUT_S,
    ObservedGraph,
    first_after,
    first_diagnostic,
    launch,
    minimum_tension,
    params_file,
    wait_released,
)

#: The limit: minimum tension, and the reason on /diagnostics, within this long [s].
REACTION_LIMIT_S = 0.100
#: Watch this long after the kill [simulated s].
WATCH_S = 1.0
KILLED = "dynamics_node"
REASON = "snapshot_stale"


@pytest.mark.launch_test
def generate_test_description():
    return launch(**LOCKSTEP, params_file=params_file())


class TestDynamicsLoss(ObservedGraph):

    def test_killing_dynamics_gives_minimum_tension_and_the_reason(self, proc_info):
        obs = self.obs
        f_min = self.parts.robot.hill.f_min_n
        wait_released(obs)
        self.assertTrue(obs.wait_for(1.0, WAIT_TIMEOUT_S), "simulated time stalled")
        pid = proc_info[KILLED].pid
        t_kill = obs.now_s()
        os.kill(pid, signal.SIGKILL)
        self.assertTrue(obs.wait_for(WATCH_S, WAIT_TIMEOUT_S), "simulated time stalled")
        commands = obs.snapshot(obs.commands)
        safe_t = first_after(commands, t_kill, lambda f: minimum_tension(f, f_min))
        diag = first_diagnostic(obs, t_kill, "activation_qp_node", 2, (REASON,))
        print(f"\nkilled {KILLED} (pid {pid}) at {t_kill:.3f} s (simulated); first "
              f"minimum-tension command {(safe_t - t_kill) * 1e3 if safe_t else float('nan'):.1f}"
              f" ms later; /diagnostics "
              f"{(diag.t - t_kill) * 1e3 if diag else float('nan'):.1f} ms later: {diag}",
              flush=True)
        self.assertIsNotNone(safe_t, "never minimum tension after the dynamics node died")
        self.assertLessEqual(safe_t - t_kill, REACTION_LIMIT_S)
        self.assertIsNotNone(diag, f"no ERROR naming {REASON}: {obs.diagnostics[-5:]}")
        self.assertLessEqual(diag.t - t_kill, REACTION_LIMIT_S)
        later = commands.since(safe_t)
        self.assertTrue(later.values and all(minimum_tension(f, f_min) for f in later.values),
                        "tension above the minimum again without dynamics")


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_processes_exit_cleanly_but_the_killed_one(self, proc_info):
        for name in proc_info.process_names():
            codes = [-signal.SIGKILL] if name.startswith(KILLED) else [0]
            launch_testing.asserts.assertExitCodes(proc_info, codes, process=name)
