"""The controller switched while the graph runs: through the QP node's ``controller`` parameter,
as ``ros2 param set /activation_qp_node controller joint-stiffness`` sets it, without a jump;
refused with the reason during a stop. Simulated time, as test_graph.py."""

from __future__ import annotations

import numpy as np
import pytest
from graph_harness import logs, running_graph, wait_running

from musculo_control.control.controller_names import CONTROLLER_NAMES
from musculo_control.loop.parts import load_parts
from musculo_control.paths import default_config_dir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

#: the hand's largest motion allowed over a switch's ramp [m] (the runner measures 1.5-4.0 mm
#: for every pair of controllers: test_switch.py)
MOVED_M = 0.005


@pytest.fixture(scope="module")
def parts():
    return load_parts(default_config_dir())


def test_a_switch_through_the_parameter_moves_the_hand_less_than_5_mm(parts, tmp_path):
    ramp = parts.controller.loop.switch_ramp_s
    order = ("joint-stiffness", "osc-no-nullspace", "osc")  # from the launch's osc, and back
    with running_graph(parts, tmp_path) as (graph, obs):
        wait_running(graph, obs)
        assert obs.wait_for(1.0, 180.0), logs(graph)
        for name in order:
            t0 = obs.now_s()
            ok, reason = obs.set_parameter("activation_qp_node", "controller", name)
            assert ok, reason
            assert obs.wait_for(ramp + 0.3, 180.0), logs(graph)
            hands = np.asarray(obs.snapshot(obs.hand).since(t0).values)
            assert len(hands) > 10
            moved = float(np.linalg.norm(hands - hands[0], axis=1).max())
            assert moved < MOVED_M, (name, moved)
            assert obs.wait_for(1.0, 180.0), logs(graph)  # settled before the next switch
        states = obs.snapshot(obs.controller_state).since(t0)
        assert states.values and all(v["supervisor_state"] == 0.0 for v in states.values)


def test_a_switch_is_refused_with_the_reason_during_a_stop_and_unknown_names_too(parts,
                                                                                  tmp_path):
    with running_graph(parts, tmp_path) as (graph, obs):
        wait_running(graph, obs)
        ok, reason = obs.set_parameter("activation_qp_node", "controller", "pid")
        assert not ok and all(n in reason for n in CONTROLLER_NAMES), reason
        obs.send_stop(True)
        assert obs.wait_until(lambda: any("operator_stop" in d.message
                                          for d in obs.diagnostics_of("activation_qp_node")),
                              180.0), logs(graph)
        ok, reason = obs.set_parameter("activation_qp_node", "controller", "joint-stiffness")
        assert not ok and "refused" in reason and "fault" in reason, reason
        obs.send_stop(False)


def test_a_joint_goal_on_the_topic_moves_the_joint_stiffness_baseline_or_is_refused(parts,
                                                                                     tmp_path):
    """After a switch to eq. 16, a joint pose on ``joint_goal`` is held; one outside the joint
    limits is refused with the joint named (the QP node's diagnostics), the last one kept."""
    arm = parts.robot.arm
    j = arm.joint_names.index("elbow_p") if "elbow_p" in arm.joint_names else 0
    with running_graph(parts, tmp_path) as (graph, obs):
        wait_running(graph, obs)
        assert obs.wait_for(1.0, 180.0), logs(graph)  # past the start-up's resume ramp
        ok, reason = obs.set_parameter("activation_qp_node", "controller", "joint-stiffness")
        assert ok, reason
        assert obs.wait_for(1.0, 180.0), logs(graph)
        q0 = np.asarray(obs.snapshot(obs.joint_states).values[-1])
        target = q0.copy()
        target[j] += 0.1
        obs.send_joint_goal(target)
        assert obs.wait_for(2.0, 180.0), logs(graph)
        q1 = np.asarray(obs.snapshot(obs.joint_states).values[-1])
        assert q1[j] - q0[j] > 0.05, (q0[j], q1[j])
        wrong = target.copy()
        wrong[0] = arm.upper_rad[0] + 0.2
        t0 = obs.now_s()
        obs.send_joint_goal(wrong)
        assert obs.wait_until(lambda: any(
            "joint limits" in d.message and arm.joint_names[0] in d.message
            for d in obs.diagnostics_of("activation_qp_node") if d.t >= t0), 60.0), logs(graph)
        assert obs.wait_for(0.5, 180.0), logs(graph)
        q2 = np.asarray(obs.snapshot(obs.joint_states).values[-1])
        assert abs(q2[0] - q1[0]) < 0.02 and abs(q2[j] - target[j]) < abs(q0[j] - target[j])
