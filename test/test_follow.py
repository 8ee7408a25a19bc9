"""Whether the tendon driver applies the controller's commands (safety/follow.py), and what the
controller does when it does not: a lost link between them must not end in a yank."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from musculo_control.safety.follow import CommandFollow, FollowConfig
from musculo_control.sim.fault_matrix import FaultMatrixConfig, hand_after, run_case
from musculo_control.sim.reliability_config import load_reliability_section
from musculo_control.sim.setup import Overrides, load_setup

CFG = FollowConfig(tolerance_n=50.0, samples=10)


def _follow() -> CommandFollow:
    return CommandFollow(CFG, window_s=0.032)


def test_a_driver_that_applies_the_commands_follows_them_rate_limit_and_all() -> None:
    follow = _follow()
    out = np.full(3, 100.0)
    for k in range(200):  # 125 Hz commands rising 2,000 N/s; the driver's 500 Hz outputs lag
        t = 0.008 * k
        command = np.full(3, 100.0 + 2000.0 * t)
        follow.sent(t, command)
        for j in range(4):
            out = np.minimum(command, out + 30.0)  # 30 N per 2 ms: the rate limit
            follow.driver(t + 0.002 * j + 0.001, out)
            assert follow.following, follow.message(["a", "b", "c"])


def test_a_driver_on_its_own_stop_is_seen_after_the_samples_and_forgiven_at_once() -> None:
    follow = _follow()
    held = np.array([300.0, 200.0, 100.0])
    for k in range(3):
        follow.sent(0.008 * k, held)
    seen = []
    for j in range(40):  # the commands rise while the driver holds
        t = 0.024 + 0.002 * j
        if j % 4 == 0:
            follow.sent(t, held + np.array([0.0, 0.0, 10.0 * j]))
        follow.driver(t + 0.001, held)
        seen.append(follow.following)
    first = seen.index(False)
    # the third tendon's command left the held 100 N by more than 50 N at j = 8 (t = 0.04 s,
    # 180 N); the driver may still apply a command window_s old, so the first miss is at
    # t = 0.072 s (j = 24), and the warning samples later
    assert first == 24 + CFG.samples - 1
    assert "c sent 100.0 N" in follow.message(["a", "b", "c"])
    follow.sent(0.2, held)
    follow.driver(0.201, held)
    assert follow.following


def test_no_command_yet_judges_nothing() -> None:
    follow = _follow()
    follow.driver(0.0, np.zeros(3))
    assert follow.following and follow.message(["a", "b", "c"]) == ""


@pytest.fixture(scope="module")
def scenario(config_dir):
    setup = load_setup(config_dir, Overrides.parse([]))
    cfg = load_reliability_section(config_dir, "faults", FaultMatrixConfig)
    return setup, cfg


def test_a_lost_link_lowers_the_arm_and_the_way_back_is_not_a_yank(scenario) -> None:
    """1 s without the controller's commands at the driver (mid-move): the driver holds, then
    descends; the controller reports driver_not_following and keeps its goal at the hand, so
    the returning commands do not pull the hand back at full gain (1.47 m/s without it)."""
    setup, cfg = scenario
    cfg = dataclasses.replace(cfg, duration_s=1.0)
    trace, _ = run_case(setup, cfg, "command_dropout")
    t, hand = np.array(trace.t), np.array(trace.hand)
    t_on, t_off = cfg.inject_at_s, cfg.inject_at_s + cfg.duration_s
    flagged = [tt for tt, rules in zip(t, trace.rules) if "driver_not_following" in rules]
    assert flagged and t_on < flagged[0] < t_off and flagged[-1] <= t_off + 0.1
    speed, _ = hand_after(t, hand, t_off)
    assert speed < 0.5, f"the hand was pulled back at {speed:.2f} m/s"
    assert np.linalg.norm(hand[-1] - np.array(trace.goal)[-1]) < cfg.recovery_tolerance_m


def test_no_warning_on_a_healthy_run(scenario) -> None:
    setup, cfg = scenario
    trace, _ = run_case(setup, cfg, None)
    assert not any("driver_not_following" in rules for rules in trace.rules)
