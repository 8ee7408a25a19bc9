"""The gate of received hand goals (musculo_control.control.goal_input)."""

from __future__ import annotations

import numpy as np
import pytest

from musculo_control.control.controller import load_controller_config
from musculo_control.control.goal import HandGoal
from musculo_control.control.goal_input import GoalGate
from musculo_control.stamps import Stamp

INSIDE = [0.30, 0.33, 0.32]
UNIT = [0.0, 0.0, 0.0, 1.0]


@pytest.fixture()
def gate(config_dir):
    return GoalGate(load_controller_config(config_dir).workspace, "base_link")


def test_a_good_goal_passes_with_its_orientation(gate):
    q = [0.0, 0.0, np.sin(0.3), np.cos(0.3)]
    goal = gate.accept(Stamp(10, 0), "base_link", INSIDE, q)
    assert isinstance(goal, HandGoal)
    np.testing.assert_allclose(goal.position_m, INSIDE)
    assert goal.rotation is not None


@pytest.mark.parametrize("frame, position, quat, words", [
    ("world", INSIDE, UNIT, ["hand_goal", "frame_id 'world'", "base_link"]),
    ("", INSIDE, UNIT, ["frame_id ''"]),
    ("base_link", [0.3, float("nan"), 0.3], UNIT, ["hand_goal", "position", "finite"]),
    ("base_link", INSIDE, [0.0, 0.0, float("inf"), 1.0], ["hand_goal", "quaternion"]),
    ("base_link", INSIDE, [0.0, 0.0, 0.0, 0.0], ["hand_goal", "unit norm"]),
    ("base_link", [1.5, 0.2, 0.3], UNIT, ["hand_goal", "beyond the reach"]),
    ("base_link", [0.1, -0.15, 0.4], UNIT, ["hand_goal", "outside the workspace box"]),
])
def test_bad_goals_are_refused_naming_topic_and_fault(gate, frame, position, quat, words):
    why = gate.accept(Stamp(10, 0), frame, position, quat)
    assert isinstance(why, str)
    for w in words:
        assert w in why


def test_out_of_order_goals_are_refused_and_refusals_do_not_move_the_reference(gate):
    assert isinstance(gate.accept(Stamp(10, 0), "base_link", INSIDE, UNIT), HandGoal)
    # a refused (outside) goal with a later stamp must not become the reference
    assert isinstance(gate.accept(Stamp(20, 0), "base_link", [2.0, 0.0, 0.0], UNIT), str)
    assert isinstance(gate.accept(Stamp(15, 0), "base_link", INSIDE, UNIT), HandGoal)
    late = gate.accept(Stamp(12, 0), "base_link", INSIDE, UNIT)
    assert isinstance(late, str) and "out of order" in late
    assert isinstance(gate.accept(Stamp(0, 0), "base_link", INSIDE, UNIT), HandGoal)  # 'now'


def test_position_only_gate_drops_the_orientation(config_dir):
    gate = GoalGate(load_controller_config(config_dir).workspace, "base_link",
                    use_orientation=False)
    goal = gate.accept(Stamp(1, 0), "base_link", INSIDE, UNIT)
    assert isinstance(goal, HandGoal) and goal.rotation is None
