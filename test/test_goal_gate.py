"""The one goal gate (musculo_control.safety.goal_gate): frame, values, workspace, stamp order,
orientation mode, and the feed-forward between goals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from musculo_control.control.controller_config import load_controller_config
from musculo_control.control.goal import HandGoal
from musculo_control.safety.goal_gate import GoalGate, GoalRequest

INSIDE = [0.30, 0.33, 0.32]
UNIT = [0.0, 0.0, 0.0, 1.0]


@pytest.fixture()
def workspace(config_dir):
    return load_controller_config(config_dir).workspace


@pytest.fixture()
def gate(workspace):
    return GoalGate(workspace, "base_link")


def test_a_good_goal_passes_with_the_rotation_it_was_sent(gate):
    angle = 0.3
    quat = [0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2)]  # about z by 0.3 rad
    assert gate.offer(GoalRequest(INSIDE, quaternion_xyzw=quat), 10.0, 10.0, "base_link") is None
    goal = gate.accepted
    np.testing.assert_allclose(goal.position_m, INSIDE)
    c, s = math.cos(angle), math.sin(angle)
    np.testing.assert_allclose(goal.rotation, [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-12)


@pytest.mark.parametrize("frame, request_, rule, words", [
    ("world", GoalRequest(INSIDE, quaternion_xyzw=UNIT), "goal_invalid",
     ["frame_id 'world'", "base_link"]),
    ("", GoalRequest(INSIDE), "goal_invalid", ["frame_id ''"]),
    ("base_link", GoalRequest([0.3, math.nan, 0.3]), "goal_invalid", ["finite"]),
    ("base_link", GoalRequest(INSIDE, quaternion_xyzw=[0, 0, math.inf, 1]), "goal_invalid",
     ["quaternion"]),
    ("base_link", GoalRequest(INSIDE, quaternion_xyzw=[0, 0, 0, 0]), "goal_invalid",
     ["unit norm"]),
    ("base_link", GoalRequest("abc"), "goal_invalid", ["numeric"]),
    ("base_link", GoalRequest([0.3, 0.2]), "goal_invalid", ["3 values"]),
    ("base_link", GoalRequest(INSIDE, rotation=np.ones((3, 3))), "goal_invalid", ["rotation"]),
    ("base_link", GoalRequest([1.5, 0.2, 0.3]), "goal_outside_workspace", ["beyond the reach"]),
    ("base_link", GoalRequest([0.1, -0.15, 0.4]), "goal_outside_workspace",
     ["outside the workspace box"]),
])
def test_bad_goals_are_refused_naming_the_fault_and_the_last_one_holds(gate, frame, request_,
                                                                       rule, words):
    first = HandGoal.hold(INSIDE)
    assert gate.offer(first, 5.0, 5.0) is None
    finding = gate.offer(request_, 10.0, 10.0, frame)
    assert finding is not None and finding.rule == rule
    for w in words:
        assert w in finding.message, finding.message
    assert gate.accepted is first and gate.refused == 1


def test_out_of_order_goals_are_refused_and_refusals_do_not_move_the_reference(gate):
    assert gate.offer(GoalRequest(INSIDE), 10.0, 10.0) is None
    # a refused (outside) goal with a later stamp must not become the reference
    assert gate.offer(GoalRequest([2.0, 0.0, 0.0]), 20.0, 20.0) is not None
    assert gate.offer(GoalRequest(INSIDE), 15.0, 15.0) is None
    late = gate.offer(GoalRequest(INSIDE), 12.0, 16.0)
    assert late is not None and "out of order" in late.message
    assert gate.offer(GoalRequest(INSIDE), 0.0, 17.0) is None  # a zero stamp: 'now'
    assert gate.accepted_stamp_s == 17.0


def test_position_only_gate_drops_the_orientation(workspace):
    gate = GoalGate(workspace, "base_link", use_orientation=False)
    assert gate.offer(GoalRequest(INSIDE, quaternion_xyzw=UNIT), 1.0, 1.0) is None
    assert gate.accepted.rotation is None
    gate.hold(HandGoal.hold(INSIDE, np.eye(3)), 2.0)
    assert gate.accepted.rotation is None


def test_between_goals_the_goal_follows_its_feed_forward_then_holds(workspace):
    gate = GoalGate(workspace, "base_link", extrapolate_max_s=0.04)
    v, a = np.array([0.0, 0.1, 0.0]), np.array([0.0, 0.0, 0.5])
    gate.offer(HandGoal(INSIDE, v, a), 1.0, 1.0)
    at = gate.goal_at(1.02)
    np.testing.assert_allclose(at.position_m, np.add(INSIDE, v * 0.02 + 0.5 * a * 0.02**2))
    np.testing.assert_allclose(at.velocity_m_s, v + a * 0.02)
    capped = gate.goal_at(5.0)  # a stream that stopped: held 40 ms ahead, not run away
    np.testing.assert_allclose(capped.position_m, np.add(INSIDE, v * 0.04 + 0.5 * a * 0.04**2))
    assert gate.goal_at(0.5).position_m.tolist() == INSIDE  # before the stamp: as sent
    still = GoalGate(workspace, "base_link", extrapolate_max_s=0.0)
    still.offer(HandGoal(INSIDE, v, a), 1.0, 1.0)
    assert still.goal_at(1.02) is still.accepted
