"""The graph's process layout (nodes/graph.py, nodes/control_process.py), without starting it."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from musculo_control.nodes.graph import (
    CONTROL_PROCESS,
    GraphOptions,
    display_warnings,
    graph_nodes,
    graph_processes,
    write_parameters,
)
from musculo_control.paths import default_config_dir


def test_one_process_puts_every_node_but_the_mock_arm_in_control_process():
    opts = GraphOptions(default_config_dir(), one_process=True, use_muscle_markers=True)
    processes = graph_processes(opts)
    assert [p.name for p in processes] == ["mock_hardware_node", CONTROL_PROCESS]
    shared = processes[1]
    assert shared.shared and not processes[0].shared
    assert [n.name for n in shared.nodes] == [n.name for n in graph_nodes(opts)][1:]
    assert shared.arguments == [n.name for n in shared.nodes]
    assert shared.module == "musculo_control.nodes.control_process"
    # every node keeps the parameters it has in its own process
    assert {n.name: n.parameters for n in shared.nodes} == \
        {n.name: n.parameters for n in graph_nodes(opts) if n.name != "mock_hardware_node"}


def test_by_default_every_node_but_the_mock_arm_shares_one_process():
    """The default layout (by measurement, doc/timing.md): one process on the wall clock, a
    process per node on simulated time (the lockstep holds the clock for each node's thread);
    either on ask."""
    assert [p.name for p in graph_processes(GraphOptions(default_config_dir()))] == \
        ["mock_hardware_node", CONTROL_PROCESS]
    sim = graph_processes(GraphOptions(default_config_dir(), use_sim_time=True))
    assert len(sim) == 6 and all(not p.shared for p in sim)
    assert len(graph_processes(GraphOptions(default_config_dir(), use_sim_time=True,
                                            one_process=True))) == 2
    opts = GraphOptions(default_config_dir(), one_process=False)
    processes = graph_processes(opts)
    assert [p.name for p in processes] == [n.name for n in graph_nodes(opts)]
    assert all(len(p.nodes) == 1 and p.arguments == [] and not p.shared for p in processes)
    robot = graph_processes(GraphOptions(default_config_dir(), mock=False))
    assert [p.name for p in robot] == [CONTROL_PROCESS]


def test_the_realtime_profile_adds_its_file_to_the_control_nodes_only():
    """realtime.yaml's parameters reach the nodes it names, under their own; none without
    the option."""
    plain = {n.name: n.parameters for n in graph_nodes(GraphOptions(default_config_dir()))}
    rt = {n.name: n.parameters
          for n in graph_nodes(GraphOptions(default_config_dir(), realtime=True))}
    assert all("realtime_priority" not in p for p in plain.values())
    for name in ("activation_qp_node", "tendon_driver_node", "potentiometer_node",
                 "dynamics_node", "mock_hardware_node"):
        assert rt[name]["realtime_priority"] > 0 and rt[name]["nice"] < 0, name
    assert "realtime_priority" not in rt["goal_node"]


def test_the_parameter_file_of_a_shared_process_has_one_section_per_node(tmp_path):
    opts = GraphOptions(default_config_dir(), one_process=True, controller="osc")
    shared = graph_processes(opts)[1]
    doc = yaml.safe_load(write_parameters(tmp_path / "p.yaml", shared.nodes).read_text())
    assert list(doc) == [n.name for n in shared.nodes]
    assert doc["activation_qp_node"]["ros__parameters"]["controller"] == "osc"
    assert "controller" not in doc["tendon_driver_node"]["ros__parameters"]
    assert doc["goal_node"]["ros__parameters"]["config_dir"] == str(default_config_dir())


def test_control_process_takes_node_names_before_ros_args_and_refuses_others():
    from musculo_control.nodes.control_process import CONTROLLER_NODES, node_names

    assert node_names(["control_process", "--ros-args", "-p", "x:=1"]) == list(CONTROLLER_NODES)
    assert node_names(["cp", "tendon_driver_node", "potentiometer_node", "--ros-args"]) == \
        ["tendon_driver_node", "potentiometer_node"]
    assert "mock_hardware_node" in node_names(["cp", "mock_hardware_node"])
    assert "twice" in node_names(["cp", "goal_node", "goal_node"])


def test_a_stand_in_runs_in_place_of_its_node_in_a_process_of_its_own(tmp_path):
    """What a graph that injects faults starts: the test side's stand-in (same node name and
    parameters) instead of the production module; in the shared layout it leaves
    control_process. Without stand-ins every process runs a production module."""
    from musculo_control.errors import InputError
    from musculo_control.nodes.launcher import GraphProcesses
    from musculo_control.testing.node_injection import STAND_INS

    assert all(p.module.startswith("musculo_control.nodes.")
               for layout in (True, False)
               for p in graph_processes(GraphOptions(default_config_dir(), one_process=layout)))
    qp = "activation_qp_node"
    opts = GraphOptions(default_config_dir(), one_process=True, stand_ins={qp: STAND_INS[qp]})
    processes = {p.name: p for p in graph_processes(opts)}
    assert list(processes) == ["mock_hardware_node", qp, CONTROL_PROCESS]
    assert processes[qp].module == "musculo_control.testing.injecting_activation_qp_node"
    assert qp not in [n.name for n in processes[CONTROL_PROCESS].nodes]
    assert processes[CONTROL_PROCESS].module == "musculo_control.nodes.control_process"
    graph = GraphProcesses(dataclasses.replace(opts, one_process=False), tmp_path)
    assert graph.command(qp)[1:3] == ["-m", STAND_INS[qp]]
    assert graph.command("dynamics_node")[1:3] == ["-m", "musculo_control.nodes.dynamics_node"]
    with pytest.raises(InputError, match="stand-ins"):
        GraphOptions(default_config_dir(), stand_ins={"qp_node": "x"}).check()


def test_rviz_without_robot_state_publisher_is_warned_about():
    """RViz without robot_state_publisher would draw no robot and no TF: the launch says so
    (launch_builder logs these); the other three combinations need no word."""
    warned = display_warnings(use_rviz=True, use_robot_state_publisher=False)
    assert len(warned) == 1 and "no robot model and no TF" in warned[0]
    assert "use_robot_state_publisher:=false" in warned[0]
    for rviz, publisher in ((True, True), (False, True), (False, False)):
        assert display_warnings(rviz, publisher) == []
