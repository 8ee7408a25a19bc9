"""The safety rules: each check fires on what it is for and not on healthy data; the supervisor
sends minimum tension on every fault, holds the last good goal on a bad one, clamps, latches,
recovers through the resume ramp, and never lets a NaN or an out-of-range tension out."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from musculo_control.control.controller import make_controller
from musculo_control.control.controller_config import load_controller_config
from musculo_control.control.goal import HandGoal
from musculo_control.control.output import safe_output
from musculo_control.control.task_space import HandState
from musculo_control.hardware.drivers import load_drivers
from musculo_control.hardware.potentiometer import PotentiometerReading
from musculo_control.hardware.tendon_driver import TendonState
from musculo_control.safety import (
    RULES,
    GoalRequest,
    Supervisor,
    rules_markdown,
)
from musculo_control.safety.config import load_safety_config
from musculo_control.safety.consistency import ConsistencyMonitor
from musculo_control.safety.resume import ResumeRamp
from musculo_control.safety.rules import RULE_NAMES, rule
from musculo_control.safety.supervisor_state import SupervisorState
from musculo_control.safety.tendon_monitor import TendonMonitor
from musculo_control.stopping import Stop

DT = 0.002  # sensor period [s]
#: the tendon monitor's rules for a tension off its command (the first miss, a confirmed one)
MISS = {"actuator_lagging", "actuator_tracking"}
TICK = 0.008  # control period [s]


@pytest.fixture(scope="module")
def drivers(robot):
    return load_drivers(robot)


@pytest.fixture(scope="module")
def safety_cfg(config_dir, drivers):
    return load_safety_config(config_dir, drivers.tendons.config)


@pytest.fixture(scope="module")
def ctrl_cfg(config_dir):
    return load_controller_config(config_dir)


@pytest.fixture(scope="module")
def home(robot, task):
    from musculo_control.estimation.snapshot import DynamicsEstimator

    est = DynamicsEstimator(robot, task)
    snap = est.compute(robot.home_pose_rad, np.zeros(7), 0.0)
    return snap, HandGoal.hold(snap.hand_position_m, snap.hand_rotation)


class FakeController:
    """Returns a set tension (or a failure) and remembers the goals it was given."""

    name = "fake"

    def __init__(self, robot, tension=None, ok=True):
        self.robot = robot
        self.tension = np.full(robot.n_muscles, 20.0) if tension is None else tension
        self.ok = ok
        self.goals: list[HandGoal] = []
        self.angles: list[np.ndarray] = []  # the joint angles it was given [rad]
        self.resets: list[int] = []  # how many ticks it had made when it was reset

    def tick(self, snapshot, q_rad, qd_rad_s, goal, t_s):
        self.goals.append(goal)
        self.angles.append(np.array(q_rad))
        if not self.ok:
            return safe_output(self.robot, "fake: QP not solved")
        base = safe_output(self.robot, "")
        return dataclasses.replace(base, ok=True, reason="", tension_n=np.array(self.tension))

    def reset(self):
        self.resets.append(len(self.goals))


class World:
    """Consistent healthy inputs for the supervisor at time t (the arm at home, at rest)."""

    def __init__(self, robot, snapshot):
        self.robot = robot
        self.snap = snapshot
        self.lengths = robot.geometry.lengths_at(snapshot.q_rad)

    def joints(self, t, q=None, qd=None):
        q = self.snap.q_rad if q is None else q
        qd = np.zeros(7) if qd is None else qd
        return PotentiometerReading(t, np.array(q), np.array(qd), ())

    def tendons(self, t, tension=20.0, lengths=None):
        m = self.robot.n_muscles
        return TendonState(t, self.lengths.copy() if lengths is None else lengths, np.zeros(m),
                           np.full(m, tension), ())

    def snapshot(self, t):
        return dataclasses.replace(self.snap, stamp_s=t)


def make_supervisor(robot, safety_cfg, ctrl_cfg, drivers, **changes):
    cfg = dataclasses.replace(safety_cfg, **changes)
    sup = Supervisor(robot, cfg, ctrl_cfg.workspace, drivers.tendons.config)
    sup.reset(0.0, np.full(robot.n_muscles, 20.0))
    return sup


def tick(sup, world, controller, t, goal, **kw):
    """Offer ``goal`` at ``t`` (None: offer nothing), then one tick with healthy inputs unless
    ``kw`` says otherwise."""
    if goal is not None:
        sup.offer_goal(goal, t, t)
    args = {"joints": world.joints(t - 0.001), "tendons": world.tendons(t - 0.001),
            "snapshot": world.snapshot(t - 0.02)}
    args.update(kw)
    return sup.tick(t, controller, **args)


def assert_minimum(out, sup):
    assert not out.ok
    np.testing.assert_array_equal(out.tension_n, sup.tension_min_n)


def assert_stopped(out, sup, in_force, rule_name):
    """The output is the first tick of the stop ``rule_name`` calls, from ``in_force`` [N]:
    hold, the tensions in force; descend, at most those and above the minimum where they
    were; cut, the minimum."""
    assert not out.ok
    stop = sup.config.stops.stop_of(rule_name)
    if stop == Stop.CUT:
        np.testing.assert_array_equal(out.tension_n, sup.tension_min_n)
    elif stop == Stop.HOLD:
        np.testing.assert_allclose(out.tension_n, in_force)
    else:
        assert np.all(out.tension_n <= in_force + 1e-9)
        assert np.all(out.tension_n >= sup.tension_min_n)


# -- the table ----------------------------------------------------------------------------------
def test_rules_table_is_complete_and_in_the_doc():
    assert len(set(RULE_NAMES)) == len(RULES)
    for r in RULES:
        assert r.severity in ("warning", "fault") and r.detected_by and r.safe_state
        assert not (r.latched and r.severity == "warning")
    with pytest.raises(KeyError, match="joint_state"):
        rule("joint_stat")
    root = Path(__file__).resolve().parents[1]
    docs = [p for p in (root / "doc" / "safety.md", root / "README.md") if p.exists()]
    assert any(rules_markdown() in p.read_text() for p in docs), \
        "doc/safety.md or README.md: paste musculo_control.safety.rules_markdown() again"


def test_every_rule_the_code_names_is_in_the_table():
    src = Path(__file__).resolve().parents[1] / "musculo_control" / "safety"
    named = set()
    for path in src.glob("*.py"):
        named |= set(re.findall(r'Finding\(\s*"([a-z_]+)"', path.read_text()))
    assert named and named <= set(RULE_NAMES), named - set(RULE_NAMES)


# -- tendon monitor -----------------------------------------------------------------------------
def _state(robot, t, tension, length=None, rate=None):
    m = robot.n_muscles
    length = 0.5 * (robot.l_min_m + robot.l_max_m) if length is None else length
    return TendonState(t, length, np.zeros(m) if rate is None else rate, tension, ())


def test_tendon_monitor_quiet_when_the_actuators_follow_the_lag(robot, safety_cfg):
    cfg = safety_cfg.tendons
    mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
    m = robot.n_muscles
    mon.reset(0.0, np.full(m, 10.0))
    f = np.full(m, 10.0)
    target = np.full(m, 200.0)
    for k in range(1, 200):  # a step to 200 N through the same first-order lag
        t = k * DT
        mon.sent(t, target)
        f = f + (1 - math.exp(-DT / cfg.actuator_time_constant_s)) * (target - f)
        assert mon.check(_state(robot, t, f)) == ()
    assert np.allclose(mon.expected_tension_n, 200.0, atol=1.0)


def test_tendon_monitor_quiet_when_an_elastic_wire_rises_at_its_slowest(robot, safety_cfg):
    """An elastic wire's tension rises no faster than its stiffness times the winch's speed:
    a healthy one at exactly tendons.rise_rate_n_s (then the lag) raises nothing, where the lag
    alone would latch it; a cap below the command at a steady command is still seen at once."""
    import dataclasses

    cfg = safety_cfg.tendons
    assert cfg.rise_rate_n_s is not None
    m = robot.n_muscles

    def findings(config, cap=None, steps=150):
        mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, config)
        mon.reset(0.0, np.full(m, 10.0))
        f = np.full(m, 10.0)
        target = np.full(m, 1000.0)
        alpha = 1 - math.exp(-DT / cfg.actuator_time_constant_s)
        out = set()
        for k in range(1, steps):
            t = k * DT
            mon.sent(t - cfg.command_delay_s, target)
            f = f + np.minimum(alpha * (target - f), cfg.rise_rate_n_s * DT)
            if cap is not None:
                f = np.minimum(f, cap)
            out |= {x.rule for x in mon.check(_state(robot, t, f))}
        return out

    assert findings(cfg) == set()
    assert MISS & findings(dataclasses.replace(cfg, rise_rate_n_s=None))
    assert MISS & findings(cfg, cap=np.full(m, 400.0))


def test_tendon_monitor_slack_needs_its_samples(robot, safety_cfg):
    cfg = safety_cfg.tendons
    mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
    m = robot.n_muscles
    mon.reset(0.0, np.full(m, 5.0))
    f = np.full(m, 5.0)
    f[7] = 0.0
    found = [mon.check(_state(robot, (k + 1) * DT, f)) for k in range(cfg.slack_samples)]
    assert all(not any(x.rule == "tendon_slack" for x in fs) for fs in found[:-1])
    slack = [x for x in found[-1] if x.rule == "tendon_slack"]
    assert slack and robot.muscle_names[7] in slack[0].message


def test_tendon_monitor_tracking_and_its_speed_gate(robot, safety_cfg):
    cfg = safety_cfg.tendons
    mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
    m = robot.n_muscles
    mon.reset(0.0, np.full(m, 100.0))
    mon.sent(0.0, np.full(m, 100.0))
    weak = np.full(m, 100.0)
    weak[3] = 100.0 - 2 * cfg.tracking_tolerance_n
    fast = np.zeros(m)
    fast[3] = 2 * cfg.tracking_max_rate_m_s
    # winding in fast: the motor may not deliver, no finding
    for k in range(1, 5):
        assert mon.check(_state(robot, k * DT, weak, rate=fast)) == ()
    # slow: a finding after tracking_samples samples
    mon.reset(0.0, np.full(m, 100.0))
    mon.sent(0.0, np.full(m, 100.0))
    rules = [{x.rule for x in mon.check(_state(robot, k * DT, weak))}
             for k in range(1, cfg.tracking_samples + 1)]
    assert not MISS & rules[0] or cfg.tracking_samples == 1
    assert MISS & rules[-1]


def test_tendon_monitor_tracking_tolerates_a_reading_above_its_command_more(robot, safety_cfg):
    """A tendon the load pulls out reads above its command (a back-driven winch): the rule
    allows tracking_excess_tolerance_n there, tracking_tolerance_n below."""
    cfg = safety_cfg.tendons
    assert cfg.tracking_excess_tolerance_n > 2 * cfg.tracking_tolerance_n
    m = robot.n_muscles

    def rules_after(reading_n):
        mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
        mon.reset(0.0, np.full(m, 100.0))
        mon.sent(0.0, np.full(m, 100.0))
        f = np.full(m, 100.0)
        f[3] = reading_n
        return {x.rule for k in range(1, cfg.tracking_samples + 1)
                for x in mon.check(_state(robot, k * DT, f))}

    assert not MISS & rules_after(100.0 + 2 * cfg.tracking_tolerance_n)
    assert MISS & rules_after(100.0 + 2 * cfg.tracking_excess_tolerance_n)
    assert MISS & rules_after(100.0 - 2 * cfg.tracking_tolerance_n)


def test_tendon_monitor_restarts_its_expectation_after_a_gap_in_the_driver_outputs(
        robot, safety_cfg):
    """Driver outputs lost on their way to the monitor (a loaded machine): the actuators may
    have been sent minimum tension in the gap; the expectation restarts from the load cells
    instead of latching a fault. Without a gap the same readings are a fault."""
    cfg = safety_cfg.tendons
    m = robot.n_muscles
    gap = 2.0 * cfg.tracking_resync_gap_s

    def rules_after(first_output_s):
        mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
        mon.reset(0.0, np.full(m, 300.0))
        mon.sent(0.0, np.full(m, 300.0))
        mon.sent(first_output_s, np.full(m, 300.0))
        low = np.full(m, 40.0)  # the actuators sit far below their command
        out = set()
        for k in range(1, cfg.tracking_samples + 2):
            t = first_output_s + k * DT
            mon.sent(t, np.full(m, 300.0))
            out |= {x.rule for x in mon.check(_state(robot, t, low))}
        return out

    assert MISS & rules_after(DT)
    assert not MISS & rules_after(gap)


def _fall(robot, cfg, commands, target, steps, noise_n=0.0, seed=0):
    """Rules the monitor raises while the driver keeps sending ``commands`` [N] and the load
    cells instead follow ``target(f)`` (what each module really holds) through the actuators'
    lag, sampled at 500 Hz with Gaussian load-cell noise; ``(rules, first sample index)``."""
    m = robot.n_muscles
    rng = np.random.default_rng(seed)
    mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
    mon.reset(0.0, commands)
    mon.sent(0.0, commands)
    f = np.array(commands, dtype=float)
    for k in range(1, 20):  # tracking first
        mon.sent(k * DT, commands)
        assert mon.check(_state(robot, k * DT, f + rng.normal(0.0, noise_n, m))) == ()
    alpha = 1.0 - math.exp(-DT / cfg.actuator_time_constant_s)
    for k in range(20, 20 + steps):
        mon.sent(k * DT, commands)
        f = f + alpha * (target(f) - f)
        rules = {x.rule for x in mon.check(_state(robot, k * DT, f + rng.normal(0.0, noise_n, m)))}
        if rules:
            return rules, k - 20
    return set(), steps


def test_tendon_monitor_tells_the_modules_watchdog_from_a_weak_actuator(robot, safety_cfg):
    """Every module falling to its watchdog's tension together (the driver's commands stopped
    reaching them) is actuator_watchdog, not latched; one module short of its command, or all
    capped at one tension below their commands (a supply limit), is actuator_tracking."""
    cfg = safety_cfg.tendons
    w = cfg.watchdog_tension_n
    assert w is not None
    m = robot.n_muscles
    commands = np.linspace(20.0, 600.0, m)  # loaded and unloaded tendons
    for seed in range(5):
        rules, at = _fall(robot, cfg, commands, lambda f: np.full(m, w), 30, 1.0, seed)
        assert rules == {"actuator_watchdog"}, (seed, rules)
        assert at <= cfg.tracking_samples + 3, at

    def weak(f):  # one actuator delivers 60 % of its command
        out = np.array(commands)
        out[m - 2] *= 0.6
        return out

    rules, _ = _fall(robot, cfg, commands, weak, 50, 1.0)
    assert rules == {"actuator_lagging"}
    rules, _ = _fall(robot, cfg, commands, lambda f: np.minimum(commands, 150.0), 100, 1.0)
    assert rules == {"actuator_lagging"}
    rule_of = {r.name: r for r in RULES}
    assert not rule_of["actuator_watchdog"].latched and rule_of["actuator_tracking"].latched


def test_tendon_monitor_watchdog_rule_off_without_a_watchdog(robot, safety_cfg):
    """A robot whose modules have no watchdog (``watchdog_tension_n`` null): the same fall is
    actuator_tracking."""
    import dataclasses

    cfg = dataclasses.replace(safety_cfg.tendons, watchdog_tension_n=None)
    m = robot.n_muscles
    commands = np.linspace(20.0, 600.0, m)
    rules, _ = _fall(robot, cfg, commands, lambda f: np.full(m, 5.0), 30)
    assert rules == {"actuator_lagging"}


def test_tendon_monitor_stands_the_watchdog_fault_while_the_modules_stay_silent(robot,
                                                                                 safety_cfg):
    """The band restarts from the load cells after each actuator_watchdog finding; while the
    commands still do not arrive the fault keeps being found (it stands), never as
    actuator_tracking; once they arrive again (the modules follow the driver) it stops."""
    cfg = safety_cfg.tendons
    w = cfg.watchdog_tension_n
    m = robot.n_muscles
    commands = np.linspace(20.0, 600.0, m)
    mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
    mon.reset(0.0, commands)
    alpha = 1.0 - math.exp(-DT / cfg.actuator_time_constant_s)
    f = commands.copy()
    seen = []
    for k in range(1, 120):
        mon.sent(k * DT, commands)
        silent = 10 <= k < 60  # the modules hold w for 100 ms
        f = f + alpha * ((np.full(m, w) if silent else commands) - f)
        seen.append({x.rule for x in mon.check(_state(robot, k * DT, f))})
    assert all(r <= {"actuator_watchdog"} for r in seen), seen
    assert any(seen[10:60]) and not any(seen[70:])
    # standing: found again every few samples while the modules are silent
    hits = [i for i, r in enumerate(seen) if r]
    assert max(np.diff(hits)) <= cfg.tracking_samples + 2, hits


def test_tendon_monitor_latches_a_miss_that_comes_again_after_tracking(robot, safety_cfg):
    """A weak actuator: missed once (actuator_lagging), it tracks the minimum tension the
    controller then sends, and misses again on the way back up: actuator_tracking. A stalled
    link: missed once, tracking again, and the next stall after tracking_confirm_window_s is
    again actuator_lagging."""
    cfg = safety_cfg.tendons
    m = robot.n_muscles
    alpha = 1.0 - math.exp(-DT / cfg.actuator_time_constant_s)
    high, low = np.full(m, 300.0), np.full(m, 5.0)

    def run(segments):
        """[(seconds, commanded, what the modules deliver of it)]: the rules, in order."""
        mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
        mon.reset(0.0, high)
        f, t, out = high.copy(), 0.0, []
        for seconds, sent, deliver in segments:
            for _ in range(int(round(seconds / DT))):
                t += DT
                mon.sent(t, sent)
                f = f + alpha * (deliver(sent) - f)
                out += [x.rule for x in mon.check(_state(robot, t, f))]
        return list(dict.fromkeys(out))

    def weak(c):
        d = c.copy()
        d[4] = min(d[4], 60.0)
        return d

    def same(c):
        return c

    assert run([(0.05, high, weak), (0.2, low, weak), (0.1, high, weak)]) \
        == ["actuator_lagging", "actuator_tracking"]
    # the same miss, but the arm never tracked in between: not confirmed
    assert run([(0.05, high, weak), (0.1, high, weak)]) == ["actuator_lagging"]
    # two stalls (each module holding 5 N for a while) further apart than the window
    stall = [(0.02, high, lambda c: low), (0.3, high, same)]
    gap = [(cfg.tracking_confirm_window_s, high, same)]
    assert "actuator_tracking" not in run(stall + gap + stall)


def test_tendon_monitor_runaway(robot, safety_cfg):
    cfg = safety_cfg.tendons
    mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
    m = robot.n_muscles
    mon.reset(0.0, np.full(m, 5.0))
    length = 0.5 * (robot.l_min_m + robot.l_max_m)
    length[2] = robot.l_min_m[2] - 2 * cfg.length_margin_m
    found = mon.check(_state(robot, DT, np.full(m, 5.0), length))
    assert [x.rule for x in found] == ["tendon_runaway"]
    rate = np.zeros(m)
    rate[4] = -2 * cfg.max_length_rate_m_s
    found = mon.check(_state(robot, 2 * DT, np.full(m, 5.0), rate=rate))
    assert [x.rule for x in found] == ["tendon_runaway"] and "rate" in found[0].message


# -- consistency --------------------------------------------------------------------------------
def test_consistency_follows_slow_model_error_and_catches_a_jump(robot, safety_cfg):
    cfg = safety_cfg.consistency
    mon = ConsistencyMonitor(robot.muscle_names, cfg)
    m = robot.n_muscles
    model = np.full(m, 0.3)
    bias = np.linspace(-0.003, 0.003, m)  # a few mm of model error, constant
    assert mon.update(0.0, model + bias, model, np.zeros(m)) is None
    t = 0.0
    for _ in range(500):  # the bias creeps by 1 mm over 1 s: the baseline follows
        t += DT
        bias = bias + 0.001 * DT
        assert mon.update(t, model + bias, model, np.zeros(m)) is None
    jump = bias.copy()
    jump[5] += 2 * cfg.tolerance_m
    found = mon.update(t + DT, model + jump, model, np.zeros(m))
    assert found is not None and found.rule == "consistency"
    assert robot.muscle_names[5] in found.message
    # the baseline stands still while it fires, and it clears when the readings agree again
    assert mon.update(t + 2 * DT, model + jump, model, np.zeros(m)) is not None
    assert mon.update(t + 3 * DT, model + bias, model, np.zeros(m)) is None


def test_consistency_holds_the_baseline_of_a_snapped_tendon(robot, safety_cfg):
    """A snapped tendon's free winch reads nothing of the path: its baseline must not follow
    the reading (while the check is quiet, as when the arm's motion widens the allowance), or
    the reading of the mended tendon disagrees with it."""
    cfg = safety_cfg.consistency
    m = robot.n_muscles
    model = np.full(m, 0.3)
    travel = np.full(m, 1.0)  # the arm moving: a wide allowance [m/s]
    held = np.zeros(m, dtype=bool)
    held[5] = True
    mons = {}
    for hold in (False, True):
        mon = mons[hold] = ConsistencyMonitor(robot.muscle_names, cfg)
        mon.update(0.0, model, model, np.zeros(m))
        wound = model.copy()
        for k in range(1, 200):
            wound[5] -= 0.5 * cfg.tolerance_m  # winding in, within the allowance
            assert mon.update(k * DT, wound, model, travel,
                              hold_baseline=held if hold else None) is None
    assert mons[True]._baseline[5] == 0.0
    assert mons[False]._baseline[5] < -10 * cfg.tolerance_m  # it followed the free winch


def test_consistency_tolerance_grows_with_recent_travel(robot, safety_cfg):
    cfg = safety_cfg.consistency
    mon = ConsistencyMonitor(robot.muscle_names, cfg)
    m = robot.n_muscles
    model = np.full(m, 0.3)
    mon.update(0.0, model, model, np.zeros(m))
    rate = np.full(m, 0.2)  # every muscle moving at 0.2 m/s for 50 ms
    off = 0.5 * cfg.relative_tolerance * 0.2 * 0.05 + cfg.tolerance_m
    found = None
    for k in range(1, 26):
        found = mon.update(k * DT, model + off * k / 25, model, rate)
    assert found is None


def test_consistency_counts_each_joints_share_of_a_muscles_travel(robot, safety_cfg, ctrl_cfg,
                                                                   drivers, home, monkeypatch):
    """The supervisor passes sum_j |Jm_ij qd_j| as each muscle's rate of travel, so joints whose
    shares cancel in a muscle's net change still count (their moment-arm errors add). Oracle:
    central differences of the lengths joint by joint; the net rate |Jm qd| is smaller for some
    muscle (the check can fail)."""
    snap, _ = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world = World(robot, snap)
    seen, turns = [], []
    real = sup.consistency.update

    def spy(t, meas, mod, rate, turn, **kw):
        seen.append(rate.copy())
        turns.append(turn.copy())
        return real(t, meas, mod, rate, turn, **kw)

    monkeypatch.setattr(sup.consistency, "update", spy)
    qd = np.array([0.3, -0.2, 0.4, 0.5, -1.2, 0.6, -0.4])
    q = snap.q_rad
    joints = PotentiometerReading(0.009, q.copy(), qd, ())
    sup.tick(0.01, FakeController(robot), joints=joints, tendons=world.tendons(0.009),
             snapshot=world.snapshot(0.0))
    assert seen, "the consistency check did not run"
    h = 1e-6
    shares = np.zeros((robot.n_muscles, 7))
    for j in range(7):
        dq = np.zeros(7)
        dq[j] = h
        shares[:, j] = (robot.geometry.lengths_at(q + dq)
                        - robot.geometry.lengths_at(q - dq)) / (2 * h) * qd[j]
    np.testing.assert_allclose(seen[-1], np.abs(shares).sum(axis=1), rtol=1e-5, atol=1e-9)
    assert np.any(np.abs(shares.sum(axis=1)) < 0.8 * seen[-1])
    # the rotation of the joints each muscle spans (a share that moves it at all)
    spanned = np.abs(shares) > 1e-4 * np.abs(qd)
    np.testing.assert_allclose(turns[-1], spanned @ np.abs(qd), rtol=1e-9)


def test_consistency_allows_an_absolute_moment_arm_error_on_a_short_lever(robot, safety_cfg):
    """A via-point error moves a lever by millimetres whatever its length: a muscle with a
    short lever whose mismatch grows by just under moment_arm_error_m per radian of its joints'
    rotation passes; at twice that it fires. Without the absolute allowance the first fires
    too (the relative one alone is too small on a short lever)."""
    import dataclasses

    cfg = safety_cfg.consistency
    assert cfg.moment_arm_error_m > 0.0
    m = robot.n_muscles
    model = np.full(m, 0.3)
    lever = 0.002  # a 2 mm lever [m/rad]
    turn_rate = np.full(m, 3.0)  # its joints turn at 3 rad/s for 0.3 s

    def fires(config, error_per_rad):
        mon = ConsistencyMonitor(robot.muscle_names, config)
        mon.update(0.0, model, model, np.zeros(m), np.zeros(m))
        out = None
        for k in range(1, 151):
            t = k * DT
            drift = error_per_rad * 3.0 * t
            out = mon.update(t, model + drift, model, lever * turn_rate, turn_rate) or out
        return out is not None

    within = 0.9 * cfg.moment_arm_error_m
    assert not fires(cfg, within)
    assert fires(cfg, 2.5 * cfg.moment_arm_error_m + cfg.relative_tolerance * lever)
    assert fires(dataclasses.replace(cfg, moment_arm_error_m=0.0), within)


# -- resume ramp --------------------------------------------------------------------------------
def test_resume_ramp_starts_at_the_hand_and_joins_the_goal_smoothly(home):
    snap, goal = home
    rot = snap.hand_rotation @ np.array([[1, 0, 0], [0, 0.8, -0.6], [0, 0.6, 0.8]])
    hand = HandState(goal.position_m + [0.05, -0.02, -0.1], np.array([0.0, 0.0, -0.5]), rot,
                     np.zeros(3))
    moving = HandGoal(goal.position_m, [0.01, 0.0, 0.0], np.zeros(3), goal.rotation)
    ramp = ResumeRamp(2.0, 1.0, hand, moving)
    g0 = ramp.goal(2.0, moving)
    assert np.allclose(g0.position_m, hand.position_m) and np.allclose(g0.rotation, rot)
    assert np.allclose(g0.velocity_m_s, moving.velocity_m_s)  # at rest relative to the goal
    assert not ramp.active(3.0) and ramp.goal(3.0, moving) is moving
    h = 1e-5  # the goal's velocity and acceleration are the derivatives of its position
    for t in (2.1, 2.4, 2.77):
        gm, gp, g = ramp.goal(t - h, moving), ramp.goal(t + h, moving), ramp.goal(t, moving)
        vel = (gp.position_m - gm.position_m) / (2 * h) + moving.velocity_m_s
        acc = (gp.velocity_m_s - gm.velocity_m_s) / (2 * h)
        assert np.allclose(g.velocity_m_s, vel, atol=1e-6)
        assert np.allclose(g.acceleration_m_s2, acc, atol=1e-4)
    end = ramp.goal(3.0 - 1e-9, moving)
    assert np.allclose(end.position_m, moving.position_m, atol=1e-9)
    assert np.allclose(end.rotation, moving.rotation, atol=1e-6)


# -- the supervisor -----------------------------------------------------------------------------
def test_healthy_inputs_pass_the_command_through(robot, safety_cfg, ctrl_cfg, drivers, home):
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    for k in range(1, 10):
        out, report = tick(sup, world, ctrl, k * TICK, goal)
        assert out.ok and report.ok and report.level == 0, report.summary()
        np.testing.assert_array_equal(out.tension_n, ctrl.tension)
    assert ctrl.goals[-1] is goal


@pytest.mark.parametrize("case, rule_name", [
    ("stale_joints", "joint_state_stale"), ("joint_faults", "joint_state"),
    ("no_joints", "joint_state"), ("stale_tendons", "tendon_state_stale"),
    ("tendon_faults", "tendon_state"), ("stale_snapshot", "snapshot_stale"),
    ("no_snapshot", "snapshot_stale"), ("qp_failure", "controller"),
    ("nan_command", "command_invalid"), ("short_command", "command_invalid"),
    ("low_command", "command_invalid"), ("future_snapshot", "snapshot_stale"),
    ("lengths_disagree", "consistency"), ("nan_joints", "joint_state"),
])
def test_each_fault_calls_its_stop_with_its_rule(robot, safety_cfg, ctrl_cfg, drivers, home,
                                                 case, rule_name):
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    assert tick(sup, world, ctrl, TICK, goal).output.ok
    t = 2 * TICK
    kw: dict = {}
    if case == "stale_joints":
        kw["joints"] = world.joints(t - 2 * safety_cfg.inputs.joint_state.hold_s)
    elif case == "joint_faults":
        kw["joint_faults"] = ("elbow_p: potentiometer count is not finite (nan)",)
    elif case == "no_joints":
        kw["joints"] = None
    elif case == "nan_joints":
        q = snap.q_rad.copy()
        q[1] = np.nan
        kw["joints"] = world.joints(t - 0.001, q)
    elif case == "stale_tendons":
        kw["tendons"] = world.tendons(t - 2 * safety_cfg.inputs.tendon_state.hold_s)
    elif case == "tendon_faults":
        kw["tendons"] = world.tendons(t - 0.001)._replace(faults=("biceps: encoder nan",))
    elif case == "stale_snapshot":
        kw["snapshot"] = world.snapshot(t - 2 * safety_cfg.inputs.snapshot.hold_s)
    elif case == "no_snapshot":
        kw["snapshot"] = None
    elif case == "qp_failure":
        ctrl.ok = False
    elif case == "nan_command":
        ctrl.tension = np.where(np.arange(robot.n_muscles) == 4, np.nan, 20.0)
    elif case == "short_command":
        ctrl.tension = np.full(robot.n_muscles - 1, 20.0)
    elif case == "low_command":
        ctrl.tension = np.full(robot.n_muscles, 20.0)
        ctrl.tension[0] = -1.0
    elif case == "future_snapshot":
        kw["snapshot"] = world.snapshot(t + 2 * safety_cfg.inputs.snapshot.hold_s)
    elif case == "lengths_disagree":
        lengths = world.lengths.copy()
        lengths[6] += 10 * safety_cfg.consistency.tolerance_m
        kw["tendons"] = world.tendons(t - 0.001, lengths=lengths)
    in_force = np.full(robot.n_muscles, 20.0)  # the first tick's command
    out, report = tick(sup, world, ctrl, t, kw.pop("goal", goal), **kw)
    assert_stopped(out, sup, in_force, rule_name)
    assert rule_name in report.rules and report.state == SupervisorState.FAULT and report.level == 2
    assert rule_name in out.reason and report.stop in out.reason
    # back to normal: the stop goes on for recovery_hold_s, then the command goes out again
    held = out.tension_n.copy()
    ctrl.ok, ctrl.tension = True, np.full(robot.n_muscles, 20.0)
    t_clear = t + TICK
    out, report = tick(sup, world, ctrl, t_clear, goal)
    assert not out.ok and np.all(out.tension_n <= held + 1e-9)
    assert report.state == SupervisorState.HOLDING and report.level == 1  # a recovery, not an error
    t_back = t + safety_cfg.recovery_hold_s + TICK
    out, report = tick(sup, world, ctrl, t_back, goal)
    assert out.ok and report.state == SupervisorState.RUNNING
    assert [(tr.from_state, tr.to_state) for tr in sup.transitions] == [
        (SupervisorState.RUNNING, SupervisorState.FAULT),
        (SupervisorState.FAULT, SupervisorState.HOLDING),
        (SupervisorState.HOLDING, SupervisorState.RUNNING)]


def test_warnings_keep_control(robot, safety_cfg, ctrl_cfg, drivers, home):
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    tick(sup, world, ctrl, TICK, goal)
    out, report = tick(sup, world, ctrl, 2 * TICK, GoalRequest([0.3, math.nan, 0.3]))
    assert out.ok and report.level == 1 and report.rules == {"goal_invalid"}
    assert ctrl.goals[-1] is goal  # the last good goal was held
    over = np.full(robot.n_muscles, 20.0)
    over[2] = 10 * sup.tension_max_n
    ctrl.tension = over
    out, report = tick(sup, world, ctrl, 3 * TICK, goal)
    assert out.ok and report.rules == {"command_saturated"}
    assert out.tension_n[2] == sup.tension_max_n and out.tension_n.max() <= sup.tension_max_n
    t = 3 * TICK + safety_cfg.saturation_timeout_s + TICK
    out, report = tick(sup, world, ctrl, t, goal)
    assert out.ok and "saturation_persistent" in report.rules


def test_a_late_snapshot_is_a_warning_before_it_is_stale(robot, safety_cfg, ctrl_cfg, drivers,
                                                        home):
    snap, goal = home
    bounds = safety_cfg.inputs.snapshot
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    late = 0.5 * (bounds.late_s + bounds.hold_s)
    out, report = tick(sup, world, ctrl, 1.0, goal, snapshot=world.snapshot(1.0 - late))
    assert out.ok and report.rules == {"snapshot_late"} and report.level == 1
    assert "late" in report.summary()
    out, report = tick(sup, world, ctrl, 1.0 + TICK, goal, snapshot=world.snapshot(
        1.0 + TICK - bounds.hold_s - 0.001))
    assert not out.ok and "snapshot_stale" in report.rules


@pytest.mark.parametrize("stream, late_rule, stale_rule", [
    ("joint_state", "joint_state_late", "joint_state_stale"),
    ("tendon_state", "tendon_state_late", "tendon_state_stale"),
    ("driver_output", "driver_late", "driver_silent"),
])
def test_a_late_input_is_reported_and_counted_and_control_goes_on_until_its_hold_bound(
        robot, safety_cfg, ctrl_cfg, drivers, home, stream, late_rule, stale_rule):
    """Between late_s and hold_s: a warning, counted, the controller's command goes out; past
    hold_s: a fault, minimum tension. Late joint angles reach the controller extrapolated by
    their velocity over their age."""
    snap, goal = home
    bounds = getattr(safety_cfg.inputs, stream)
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    assert tick(sup, world, ctrl, TICK, goal, driver_stamp_s=TICK - 0.002).output.ok
    qd = np.linspace(-0.5, 0.5, 7)  # [rad/s]
    for k, age in enumerate((0.5 * (bounds.late_s + bounds.hold_s), 0.99 * bounds.hold_s)):
        t = (k + 2) * TICK
        kw = {"driver_stamp_s": t - 0.002}
        if stream == "joint_state":
            kw["joints"] = world.joints(t - age, qd=qd)
        elif stream == "tendon_state":
            kw["tendons"] = world.tendons(t - age)
        else:
            kw["driver_stamp_s"] = t - age
        out, report = tick(sup, world, ctrl, t, goal, **kw)
        assert out.ok and report.level == 1 and report.rules == {late_rule}, report.summary()
        assert sup.late_ticks[late_rule] == k + 1
        if stream == "joint_state":
            np.testing.assert_allclose(ctrl.angles[-1], snap.q_rad + qd * age)
    t = 4 * TICK
    kw = {"driver_stamp_s": t - 0.002}
    stale = bounds.hold_s + 0.001
    if stream == "joint_state":
        kw["joints"] = world.joints(t - stale)
    elif stream == "tendon_state":
        kw["tendons"] = world.tendons(t - stale)
    else:
        kw["driver_stamp_s"] = t - stale
    out, report = tick(sup, world, ctrl, t, goal, **kw)
    assert_stopped(out, sup, np.full(robot.n_muscles, 20.0), stale_rule)
    assert stale_rule in report.rules


def test_joint_angles_on_time_reach_the_controller_as_measured(robot, safety_cfg, ctrl_cfg,
                                                              drivers, home):
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    age = 0.9 * safety_cfg.inputs.joint_state.late_s
    out, _ = tick(sup, world, ctrl, 1.0, goal, joints=world.joints(1.0 - age, qd=np.ones(7)))
    assert out.ok
    np.testing.assert_array_equal(ctrl.angles[-1], snap.q_rad)


def test_without_a_goal_the_hand_holds_where_it_is(robot, safety_cfg, ctrl_cfg, drivers, home):
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    out, report = tick(sup, world, ctrl, TICK, None)
    assert out.ok and report.rules == {"no_goal"} and report.level == 1
    np.testing.assert_allclose(ctrl.goals[-1].position_m, snap.hand_position_m, atol=1e-9)
    np.testing.assert_allclose(ctrl.goals[-1].rotation, snap.hand_rotation, atol=1e-9)
    out, report = tick(sup, world, ctrl, 2 * TICK, None)  # reported once, then held
    assert out.ok and report.rules == frozenset()
    assert ctrl.goals[-1] is ctrl.goals[-2]
    out, report = tick(sup, world, ctrl, 3 * TICK, goal)
    assert ctrl.goals[-1] is goal


def test_latched_fault_waits_for_acknowledge(robot, safety_cfg, ctrl_cfg, drivers, home):
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    m = robot.n_muscles
    sup.driver_sent(0.0, np.full(m, 100.0))
    sup.reset(0.0, np.full(m, 100.0))
    sup.driver_sent(0.0, np.full(m, 100.0))
    weak = np.full(m, 100.0)
    weak[9] = 10.0  # the actuator delivers far less than it was sent
    # the first miss (actuator_lagging), every tendon tracking again for tracking_clean_s, the
    # second miss: latched
    k = 0
    for tension in [weak] * 3 + [np.full(m, 100.0)] * 40 + [weak] * 3:
        k += 1
        sup.driver_sent(k * DT, np.full(m, 100.0))
        sup.tendon_sample(world.tendons(k * DT, tension=tension))
    out, report = tick(sup, world, ctrl, TICK, goal,
                       tendons=world.tendons(k * DT, tension=weak))
    assert_stopped(out, sup, np.full(m, 100.0), "actuator_tracking")
    assert "actuator_tracking" in report.rules and report.latched
    t = TICK
    for _ in range(20):  # the condition is gone (the load cell agrees again) but it stays off
        t += TICK
        sup.driver_sent(t, np.full(m, 20.0))
        out, report = tick(sup, world, ctrl, t, goal)
    # the latched fault's stop goes on: a descend, 20 ticks into it
    assert not out.ok and report.stop == "descend"
    assert np.all(out.tension_n < 100.0) and np.all(out.tension_n > sup.tension_min_n)
    assert report.state == SupervisorState.LATCHED and "acknowledge" in report.summary()
    assert [f.rule for f in sup.acknowledge()] == ["actuator_tracking"]
    t += safety_cfg.recovery_hold_s + TICK
    out, report = tick(sup, world, ctrl, t, goal)
    assert out.ok and report.state == SupervisorState.RUNNING


def test_control_resumes_from_the_hand_not_with_a_jump(robot, safety_cfg, ctrl_cfg, drivers,
                                                      home):
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    tick(sup, world, ctrl, TICK, goal)
    tick(sup, world, ctrl, 2 * TICK, goal, snapshot=None)  # a fault
    dropped = snap.q_rad + np.array([0.0, -0.3, 0.0, 0.3, 0.0, 0.0, 0.0])  # the arm fell
    t = 2 * TICK + safety_cfg.recovery_hold_s + TICK
    out, report = tick(sup, world, ctrl, t, goal, joints=world.joints(t - 0.001, dropped),
                       tendons=world.tendons(t - 0.001, lengths=robot.geometry.lengths_at(
                           dropped)))
    assert out.ok, report.summary()
    data = robot.new_data()
    import pinocchio as pin

    pin.framesForwardKinematics(robot.arm.model, data, dropped)
    hand = data.oMf[robot.arm.task_frame_id].translation
    assert np.linalg.norm(hand - goal.position_m) > 0.03  # the test is not vacuous
    assert np.allclose(ctrl.goals[-1].position_m, hand, atol=1e-9)
    # and the controller starts afresh there: what it kept (its integral) is of before the fall
    assert ctrl.resets == [1], ctrl.resets
    tick(sup, world, ctrl, t + TICK, goal)  # running on: no more resets
    assert ctrl.resets == [1], ctrl.resets


def test_a_resume_from_far_away_takes_the_hand_back_no_faster_than_the_resume_speed(
        robot, safety_cfg, ctrl_cfg, drivers, home):
    """An arm a stop lowered far below its goal comes back along a ramp whose goal moves at
    most resume_speed_m_s, not within resume_ramp_s whatever the distance."""
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    tick(sup, world, ctrl, TICK, goal)
    tick(sup, world, ctrl, 2 * TICK, goal, snapshot=None)  # a fault
    hung = snap.q_rad + np.array([1.2, 0.0, 0.0, 1.5, 0.0, 0.0, 0.0])  # lowered far
    lengths = robot.geometry.lengths_at(hung)
    hand, _ = robot.arm.hand_pose(hung)
    far = float(np.linalg.norm(hand - goal.position_m))
    assert far > 1.875 * safety_cfg.resume_speed_m_s * safety_cfg.resume_ramp_s  # not vacuous
    t = 2 * TICK + safety_cfg.recovery_hold_s + TICK
    speeds = []
    while t < 2 * TICK + 1.875 * far / safety_cfg.resume_speed_m_s + 0.5:
        out, report = tick(sup, world, ctrl, t, goal, joints=world.joints(t - 0.001, hung),
                           tendons=world.tendons(t - 0.001, lengths=lengths))
        assert out.ok, report.summary()
        speeds.append(float(np.linalg.norm(ctrl.goals[-1].velocity_m_s)))
        t += TICK
    assert max(speeds) <= 1.001 * safety_cfg.resume_speed_m_s
    assert max(speeds) > 0.95 * safety_cfg.resume_speed_m_s and speeds[-1] == 0.0


def test_the_supervisors_own_pause_is_no_fault_and_control_resumes_from_the_hand(
        robot, safety_cfg, ctrl_cfg, drivers, home):
    """Frozen for 250 ms (its process stopped), the supervisor's first tick after the pause
    finds inputs that aged with it: not late, no stop; the goal restarts from the hand, where
    the driver's hold left the arm, instead of pulling it back at full gain."""
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    for k in range(1, 5):
        assert tick(sup, world, ctrl, k * TICK, goal).output.ok
    t0 = 4 * TICK
    moved = snap.q_rad + np.array([0.0, -0.1, 0.0, 0.1, 0.0, 0.0, 0.0])  # where it sagged
    t = t0 + 0.25
    out, report = tick(sup, world, ctrl, t, goal, joints=world.joints(t0 - 0.001, moved),
                       tendons=world.tendons(t0 - 0.001, lengths=robot.geometry.lengths_at(moved)),
                       snapshot=world.snapshot(t0 - 0.01),
                       driver_stamp_s=t0 - 0.002)
    assert out.ok and report.state == SupervisorState.RUNNING and report.level == 0, report.summary()
    hand, _ = robot.arm.hand_pose(moved)
    assert np.linalg.norm(hand - goal.position_m) > 0.01  # the test is not vacuous
    np.testing.assert_allclose(ctrl.goals[-1].position_m, hand, atol=1e-9)
    assert ctrl.resets == [] and sup.pause.pauses == 1
    # nothing fresh after the pause: stale one hold bound after the resume, not before
    bound = safety_cfg.inputs.joint_state.hold_s
    seen = []
    for k in range(1, 8):  # ticks every 8 ms: 56 ms
        out, report = tick(sup, world, ctrl, t + k * TICK, goal,
                           joints=world.joints(t0 - 0.001, moved))
        if abs(k * TICK - bound) > 0.5 * TICK:  # not on the bound itself (rounding)
            seen.append(("joint_state_stale" in report.rules, k * TICK > bound))
    assert all(stale == beyond for stale, beyond in seen) and seen[-1][0], seen


def test_resuming_clears_the_real_controllers_integral(robot, safety_cfg, ctrl_cfg, drivers, home):
    """The OSC's integral (gains.ki_s3) wound up before a fault is gone when control resumes:
    on the runner a fallen arm acknowledged after 0.8 s ended 2.8-2.9 cm further from its goal
    than the fault-free run with the stale integral, 1.4-1.9 cm without it."""
    snap, goal = home
    cfg = dataclasses.replace(ctrl_cfg, gains=dataclasses.replace(ctrl_cfg.gains, ki_s3=1500.0))
    ctrl = make_controller("osc", robot, cfg)
    sup = make_supervisor(robot, safety_cfg, cfg, drivers)
    world = World(robot, snap)
    off = dataclasses.replace(goal, position_m=goal.position_m + np.array([0.0, 0.0, 0.005]))
    t = TICK
    for _ in range(20):  # 5 mm off, inside the integral zone: the integral winds up
        out, report = tick(sup, world, ctrl, t, off)
        t += TICK
    wound = ctrl._integral.update(np.zeros(3), t).copy()  # same time: adds nothing
    assert np.linalg.norm(wound) > 0.0
    tick(sup, world, ctrl, t, off, snapshot=None)  # a fault
    t += safety_cfg.recovery_hold_s + TICK
    out, report = tick(sup, world, ctrl, t, off)
    assert out.ok and report.state == SupervisorState.RUNNING, report.summary()
    # one tick since the reset: at most one tick of the 5 mm error integrated
    assert np.linalg.norm(ctrl._integral.update(np.zeros(3), t)) < 0.2 * np.linalg.norm(wound)


# -- property: nothing bad ever leaves ------------------------------------------------------------
_num = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                 st.floats(-1e3, 1e3))


def _vec(n):
    return st.one_of(st.lists(_num, min_size=n, max_size=n),
                     st.lists(_num, min_size=0, max_size=n + 3))


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_property_supervised_command_is_always_finite_and_in_range(robot, safety_cfg, ctrl_cfg,
                                                                   drivers, home, data):
    """Whatever the joint and tendon states, snapshot, goal and time (NaN, inf, huge, wrong
    lengths, stale, in the future), with the real controller inside: every tension that leaves
    the supervisor is finite, one per muscle, inside [min, max]."""
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    ctrl = make_controller(data.draw(st.sampled_from(["osc", "joint-stiffness"])), robot,
                           ctrl_cfg)
    world = World(robot, snap)
    m = robot.n_muscles
    for _ in range(data.draw(st.integers(1, 4))):
        t = data.draw(st.one_of(st.floats(-1.0, 2.0), st.just(math.nan), st.just(math.inf)))
        q = np.array(data.draw(_vec(7)), dtype=float)
        joints = data.draw(st.one_of(st.none(), st.just(
            PotentiometerReading(data.draw(st.floats(-1.0, 2.0)), q, q.copy(), ()))))
        tension = np.array(data.draw(_vec(m)), dtype=float)
        tendons = data.draw(st.one_of(st.none(), st.just(TendonState(
            data.draw(st.floats(-1.0, 2.0)), tension, tension.copy(), tension.copy(), ()))))
        field = data.draw(st.sampled_from(["gravity_torque_nm", "muscle_jacobian",
                                           "mass_matrix", "task_jacobian", "q_rad"]))
        junk = data.draw(st.sampled_from([np.nan, np.inf, 1e12, 0.0]))
        bad = np.full_like(getattr(snap, field), junk)
        snapshot = data.draw(st.sampled_from([
            None, dataclasses.replace(snap, stamp_s=data.draw(st.floats(-1.0, 2.0))),
            dataclasses.replace(snap, **{field: bad}, stamp_s=t if math.isfinite(t) else 0.0)]))
        g = data.draw(st.sampled_from([
            goal, GoalRequest(np.array(data.draw(_vec(3)), dtype=float)),
            HandGoal.hold(goal.position_m + data.draw(st.floats(-1.0, 1.0))), None, "goal"]))
        if data.draw(st.booleans()):
            sup.tendon_sample(world.tendons(0.0, tension=tension if tension.shape == (m,)
                                            else np.full(m, 5.0)))
        sup.offer_goal(g, t, t, data.draw(st.sampled_from([None, "base_link", "map"])))
        out, _ = sup.tick(t, ctrl, joints=joints, tendons=tendons, snapshot=snapshot)
        f = out.tension_n
        assert f.shape == (m,) and np.all(np.isfinite(f))
        assert np.all(f >= sup.tension_min_n) and np.all(f <= sup.tension_max_n)


def test_an_exception_inside_is_a_fault_not_a_crash(robot, safety_cfg, ctrl_cfg, drivers, home,
                                                    caplog):
    snap, goal = home

    class Boom:
        name = "boom"

        def tick(self, *args):
            raise RuntimeError("bug in a controller")

        def reset(self):
            pass

    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    with caplog.at_level("ERROR", logger="musculo_control.safety.supervisor"):
        out, report = tick(sup, World(robot, snap), Boom(), TICK, goal)
    assert_minimum(out, sup)
    assert report.rules == {"command_invalid"} and "bug in a controller" in out.reason
    # not hidden: the bug's traceback is in the log
    assert any(r.exc_info is not None and "bug in a controller" in str(r.exc_info[1])
               for r in caplog.records)


@pytest.mark.parametrize("with_history", [True, False])
def test_consistency_pairs_the_tendon_sample_with_the_joint_sample_of_its_instant(
        robot, safety_cfg, ctrl_cfg, drivers, home, with_history):
    """Joints and tendons reach a node by different hops: the newest joint sample is often one
    sensor period newer than the newest tendon sample. The check then compares the tendon
    sample with the recent joint sample of its instant; without that history it never
    compares, and a length mismatch goes unseen (the check can fail)."""
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    period = 0.002  # a 500 Hz sensor period [s]
    history: list = []
    found = False
    for k in range(1, 12):
        t = k * TICK
        sampled = t - 0.003
        history += [world.joints(sampled - period), world.joints(sampled)]
        lengths = world.lengths.copy()
        if k > 6:
            lengths[6] += 10 * safety_cfg.consistency.tolerance_m
        # the newest joint sample is one period ahead of the newest tendon sample
        kw = dict(joints=world.joints(sampled + period),
                  tendons=world.tendons(sampled, lengths=lengths))
        if with_history:
            kw["recent_joints"] = history[-8:]
        out, report = tick(sup, world, ctrl, t, goal, **kw)
        found |= "consistency" in report.rules
    assert found is with_history


def test_tendon_monitor_a_miss_after_a_gap_in_the_samples_is_not_confirmed(robot, safety_cfg):
    """The weak actuator of the test above, but the computer stalls (no sample, no output)
    between its tracking and the second miss: the misses before the gap say nothing of the
    actuators after it (a whole-machine stall looks like a module that stopped), so the
    second miss is a first one again, actuator_lagging; a third, after tracking since, is
    actuator_tracking. Without the gap the second miss latches (the test above)."""
    cfg = safety_cfg.tendons
    m = robot.n_muscles
    alpha = 1.0 - math.exp(-DT / cfg.actuator_time_constant_s)
    high, low = np.full(m, 300.0), np.full(m, 5.0)

    def weak(c):
        d = c.copy()
        d[4] = min(d[4], 60.0)
        return d

    mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
    mon.reset(0.0, high)
    f, t = high.copy(), 0.0
    stall = 2 * cfg.tracking_resync_gap_s
    segments = ((0.05, high), (0.2, low), ("gap", None), (0.1, high), (0.2, low), (0.1, high))
    found: list[set[str]] = []  # the rules of each segment
    for seconds, sent in segments:
        found.append(set())
        if seconds == "gap":
            t += stall
            continue
        for _ in range(int(round(seconds / DT))):
            t += DT
            mon.sent(t, sent)
            f = f + alpha * (weak(sent) - f)
            found[-1] |= {x.rule for x in mon.check(_state(robot, t, f))}
    assert [found[i] & MISS for i in (0, 3, 5)] == [
        {"actuator_lagging"}, {"actuator_lagging"}, {"actuator_tracking"}], found


def test_a_consistency_fault_stands_at_ticks_with_no_new_pair_to_compare(
        robot, safety_cfg, ctrl_cfg, drivers, home):
    """A tick whose newest tendon sample has no joint sample of its instant cannot compare
    lengths: the last verdict stands. Were it read as 'clear', the stop of a snapped tendon
    would end after ``recovery_hold_s`` of such ticks (a loaded graph, where joints and tendons
    arrive by different hops) and control would pull on the broken arm while it is still
    broken. A new comparison that agrees clears it as before."""
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    skew = safety_cfg.consistency.max_stamp_skew_s
    wrong = world.lengths.copy()
    wrong[6] += 10 * safety_cfg.consistency.tolerance_m
    assert tick(sup, world, ctrl, TICK, goal).output.ok
    out, report = tick(sup, world, ctrl, 2 * TICK, goal,
                       tendons=world.tendons(2 * TICK - 0.001, lengths=wrong))
    assert "consistency" in report.rules and not out.ok
    held = out.tension_n.copy()
    # longer than the recovery hold: every newest joint sample is 3 skews from the tendons'
    k_end = 3 + int(math.ceil(safety_cfg.recovery_hold_s / TICK)) + 3
    for k in range(3, k_end):
        t = k * TICK
        out, report = tick(sup, world, ctrl, t, goal, joints=world.joints(t - 0.001),
                           tendons=world.tendons(t - 0.001 - 3 * skew - 1e-4, lengths=wrong))
        assert "consistency" in report.rules and report.state == SupervisorState.FAULT, \
            (k, report.summary())
        assert not out.ok and np.all(out.tension_n <= held + 1e-9)
    # the lengths agree again, compared at an instant both sample: the fault clears
    t = k_end * TICK
    out, report = tick(sup, world, ctrl, t, goal)
    assert "consistency" not in report.rules and report.state == SupervisorState.HOLDING


def test_tendon_monitor_a_silent_link_under_one_loaded_tendon_is_the_watchdog(robot, safety_cfg):
    """The sequence of a link that went silent at wall clock under load (the mock's modules
    holding 5 N for 280 ms while the controller held, then resumed): every module reads its
    watchdog's tension while the controller ramps a single tendon back up from minimum
    tension. One loaded tendon gives the common-factor test nothing to compare, and the arm
    tracked while at minimum tension (5 N commanded, 5 N read), which proved nothing: the
    misses are actuator_watchdog, never a latched actuator_tracking. The
    same readings without the episode before them (one dead module under the only loaded
    tendon, every other tendon at minimum tension) are a miss, confirmed on the next ramp; one
    stuck module among loaded ones that follow is a miss at once."""
    cfg = safety_cfg.tendons
    w = cfg.watchdog_tension_n
    assert w is not None
    m = robot.n_muscles
    alpha = 1.0 - math.exp(-DT / cfg.actuator_time_constant_s)
    rest = np.full(m, w)  # minimum tension, which is also the watchdog's

    def ramp(t):  # the controller resumes: tendon 4 up to 300 N in 40 ms, the rest at rest
        c = rest.copy()
        c[4] = w + (300.0 - w) * min(t / 0.04, 1.0)
        return c

    def run(segments, after_s=0.0):
        """[(seconds, command at time t into the segment, what the modules deliver)]: the
        rules found after ``after_s``, in order."""
        mon = TendonMonitor(robot.muscle_names, robot.l_min_m, robot.l_max_m, cfg)
        high = np.full(m, 300.0)
        mon.reset(0.0, high)
        f, t, out = high.copy(), 0.0, []
        for seconds, command, deliver in segments:
            t0 = t
            for _ in range(int(round(seconds / DT))):
                t += DT
                sent = command(t - t0)
                mon.sent(t, sent)
                f = f + alpha * (deliver(sent) - f)
                found = mon.check(_state(robot, t, f))
                out += [x.rule for x in found] if t > after_s else []
        return list(dict.fromkeys(out))

    def silent(c):
        return rest

    def stuck(c):  # tendon 4's module at 5 N; every other module follows its command
        d = c.copy()
        d[4] = w
        return d

    hold = (0.06, lambda t: rest, silent)  # the controller at minimum tension
    resume = (0.1, ramp, silent)
    fall = (0.05, lambda t: np.full(m, 300.0), silent)
    rules = run([fall, hold, resume, hold, resume])
    assert rules[0] == "actuator_watchdog" and "actuator_tracking" not in rules, rules
    # (the fall's end, less than the tolerance a sample, may be one actuator_lagging; the
    # ramps after it are the hold)
    assert run([fall, hold, resume, hold, resume], after_s=0.11) == ["actuator_watchdog"]
    # no episode: a dead module under the ramp's only loaded tendon misses, and latches once the
    # arm has tracked (at minimum tension) in between
    rules = run([(0.05, lambda t: rest, stuck), (0.1, ramp, stuck), (0.06, lambda t: rest, stuck),
                 (0.1, ramp, stuck)])
    assert rules == ["actuator_lagging", "actuator_tracking"], rules
    # the other modules loaded and following: tendon 4 stuck at 5 N is its own actuator's fault
    loaded = np.full(m, 60.0)
    assert "actuator_lagging" in run([(0.05, lambda t: loaded, stuck)])


def test_supervisor_states_read_as_their_names_in_text_and_json():
    from musculo_control.loop.state_record import STATE_CODES
    from musculo_control.safety.supervisor import SafetyReport

    assert [s.value for s in SupervisorState] == ["running", "fault", "holding", "latched"]
    for s in SupervisorState:
        # reports, /diagnostics and logs print the name, whatever the Python version
        assert str(s) == f"{s}" == s.value and format(s, ">8") == f"{s.value:>8}"
        assert s == s.value and SupervisorState(s.value) is s
        assert json.dumps({"state": s, s: 1}) == f'{{"state": "{s.value}", "{s.value}": 1}}'
        assert STATE_CODES[s.value] == STATE_CODES[s]  # plain text still finds its code
    assert [STATE_CODES[s] for s in SupervisorState] == [0.0, 1.0, 2.0, 3.0]
    report = SafetyReport(1.0, SupervisorState.HOLDING, (), (), (), stop="hold")
    assert report.summary() == "holding (hold)" and type(report.summary()) is str
    assert report.level == 1 and not report.ok


def test_a_snapped_tendon_stands_while_it_reads_slack_and_clears_once_mended(
        robot, safety_cfg, ctrl_cfg, drivers, home):
    """The free winch of a snapped tendon winds in past its path: tendon_snapped. The arm's
    motion in the stop then widens the consistency check's allowance until the deviation fits
    in it again (a graph run resumed control on a snapped tendon that way); the finding must
    stand as long as the tendon reads slack, and clear when it carries tension again."""
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    slack_n = 0.5 * safety_cfg.tendons.slack_tension_n
    i = 6
    t = TICK
    assert tick(sup, world, ctrl, t, goal).output.ok

    def tendons_at(t, wound_m, tension_i):
        lengths = world.lengths.copy()
        lengths[i] -= wound_m
        state = world.tendons(t - 0.001, lengths=lengths)
        state.tension_n[i] = tension_i
        return state

    t += TICK
    wound = 10 * safety_cfg.consistency.tolerance_m
    _, report = tick(sup, world, ctrl, t, goal, tendons=tendons_at(t, wound, slack_n))
    assert "tendon_snapped" in report.rules and "consistency" in report.rules
    # the winch's travel now fits the check's allowance (here: its baseline forgotten, as after
    # an acknowledge, which is the extreme case): the tendon still reads slack
    sup.consistency.reset()
    for _ in range(3):
        t += TICK
        _, report = tick(sup, world, ctrl, t, goal, tendons=tendons_at(t, 0.0, slack_n))
        assert "tendon_snapped" in report.rules and report.state == SupervisorState.FAULT, \
            report
    # mended: it carries tension again, and the stop ends after its recovery hold
    t += TICK
    _, report = tick(sup, world, ctrl, t, goal, tendons=tendons_at(t, 0.0, 20.0))
    assert "tendon_snapped" not in report.rules


def test_the_goals_orientation_switched_off_while_running_leaves_the_goal_in_force_without_it(
        robot, safety_cfg, ctrl_cfg, drivers, home):
    """use_goal_orientation set while the node runs: turned off, the goal in force drops its
    orientation at once (no orientation stiffness, as kr = 0); turned on, only the next goal
    brings one."""
    snap, goal = home
    sup = make_supervisor(robot, safety_cfg, ctrl_cfg, drivers)
    world, ctrl = World(robot, snap), FakeController(robot)
    assert goal.rotation is not None
    tick(sup, world, ctrl, TICK, goal)
    assert ctrl.goals[-1].rotation is not None
    sup.goals.set_orientation(False)
    tick(sup, world, ctrl, 2 * TICK, None)
    assert ctrl.goals[-1].rotation is None
    np.testing.assert_array_equal(ctrl.goals[-1].position_m, goal.position_m)
    tick(sup, world, ctrl, 3 * TICK, goal)
    assert ctrl.goals[-1].rotation is None
    sup.goals.set_orientation(True)
    tick(sup, world, ctrl, 4 * TICK, None)
    assert ctrl.goals[-1].rotation is None
    tick(sup, world, ctrl, 5 * TICK, goal)
    assert ctrl.goals[-1].rotation is not None
