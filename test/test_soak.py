"""The soak, short: the schedule makes reachable goals and pushes, the figures add up, nothing
leaks grossly (the hour-long run is ``musculo soak --hours 1``; doc/safety.md has its figures)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from musculo_control.cli import main
from musculo_control.control.goal import check_goal
from musculo_control.sim.reliability_config import load_reliability_section
from musculo_control.sim.rig import Rig
from musculo_control.sim.setup import Overrides, load_setup, start_pose
from musculo_control.sim.soak_schedule import SoakConfig, SoakSchedule

SHORT = ["--set", "reliability.soak.warmup_s=2", "--set", "reliability.soak.memory_every_s=2",
         "--set", "reliability.soak.rest_every_s=4", "--set", "reliability.soak.rest_s=1.5",
         "--set", "reliability.soak.window_s=0.5", "--set", "reliability.soak.hold_s=[1.0, 1.5]",
         "--set", "reliability.soak.move_s=[0.5, 1.0]",
         "--set", "reliability.soak.push_probability=1.0"]


def test_schedule_goals_are_reachable_and_pushes_happen(config_dir):
    setup = load_setup(config_dir, Overrides.parse([]))
    cfg = load_reliability_section(config_dir, "soak", SoakConfig, {"soak.seed": 5})
    rig = Rig(setup)
    q0 = start_pose(setup.robot, cfg.start_pose)
    sched = SoakSchedule(rig, cfg, q0)
    kinds, pushes = set(), 0
    t = 0.0
    while t < 120.0:
        goal = sched.goal_at(t)
        assert check_goal(goal, setup.controller_config.workspace) is None
        kinds.add(sched.seg.kind)
        pushes += sched.seg.push is not None and sched.seg.push[0] <= t < sched.seg.push[0] + 0.1
        t += 0.1
    assert kinds == {"move", "hold", "rest"} and pushes > 0
    # the same seed gives the same schedule
    again = SoakSchedule(rig, cfg, q0)
    assert np.allclose(again.goal_at(50.0).position_m, SoakSchedule(rig, cfg, q0).goal_at(
        50.0).position_m)


def test_short_soak_figures(tmp_path, config_dir):
    path = tmp_path / "soak.json"
    assert main(["soak", "--config", str(config_dir), "--duration", "8", "--json", str(path),
                 *SHORT]) == 0
    doc = json.loads(path.read_text())
    assert doc["simulated_s"] == pytest.approx(8.0)
    ticks = doc["ticks"]
    assert all(v == 0 for v in ticks["missed"].values()), ticks
    assert ticks["control_ticks_observed"] == ticks["run"]["control"] == 1000
    safety = doc["safety"]
    assert safety["nonfinite_commands"] == 0 and safety["nonfinite_sent"] == 0
    assert safety["max_command_N"] <= safety["limit_N"] and safety["max_sent_N"] <= \
        safety["limit_N"]
    mem = doc["memory"]
    assert mem["samples"] >= 3 and mem["growth_bytes"] < 1_000_000, mem
    assert doc["rest"]["count"] >= 1 and doc["holds"]["count"] >= 1
