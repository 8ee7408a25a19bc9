"""The tendon monitor in the control step on a loaded computer: tendon samples come by two hops
(through the driver), the driver's outputs by one, so a tick may hold outputs stamped after
samples that arrive only at the next tick; and the outputs may stop reaching the controller
while the actuators go on. Neither is a fault of the actuators."""

from __future__ import annotations

import math

import numpy as np
import pytest

from musculo_control.hardware.tendon_driver import TendonState
from musculo_control.loop import build
from musculo_control.loop.parts import load_parts
from musculo_control.paths import default_config_dir

SAMPLE = 0.002  # sensor and driver period [s]
#: the monitor's two rules on tensions short of their command (one latched, one not)
TRACKING = {"actuator_tracking", "actuator_watchdog"}
TICK = 0.008  # control period [s]


@pytest.fixture(scope="module")
def parts():
    return load_parts(default_config_dir())


def _actuators(parts, commands, t_end):
    """Load-cell readings of healthy actuators: each command takes effect 1 ms after its
    stamp, through the lag. ``commands``: [(stamp, tension)]. Returns [(stamp, tension)]."""
    tau = parts.safety.tendons.actuator_time_constant_s
    delay = parts.safety.tendons.command_delay_s
    m = parts.robot.n_muscles
    f = np.full(m, commands[0][1])
    out, t = [], 0.0
    while t < t_end:
        t += SAMPLE
        live = [c for s, c in commands if s + delay <= t - SAMPLE]
        target = live[-1] if live else commands[0][1]
        f = f + (1.0 - math.exp(-SAMPLE / tau)) * (np.full(m, target) - f)
        out.append((t, f.copy()))
    return out


def _sample(parts, t, f):
    robot = parts.robot
    m = robot.n_muscles
    return TendonState(t, 0.5 * (robot.l_min_m + robot.l_max_m), np.zeros(m), f, ())


def _run(parts, sample_lag_s, output_lag_s, outputs_stop=None, join=True):
    """Feed a control step at its ticks with what has arrived by then; the monitor's findings.
    Outputs: 300 N, then minimum tension for 10 ms (the driver's watchdog), then 300 N."""
    step = build.control_step(parts, "osc")
    m = parts.robot.n_muscles
    step.reset(0.0)
    step.supervisor.monitor.reset(0.0, np.full(m, 300.0))
    outputs = [(k * SAMPLE, 5.0 if 0.2 <= k * SAMPLE < 0.21 else 300.0) for k in range(1, 250)]
    if outputs_stop is not None:
        lo, hi = outputs_stop  # the outputs sent then never reach the controller
    samples = _actuators(parts, outputs, 0.5)
    if not join:
        # every sample to the monitor as soon as it arrives, tracked (the old behaviour)
        step._join_wait_s = -math.inf
        checked = step.supervisor.tendon_sample
        step.supervisor.tendon_sample = lambda state, track=True: checked(state, True)
    sent_i = seen_i = 0
    findings = set()
    t = 0.0
    while t < 0.45:
        t += TICK
        while sent_i < len(outputs) and outputs[sent_i][0] + output_lag_s <= t:
            stamp, tension = outputs[sent_i]
            sent_i += 1
            if outputs_stop is not None and lo <= stamp < hi:
                continue
            step.receive_sent(stamp, np.full(m, tension))
        while seen_i < len(samples) and samples[seen_i][0] + sample_lag_s <= t:
            step.receive_tendons(_sample(parts, *samples[seen_i]))
            seen_i += 1
        step._feed_monitor(t)
        findings |= set(step.supervisor._pending)
        step.supervisor._pending.clear()
    return findings


def test_samples_that_arrive_after_newer_outputs_raise_nothing(parts):
    """Samples 20 ms late, outputs 1 ms: the minimum-tension stretch of the outputs is known
    before the samples that show it; and the other way round. Handed to the monitor as they
    arrive and tracked (no join), samples are checked against outputs that have not come yet
    (the check can fail)."""
    assert not TRACKING & _run(parts, sample_lag_s=0.020, output_lag_s=0.001)
    assert TRACKING & _run(parts, sample_lag_s=0.001, output_lag_s=0.020, join=False)


def test_outputs_that_stop_reaching_the_controller_are_not_an_actuator_fault(parts):
    """The driver's outputs of 0.19-0.29 s (the minimum-tension stretch among them) never
    reach the controller: the samples of that time go unchecked for tracking, the band then
    restarts from the load cells, and nothing latches."""
    found = _run(parts, sample_lag_s=0.003, output_lag_s=0.001, outputs_stop=(0.19, 0.29))
    assert not TRACKING & found
