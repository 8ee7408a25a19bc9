"""The ROS-free closed loop: the node graph's stages at the configured rates, the delays, the
start-up hand-over, determinism."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from musculo_control.control.controller_config import LoopConfig
from musculo_control.control.goal import HandGoal
from musculo_control.errors import ConfigError
from musculo_control.hardware.drivers import HardwareRates
from musculo_control.paths import default_config_dir
from musculo_control.sim.experiments import Bench
from musculo_control.sim.runner import DelayLine, RunnerConfig, divisors
from musculo_control.sim.setup import Overrides, load_setup


@pytest.fixture(scope="module")
def setup():
    return load_setup(default_config_dir(), Overrides.parse([]))


def _hold_bench(setup, controller="osc"):
    bench = Bench(setup, controller)
    q0 = setup.robot.home_pose_rad
    x0, R0 = bench.robot.arm.hand_pose(q0)
    goal = HandGoal.hold(x0, R0)
    bench.loop.reset(q0, goal)
    return bench, goal


def _count(obj, name, counts, key):
    original = getattr(obj, name)

    def counted(*a, **k):
        counts[key] += 1
        return original(*a, **k)

    setattr(obj, name, counted)


def test_rates_are_what_the_config_says(setup):
    bench, goal = _hold_bench(setup)
    counts = {"sensor": 0, "snapshot": 0, "control": 0, "driver": 0}
    loop = bench.loop
    _count(loop.mock_stage, "sense", counts, "sensor")
    _count(loop.dynamics.estimator, "compute", counts, "snapshot")
    _count(loop.step, "tick", counts, "control")
    _count(loop.tendons, "output", counts, "driver")
    loop.run(1.0, lambda t: goal)
    rates = bench.rig.parts.drivers.rates
    rates_loop = bench.rig.parts.controller.loop
    assert counts["sensor"] == round(rates.sensor_rate_hz)
    assert counts["snapshot"] == round(rates_loop.dynamics_rate_hz)
    assert counts["control"] == round(rates_loop.control_rate_hz)
    assert counts["driver"] == round(rates.driver_rate_hz)
    assert loop.time_s == pytest.approx(1.0)
    assert loop.expected_ticks() == {k: v for k, v in loop.ticks.items()}


def test_start_up_holds_the_arm_until_the_controller_holds_it(setup):
    bench, goal = _hold_bench(setup)
    loop = bench.loop
    release = setup.mock_config.startup.release_after_s
    # time 0 is the release: the commands had held the arm for release_after_s by then, after
    # the first snapshot (one dynamics period) arrived
    assert loop.t0_s >= release + 1.0 / bench.rig.parts.controller.loop.dynamics_rate_hz
    # held until then: one physics step of motion at most
    np.testing.assert_allclose(bench.mock.q_rad, setup.robot.home_pose_rad, atol=1e-3)
    assert not bench.mock.held
    outputs = []
    loop.run(0.1, lambda t: goal, on_control=lambda s: outputs.append(s))
    assert all(s.report.ok for s in outputs), [s.report.summary() for s in outputs]
    assert loop.faults == []
    # the actuators were already pulling at release: the arm does not drop
    assert np.linalg.norm(bench.mock.hand_position_m - goal.position_m) < 0.005


def test_controller_sees_data_two_hops_late(setup):
    """Raw samples reach the potentiometer stage one hop later and its joint states reach the
    controller one more hop later, as mock -> potentiometer_node -> activation_qp_node."""
    bench, goal = _hold_bench(setup)
    ages = []
    bench.loop.run(0.5, lambda t: goal,
                   on_control=lambda s: ages.append(s.t_s + bench.loop.t0_s - s.joints.stamp_s))
    delay = setup.experiments.runner.transport_delay_s
    period = 1.0 / bench.rig.parts.drivers.rates.sensor_rate_hz
    assert min(ages) >= 2 * delay - 1e-9
    assert max(ages) <= 2 * delay + period + 1e-9


def test_same_seed_same_log_other_seed_other_log(setup):
    def run(seed):
        s = dataclasses.replace(setup, mock_config=dataclasses.replace(setup.mock_config,
                                                                       seed=seed))
        bench, goal = _hold_bench(s)
        bench.run(0.3, lambda t: goal)
        return bench.recorder.array("q_measured_rad"), bench.recorder.array("tension_command_n")

    a, b, c = run(1), run(1), run(2)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_rate_that_does_not_divide_physics_is_rejected():
    rates = HardwareRates(sensor_rate_hz=500.0, driver_rate_hz=500.0)
    with pytest.raises(ConfigError, match="loop.control_rate_hz"):
        divisors(LoopConfig(control_rate_hz=300.0), rates, RunnerConfig(), 0.001, "robot")
    with pytest.raises(ConfigError, match="rates.sensor_rate_hz"):
        divisors(LoopConfig(), HardwareRates(sensor_rate_hz=300.0, driver_rate_hz=500.0),
                 RunnerConfig(), 0.001, "robot")
    with pytest.raises(ConfigError, match="transport_delay_s"):
        divisors(LoopConfig(), rates, RunnerConfig(transport_delay_s=0.0015), 0.001, "robot")


def test_delay_line_is_fifo_with_fixed_delay():
    line: DelayLine[int] = DelayLine(2)
    line.send(0, 10)
    line.send(1, 11)
    assert list(line.receive(1)) == []  # nothing due
    assert line.receive(2) == [10]
    assert line.receive(5) == [11]


def test_the_operator_stop_in_the_runner_goes_limp_then_resumes_on_the_ramp(setup):
    """The one stop of the node graph, on the ROS-free loop: both commanding stages at minimum
    tension from the next tick, goals refused, back near the goal after the release."""
    bench, goal = _hold_bench(setup)
    loop = bench.loop
    f_min = setup.robot.hill.f_min_n
    loop.run(1.0, lambda t: goal)
    hand0 = loop.mock.hand_position_m.copy()
    loop.operator_stop(True, "test stop")
    sent: list[np.ndarray] = []
    commands: list[np.ndarray] = []

    def record(state):
        commands.append(state.output.tension_n.copy())
        sent.append(loop.driver_output.tension_n.copy())

    loop.run(1.0, lambda t: goal, on_control=record)
    assert all(np.allclose(f, f_min) for f in commands) and all(np.allclose(f, f_min)
                                                                 for f in sent[1:])
    assert "operator_stop" in loop.report.rules
    assert loop.step.acknowledge() == () and loop.step.stopped
    assert np.linalg.norm(loop.mock.hand_position_m - hand0) > 0.01  # it went limp
    loop.operator_stop(False)
    loop.run(4.0, lambda t: goal)
    assert loop.report.ok, loop.report.summary()
    assert np.linalg.norm(loop.mock.hand_position_m - goal.position_m) < 0.02
