"""Launch test: bad input is refused and never reaches the arm; the controller keeps its goal,
on simulated time in lockstep.

Sent while the arm is under control, after a good goal 2 cm away:

- on ``hand_goal`` (PoseStamped): NaN, outside the workspace, another frame, stamped before
  the goal in force; on ``hand_goal/trajectory``: a NaN velocity. Each is reported on
  /diagnostics with its rule (``goal_invalid``, ``goal_outside_workspace``), counted in
  ``goals refused``, and the good goal stays in force;
- on ``joint_states``: 6 names of 7, and an unknown name; on ``muscle_commands``: names that
  are no muscles (sent by a publisher that exists for that flood only: the driver names it a
  foreign writer meanwhile). Each is refused with a warning naming the topic; a flood of them
  only crowds out good samples (the stale-input rules, minimum tension and back), and the
  driver never sends a non-finite or over-range command.

    launch_test launch_tests/test_bad_input.py
"""

from __future__ import annotations

import math
import os
import re
import sys
import time

import pytest

rclpy = pytest.importorskip(
    "rclpy", reason="launch tests need ROS 2 (rclpy): source a ROS 2 Humble (or newer) setup "
                    "and the colcon install of musculo_control, then run launch_test on this file")
pytest.importorskip("launch_testing", reason="launch_testing is not installed")

import numpy as np
from sensor_msgs.msg import JointState

sys.path.insert(0, os.path.dirname(__file__))
from launch_helpers import (
    LOCKSTEP,
    WAIT_TIMEOUT_S,
    CleanExit,  # noqa: F401 - launch_testing runs it after shutdown
    ObservedGraph,
    first_diagnostic,
    launch,
    minimum_tension,
    params_file,
    wait_released,
)

from musculo_control import messages
from musculo_control.nodes.ros_common import MSGS
from musculo_control.stamps import Stamp

#: Bad messages are sent in up to BURSTS bursts of BURST, 2 ms apart.
BURSTS = 30
BURST = 25
#: Simulated time after the floods for control to come back (a 1 s goal ramp) [s].
RECOVERY_S = 2.0
#: Words before a colon in a diagnostic that are supervisor states, not rules.
SUPERVISOR_STATES = {"fault", "holding", "latched", "running"}
#: The rules of an input that comes late or not at all, whichever stream it is: a flood
#: crowds good samples out of the newest-sample queues and takes the CPU of a loaded machine
#: from every node, so any of the loop's streams may go late or stale meanwhile.
STALE_INPUT_RULES = {"joint_state_late", "joint_state_stale", "tendon_state_late",
                     "tendon_state_stale", "snapshot_late", "snapshot_stale", "driver_late",
                     "driver_silent"}


@pytest.mark.launch_test
def generate_test_description():
    return launch(**LOCKSTEP, params_file=params_file())


class TestBadInput(ObservedGraph):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # made and destroyed between two spins of the observer's node (observer.py)
        cls.joints_pub = cls.obs.create_publisher(JointState, "joint_states", 10)

    def test_bad_input_is_refused_and_control_goes_on(self, proc_output):
        obs, robot = self.obs, self.parts.robot
        t0 = wait_released(obs)
        self.assertTrue(obs.wait_until(lambda: len(obs.goals_in_force) > 0, WAIT_TIMEOUT_S))
        held, orientation = obs.snapshot(obs.goals_in_force).values[-1]
        good = held + np.array([0.0, 0.02, 0.0])
        obs.send_goal_pose(good, orientation)
        self.assertTrue(obs.wait_until(
            lambda: np.allclose(obs.goals_in_force.values[-1][0], good), WAIT_TIMEOUT_S),
            "the good goal never came in force")
        stamp_good = obs.now_s()
        # (what, how it is sent, the rule and the words its diagnostic holds)
        cases = [
            ("NaN", lambda: obs.send_goal_pose([0.3, math.nan, 0.3], orientation),
             ("goal_invalid", "nan")),
            ("outside", lambda: obs.send_goal_pose(held + [0.8, 0.0, 0.0], orientation),
             ("goal_outside_workspace", "beyond the reach")),
            ("frame", lambda: obs.send_goal_pose(held, orientation, frame_id="world"),
             ("goal_invalid", "frame_id 'world'")),
            ("late", lambda: obs.send_goal_pose(held, orientation,
                                                stamp=Stamp.from_seconds(stamp_good - 0.5)),
             ("goal_invalid", "out of order")),
            ("trajectory NaN velocity", lambda: obs.send_goal_point(
                held, orientation, [0.0, math.nan, 0.0], np.zeros(3)),
             ("goal_invalid", "velocity_m_s")),
        ]
        for what, send, words in cases:
            t = obs.now_s()
            send()
            found = obs.wait_until(lambda t=t, words=words: first_diagnostic(
                obs, t, "activation_qp_node", 1, words) is not None, WAIT_TIMEOUT_S)
            self.assertTrue(found, f"goal '{what}': no diagnostic with {words}")
            print(f"\ngoal '{what}': {first_diagnostic(obs, t, 'activation_qp_node', 1, words)}",
                  flush=True)
        self.assertTrue(obs.wait_until(lambda: int(obs.diagnostics_of("activation_qp_node")[-1]
                                                   .values["goals refused"]) >= len(cases),
                                       WAIT_TIMEOUT_S), "goals refused: not counted")
        # goals refused so far, and the loop never left control
        in_force = obs.snapshot(obs.goals_in_force).values[-1][0]
        np.testing.assert_allclose(in_force, good, atol=1e-9)
        qp = obs.diagnostics_of("activation_qp_node")[-1]
        self.assertGreaterEqual(int(qp.values["goals refused"]), len(cases), qp.values)
        f_min = robot.hill.f_min_n
        commands = obs.snapshot(obs.commands).since(t0)
        self.assertFalse(any(minimum_tension(f, f_min) for f in commands.values),
                         "a minimum-tension command: a refused goal reached the loop")
        print(f"controller after the bad goals: level {qp.level}, '{qp.message}', goals "
              f"refused {qp.values['goals refused']}", flush=True)
        # bad stream samples: refused with a warning naming the topic. A flood of them crowds
        # out the good samples of the polled stream; what follows is the stale-input rule
        # (minimum tension, reported), then control again
        t_streams = obs.now_s()
        joints = list(robot.arm.joint_names)
        n = robot.n_muscles
        for names, values, text in (
                (joints[:-1], {"position": np.zeros(6), "velocity": np.zeros(6)},
                 "refused a message on joint_states"),
                (joints[:-1] + ["no_such_joint"],
                 {"position": np.zeros(7), "velocity": np.zeros(7)}, "no_such_joint")):
            self.assertTrue(self._refused(proc_output, self.joints_pub, names, values, text),
                            text)
            print(f"warned: {text}", flush=True)
        # the observer is a foreign writer of muscle_commands while this publisher exists (the
        # driver obeys its controller only; without per-sample publisher ids, as on Humble and
        # Jazzy, it sends minimum tension meanwhile), so it exists for this flood only: gone,
        # the controller's commands pass again
        text = "refused a message on muscle_commands"
        commands_pub = obs.create_publisher(JointState, "muscle_commands", 10)
        try:
            self.assertTrue(self._refused(proc_output, commands_pub, [f"m{i}" for i in range(n)],
                                          {"effort": np.full(n, 300.0)}, text), text)
        finally:
            obs.destroy_publisher(commands_pub)
        print(f"warned: {text}", flush=True)
        self.assertTrue(obs.wait_for(RECOVERY_S, WAIT_TIMEOUT_S), "simulated time stalled")
        commands = obs.snapshot(obs.commands).since(t_streams)
        safe = [t for t, f in zip(commands.t, commands.values) if minimum_tension(f, f_min)]
        reasons = sorted({rule for d in obs.diagnostics_of("activation_qp_node")
                          if d.t >= t_streams and d.level >= 2
                          for rule in re.findall(r"\b([a-z_]+): ", d.message)} - SUPERVISOR_STATES)
        print(f"during the floods: {len(safe)} minimum-tension commands of {len(commands)}; "
              f"errors: {reasons}", flush=True)
        self.assertFalse(set(reasons) - STALE_INPUT_RULES, "an error other than a stale input")
        tail = commands.since(obs.now_s() - 0.2)
        self.assertTrue(tail.values and not any(minimum_tension(f, f_min) for f in tail.values),
                        "no control again after the floods")
        sent = np.asarray(obs.snapshot(obs.sent).since(t_streams).values)
        self.assertTrue(np.isfinite(sent).all())
        self.assertLessEqual(sent.max(), self.parts.drivers.tendons.config.max_tension_n + 1e-6)
        np.testing.assert_allclose(obs.snapshot(obs.goals_in_force).values[-1][0], good,
                                   atol=1e-9)

    def _refused(self, proc_output, pub, names, values, text) -> bool:
        """Publish the bad message in bursts until a node warns ``text``: the nodes poll the
        newest sample of a stream at their tick, so one message among the good ones may never
        be the one they take."""
        for _ in range(BURSTS):
            for _ in range(BURST):
                pub.publish(messages.joint_state_msg(MSGS, Stamp.from_seconds(self.obs.now_s()),
                                               names, **values))
                time.sleep(0.002)
            try:
                proc_output.assertWaitFor(text, timeout=2.0)
                return True
            except AssertionError:
                continue
        return False
