"""A controller switched in while the loop runs (loop/switch.py, ControlStep.switch_controller):
on the ROS-free runner with the mock arm, the hand hardly moves over the switch's ramp, for
every pair of controllers; a switch is refused with the reason during a stop."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from musculo_control.control.controller_names import CONTROLLER_NAMES
from musculo_control.control.goal import HandGoal
from musculo_control.control.output import safe_output
from musculo_control.loop import build
from musculo_control.loop.switch import TensionRamp
from musculo_control.paths import default_config_dir
from musculo_control.safety.supervisor_state import SupervisorState
from musculo_control.sim.experiments import Bench
from musculo_control.sim.setup import Overrides, load_setup, start_pose

#: the hand's largest motion allowed over a switch's ramp [m]; measured 1.5-4.0 mm over the 12
#: pairs, about what the hand moves over the same time without a switch (1.1 mm): the arm is
#: still settling from its start-up
MOVED_M = 0.005


@pytest.fixture(scope="module")
def setup():
    return load_setup(default_config_dir(), Overrides.parse([]))


def _holding(setup, controller: str, settle_s: float = 1.0) -> tuple[Bench, HandGoal]:
    bench = Bench(setup, controller)
    q0 = start_pose(setup.robot, "home")
    goal = HandGoal.hold(*setup.robot.arm.hand_pose(q0))
    bench.hold_joints(q0)
    bench.reset(q0, goal)
    bench.run(settle_s, lambda t: goal)
    return bench, goal


def _moved_over_switch(setup, a: str, b: str) -> tuple[str, float]:
    """(why refused or '', the hand's largest motion over the ramp after switching a -> b)."""
    bench, goal = _holding(setup, a)
    parts = bench.rig.parts
    n0 = len(bench.recorder.time_s)
    reason = build.switch_controller(bench.loop.step, parts, b, bench.loop.time_s)
    # no new goal after the switch, as on the graph (goals come on change): the goal in force
    # is the one the switch set, the hand where it was
    held = bench.loop.step.supervisor.goals.accepted
    bench.run(parts.controller.loop.switch_ramp_s, lambda t: held)
    hand = bench.recorder.array("hand_m")[n0 - 1:]
    return reason, float(np.linalg.norm(hand - hand[0], axis=1).max())


def test_a_switch_from_the_osc_to_joint_stiffness_hardly_moves_the_hand(setup):
    reason, moved = _moved_over_switch(setup, "osc", "joint-stiffness")
    assert reason == "" and moved < MOVED_M, (reason, moved)


@pytest.mark.parametrize("a, b", list(itertools.permutations(CONTROLLER_NAMES, 2)))
def test_every_switch_hardly_moves_the_hand(setup, a, b):
    reason, moved = _moved_over_switch(setup, a, b)
    assert reason == "" and moved < MOVED_M, (reason, moved)


def test_a_switch_starts_from_where_the_arm_is(setup):
    """The new controller holds what the arm does now: the goal in force is the hand where it
    is, a joint-space baseline's target the joints where they are; the command at the switch
    is the one in force."""
    bench, _ = _holding(setup, "osc")
    step = bench.loop.step
    in_force = step.supervisor.tension_in_force_n
    q = step.joints.value.q_rad.copy()
    assert build.switch_controller(step, bench.rig.parts, "joint-stiffness",
                                   bench.loop.time_s) == ""
    assert step.controller.name == "joint-stiffness"
    np.testing.assert_allclose(step.controller.joint_target_rad, q)
    hand = setup.robot.arm.hand_pose(q)[0]
    np.testing.assert_allclose(step.supervisor.goals.accepted.position_m, hand, atol=1e-9)
    ramp = step._ramp
    assert ramp is not None and ramp.weight(ramp.t0_s) == 0.0
    np.testing.assert_array_equal(ramp.from_tension_n, in_force)


def test_a_switch_is_refused_with_the_reason_during_a_stop_and_for_unknown_names(setup):
    bench, goal = _holding(setup, "osc")
    step = bench.loop.step
    reason = build.switch_controller(step, bench.rig.parts, "pid", bench.loop.time_s)
    assert "pid" in reason and all(n in reason for n in CONTROLLER_NAMES), reason
    bench.loop.operator_stop(True, "test")
    bench.run(0.05, lambda t: goal)
    assert step.supervisor.state == SupervisorState.FAULT
    reason = build.switch_controller(step, bench.rig.parts, "joint-stiffness",
                                     bench.loop.time_s)
    assert "refused" in reason and "fault" in reason and "operator_stop" in reason, reason
    assert step.controller.name == "osc"


class _Fixed:
    """A controller that answers one command (or fails)."""

    name = "fixed"

    def __init__(self, robot, tension, ok=True):
        self.out = dataclasses.replace(safe_output(robot, "fixed"),
                                       tension_n=np.asarray(tension), ok=ok)

    def tick(self, snapshot, q, qd, goal, t):
        return self.out

    def reset(self):
        pass


def test_the_ramp_blends_smoothly_from_the_tensions_in_force(robot):
    m = robot.n_muscles
    start, end = np.full(m, 10.0), np.full(m, 110.0)
    ramp = TensionRamp(_Fixed(robot, end), start, t0_s=2.0, ramp_s=0.5)
    q = robot.home_pose_rad
    got = [ramp.tick(None, q, q * 0, None, t).tension_n[0] for t in (2.0, 2.125, 2.25, 2.5, 3.0)]
    np.testing.assert_allclose(got, [10.0, 10.0 + 100 * 0.15625, 60.0, 110.0, 110.0])
    assert ramp.done(2.5) and not ramp.done(2.49)
    # the old controller, ticked live, is what the ramp starts from; where it cannot answer,
    # the tensions in force at the switch
    live = TensionRamp(_Fixed(robot, end), start, 2.0, 0.5, previous=_Fixed(robot, start + 40))
    assert live.tick(None, q, q * 0, None, 2.0).tension_n[0] == 50.0
    np.testing.assert_allclose(live.tick(None, q, q * 0, None, 2.25).tension_n[0], 80.0)
    dead = TensionRamp(_Fixed(robot, end), start, 2.0, 0.5,
                       previous=_Fixed(robot, start + 40, ok=False))
    assert dead.tick(None, q, q * 0, None, 2.0).tension_n[0] == 10.0
    # a tick the new controller cannot answer goes on unblended: the supervisor stops
    failing = TensionRamp(_Fixed(robot, np.full(m, robot.hill.f_min_n), ok=False), start, 2.0, 0.5)
    assert not failing.tick(None, q, q * 0, None, 2.1).ok
