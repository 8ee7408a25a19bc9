"""Launch test: ``use_sim_time:=true real_time_factor:=0.5`` as a user gives it (the installed
parameter file, no lockstep). The mock arm publishes /clock and every other node runs on it:

- simulated time advances, never faster than asked (at most 0.5 simulated s per wall s);
- what the nodes stamp with their own clocks (the controller's ``muscle_commands``, the
  driver's ``hw/tendon_commands``) and what they pass on (``joint_states``, ``dynamics``) is
  simulated time: within 0.5 s of /clock, nowhere near the wall clock;
- per simulated second, by the stamps, ``joint_states``, ``hw/tendon_commands``,
  ``muscle_commands`` and ``dynamics`` keep their rates within 2 %;
- every process exits cleanly.

Whether the controller holds the arm is printed, not asserted: without lockstep a node that
lags on a loaded machine may trip a safety rule (test_mock_arm_launch.py asserts control, in
lockstep), and the clock must behave either way.

    launch_test launch_tests/test_sim_time.py
"""

from __future__ import annotations

import os
import sys
import time

import pytest

rclpy = pytest.importorskip(
    "rclpy", reason="launch tests need ROS 2 (rclpy): source a ROS 2 Humble (or newer) setup "
                    "and the colcon install of musculo_control, then run launch_test on this file")
pytest.importorskip("launch_testing", reason="launch_testing is not installed")


sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    SIM_TIME,
    STARTUP_TIMEOUT_S,
    CleanExit,  # noqa: F401 - launch_testing runs it after shutdown
    ObservedGraph,
    launch,
    minimum_tension,
    rate_by_stamps,
    released,
)

REAL_TIME_FACTOR = float(SIM_TIME["real_time_factor"])
WINDOW_S = 6.0  # wall seconds
RATE_TOLERANCE = 0.02


@pytest.mark.launch_test
def generate_test_description():
    return launch(**SIM_TIME)


class TestSimTime(ObservedGraph):

    def test_every_node_runs_on_the_mock_arms_clock(self):
        obs, p = self.obs, self.parts
        streams = (obs.joint_states, obs.sent, obs.commands, obs.dynamics)
        # every stream flowing; whether the controller holds the arm is not this test's
        # question (without lockstep a loaded machine may fault it: it keeps its rates then)
        self.assertTrue(obs.wait_until(lambda: min(len(r) for r in streams) > 10,
                                       STARTUP_TIMEOUT_S), [len(r) for r in streams])
        sim0, wall0 = obs.now_s(), time.monotonic()
        time.sleep(WINDOW_S)
        sim1, wall1 = obs.now_s(), time.monotonic()
        factor = (sim1 - sim0) / (wall1 - wall0)
        print(f"\n{sim1 - sim0:.2f} simulated s in {wall1 - wall0:.2f} wall s: factor "
              f"{factor:.3f} (asked {REAL_TIME_FACTOR})", flush=True)
        self.assertGreater(factor, 0.0, "simulated time does not advance")
        self.assertLessEqual(factor, REAL_TIME_FACTOR * 1.05, "faster than asked: wall clock?")
        rates, loop = p.drivers.rates, p.controller.loop
        for name, rec, nominal in (("joint_states", obs.joint_states, rates.sensor_rate_hz),
                                   ("hw/tendon_commands", obs.sent, rates.driver_rate_hz),
                                   ("muscle_commands", obs.commands, loop.control_rate_hz),
                                   ("dynamics", obs.dynamics, loop.dynamics_rate_hz)):
            stamps = obs.snapshot(rec).stamp
            self.assertTrue(stamps, f"no {name}")
            self.assertLess(abs(stamps[-1] - sim1), 0.5,
                            f"{name} stamped {stamps[-1]:.3f} s, /clock at {sim1:.3f} s")
            rate, received = rate_by_stamps(stamps, sim0, sim1)
            print(f"{name}: last stamp {stamps[-1]:.3f} s (clock {sim1:.3f} s); {rate:.2f} Hz "
                  f"per simulated second (nominal {nominal:g} Hz), {received:.0%} received",
                  flush=True)
            self.assertAlmostEqual(rate, nominal, delta=RATE_TOLERANCE * nominal, msg=name)
        f_min = p.robot.hill.f_min_n
        commands = obs.snapshot(obs.commands).since(sim0)
        safe = sum(minimum_tension(f, f_min) for f in commands.values)
        print(f"controller: {'released and holding' if released(obs) else 'NOT holding'}; "
              f"{safe} of {len(commands)} commands at minimum tension; last: "
              f"{obs.diagnostics_of('activation_qp_node')[-1:]}", flush=True)
