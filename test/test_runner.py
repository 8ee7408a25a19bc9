"""The ROS-free closed loop: rates as configured, delays, determinism, safe start."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from musculo_control.control.goal import HandGoal
from musculo_control.errors import ConfigError
from musculo_control.paths import default_config_dir
from musculo_control.sim.experiments import Bench, Overrides, load_setup
from musculo_control.sim.runner import DelayLine, RunnerConfig, divisors


@pytest.fixture(scope="module")
def setup():
    return load_setup(default_config_dir(), Overrides.parse([]))


def _hold_bench(setup, controller="osc"):
    bench = Bench(setup, controller)
    q0 = setup.robot.home_pose_rad
    x0, R0 = bench.hand_pose_at(q0)
    goal = HandGoal.hold(x0, R0)
    bench.loop.reset(q0, goal)
    return bench, goal


def test_rates_are_what_the_config_says(setup):
    bench, goal = _hold_bench(setup)
    counts = {"sensor": 0, "snapshot": 0, "control": 0, "driver": 0}
    loop = bench.loop
    orig_compute, orig_read, orig_output = (loop.estimator.compute, loop.mock.read_potentiometers,
                                            loop.driver.output)

    def compute(*a, **k):
        counts["snapshot"] += 1
        return orig_compute(*a, **k)

    def read():
        counts["sensor"] += 1
        return orig_read()

    def output(*a, **k):
        counts["driver"] += 1
        return orig_output(*a, **k)

    loop.estimator.compute, loop.mock.read_potentiometers, loop.driver.output = \
        compute, read, output
    loop.run(1.0, lambda t: goal,
             on_control=lambda s: counts.__setitem__("control", counts["control"] + 1))
    cfg = setup.experiments.runner
    assert counts["sensor"] == round(cfg.sensor_rate_hz)
    assert counts["snapshot"] == round(cfg.dynamics_rate_hz)
    assert counts["control"] == round(cfg.control_rate_hz)
    assert counts["driver"] == round(cfg.driver_rate_hz)
    assert bench.loop.time_s == pytest.approx(1.0)


def test_first_tick_has_fresh_inputs_and_no_fault(setup):
    bench, goal = _hold_bench(setup)
    outputs = []
    bench.loop.run(0.1, lambda t: goal, on_control=lambda s: outputs.append(s.output))
    assert all(o.ok for o in outputs), [o.reason for o in outputs if not o.ok]
    assert outputs[0].snapshot_age_s <= 1.0 / setup.experiments.runner.sensor_rate_hz + 1e-9


def test_controller_sees_data_as_late_as_the_transport_delay(setup):
    bench, goal = _hold_bench(setup)
    ages = []
    bench.loop.run(0.5, lambda t: goal,
                   on_control=lambda s: ages.append(s.t_s - s.joints.stamp_s))
    delay = setup.experiments.runner.transport_delay_s
    period = 1.0 / setup.experiments.runner.sensor_rate_hz
    assert min(ages[1:]) >= delay - 1e-9
    assert max(ages) <= delay + period + 1e-9


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
    with pytest.raises(ConfigError, match="runner.control_rate_hz"):
        divisors(RunnerConfig(control_rate_hz=300.0), 0.001, "experiments.yaml")
    with pytest.raises(ConfigError, match="transport_delay_s"):
        divisors(RunnerConfig(transport_delay_s=0.0015), 0.001, "experiments.yaml")


def test_delay_line_is_fifo_with_fixed_delay():
    line: DelayLine[int] = DelayLine(2)
    line.send(0, 10)
    line.send(1, 11)
    assert line.receive(1) == []
    assert line.receive(2) == [10]
    assert line.receive(5) == [11]
