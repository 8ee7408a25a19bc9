"""Property tests of every controller's tick on arbitrary input: whatever the snapshot (any field
NaN, inf, huge, zero or of the wrong shape), joint state (any length, NaN, inf, huge), goal
(huge, far, not a goal at all) and time, the command is one finite tension per muscle, never
below f_min; a failure is the safe output."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from musculo_control.control.controller import CONTROLLER_NAMES, make_controller
from musculo_control.control.controller_config import load_controller_config
from musculo_control.control.goal import HandGoal
from musculo_control.estimation.snapshot import DynamicsSnapshot

_SNAPSHOT_ARRAYS = tuple(f.name for f in dataclasses.fields(DynamicsSnapshot)
                         if f.name not in ("stamp_s", "min_task_eigenvalue", "damped"))
_JUNK = (math.nan, math.inf, -math.inf, 1e300, -1e300, 0.0, 1e-300)


@pytest.fixture(scope="module")
def config(config_dir):
    return load_controller_config(config_dir)


@pytest.fixture(scope="module")
def controllers(robot, config):
    return {name: make_controller(name, robot, config) for name in CONTROLLER_NAMES}


@pytest.fixture(scope="module")
def snapshots(robot, task):
    from conftest import random_poses

    from musculo_control.estimation.snapshot import DynamicsEstimator

    est = DynamicsEstimator(robot, task)
    return [est.compute(q, np.zeros(7), 0.0) for q in random_poses(robot, 4, seed=11)]


def _number():
    return st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                     st.floats(-10.0, 10.0), st.sampled_from(_JUNK))


def _array(draw, shape):
    """An array of ``shape`` (sometimes another shape) with arbitrary values."""
    if draw(st.integers(0, 9)) == 0:
        shape = draw(st.sampled_from([(), (0,), (3,), tuple(s + 1 for s in shape)]))
    size = int(np.prod(shape)) if shape else 1
    kind = draw(st.sampled_from(["fill", "one", "random"]))
    if kind == "fill":
        return np.full(shape, draw(_number()))
    base = draw(st.lists(st.floats(-10.0, 10.0), min_size=size, max_size=size))
    arr = np.array(base, dtype=float).reshape(shape) if shape else np.array(base[0])
    if kind == "one" and size:
        arr.flat[draw(st.integers(0, size - 1))] = draw(_number())
    return arr


@settings(max_examples=250, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_property_any_input_gives_a_finite_command_not_below_f_min(robot, controllers,
                                                                   snapshots, data):
    name = data.draw(st.sampled_from(CONTROLLER_NAMES))
    ctrl = controllers[name]
    snap = data.draw(st.sampled_from(snapshots))
    # corrupt up to two snapshot fields
    for _ in range(data.draw(st.integers(0, 2))):
        field = data.draw(st.sampled_from(_SNAPSHOT_ARRAYS))
        value = getattr(snap, field)
        snap = dataclasses.replace(snap, **{field: _array(data.draw, np.shape(value))})
    if data.draw(st.booleans()):
        snap = dataclasses.replace(snap, stamp_s=data.draw(_number()))
    q = _array(data.draw, (7,)) if data.draw(st.booleans()) else (
        snap.q_rad if np.shape(snap.q_rad) == (7,) else robot.home_pose_rad)
    qd = _array(data.draw, (7,)) if data.draw(st.booleans()) else np.zeros(7)
    goal = data.draw(st.one_of(
        st.builds(lambda p: HandGoal.hold(p), st.lists(st.floats(-1e6, 1e6), min_size=3,
                                                      max_size=3)),
        st.builds(lambda p, v, a: HandGoal(p, v, a),
                  st.lists(st.floats(-5.0, 5.0), min_size=3, max_size=3),
                  st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=3),
                  st.lists(st.floats(-1e4, 1e4), min_size=3, max_size=3)),
        st.sampled_from([None, "goal", np.zeros(3)])))
    t = data.draw(st.one_of(st.floats(-1.0, 1.0), st.sampled_from(_JUNK)))
    if data.draw(st.booleans()):
        snapshot = None
    else:
        snapshot = snap
    out = ctrl.tick(snapshot, q, qd, goal, t)  # type: ignore[arg-type]
    f = out.tension_n
    assert f.shape == (robot.n_muscles,)
    assert np.all(np.isfinite(f)), f
    assert np.all(f >= robot.hill.f_min_n - 1e-9), f
    if not out.ok:
        assert out.reason and np.all(f == robot.hill.f_min_n)
    else:
        assert np.isfinite(out.activations).all() and np.isfinite(out.tau_null_nm).all()
    ctrl.reset()


@pytest.mark.parametrize("field", ["gravity_torque_nm", "task_inertia", "muscle_jacobian"])
def test_absurd_finite_snapshot_is_refused_not_answered_with_the_last_solution(
        robot, config, snapshots, field):
    """OSQP clips bounds beyond 1e30 to infinity; an equality row at 1e200 then has l > u and
    OSQP silently keeps the previous problem. The controller must refuse, not repeat itself."""
    ctrl = make_controller("osc", robot, config)
    snap = snapshots[0]
    goal = HandGoal.hold(snap.hand_position_m, snap.hand_rotation)
    assert ctrl.tick(snap, snap.q_rad, np.zeros(7), goal, 0.0).ok
    bad = dataclasses.replace(snap, **{field: np.full_like(getattr(snap, field), 1e200)})
    out = ctrl.tick(bad, snap.q_rad, np.zeros(7), goal, 0.0)
    assert not out.ok and np.all(out.tension_n == robot.hill.f_min_n), out.reason
    assert ctrl.tick(snap, snap.q_rad, np.zeros(7), goal, 0.0).ok
