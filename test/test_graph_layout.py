"""The graph's process layout (nodes/graph.py, nodes/control_process.py), without starting it."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from musculo_control.nodes.graph import (
    CONTROL_PROCESS,
    HARDWARE_PROCESS,
    SHARED_PROCESSES,
    GraphOptions,
    display_warnings,
    graph_nodes,
    graph_processes,
    process_of,
    shared_process_name,
    write_parameters,
)
from musculo_control.nodes.node_config import (
    ACTIVATION_QP_NODE,
    DYNAMICS_NODE,
    GOAL_NODE,
    MOCK_HARDWARE_NODE,
    MUSCLE_MARKER_NODE,
    POTENTIOMETER_NODE,
    TENDON_DRIVER_NODE,
)
from musculo_control.paths import default_config_dir

#: The shared layout's processes with their nodes (the mock arm alone).
SHARED = {HARDWARE_PROCESS: [POTENTIOMETER_NODE, TENDON_DRIVER_NODE],
          CONTROL_PROCESS: [DYNAMICS_NODE, ACTIVATION_QP_NODE, GOAL_NODE]}


def _layout(opts: GraphOptions) -> dict[str, list[str]]:
    return {p.name: [n.name for n in p.nodes] for p in graph_processes(opts)}


def test_the_shared_layout_puts_the_drivers_and_the_controller_in_two_processes():
    """The mock arm alone, the potentiometer and tendon driver in hardware_process, the
    dynamics, QP and goal nodes (and the muscle markers) in control_process: both run the
    control_process executable with their nodes' names, each node with the parameters it has in
    its own process."""
    opts = GraphOptions(default_config_dir(), one_process=True, use_muscle_markers=True)
    processes = graph_processes(opts)
    assert _layout(opts) == {MOCK_HARDWARE_NODE: [MOCK_HARDWARE_NODE],
                             HARDWARE_PROCESS: SHARED[HARDWARE_PROCESS],
                             CONTROL_PROCESS: [*SHARED[CONTROL_PROCESS], MUSCLE_MARKER_NODE]}
    assert [p.name for p in processes] == [MOCK_HARDWARE_NODE, HARDWARE_PROCESS, CONTROL_PROCESS]
    mock, *shared = processes
    assert not mock.shared and mock.executable == MOCK_HARDWARE_NODE and mock.arguments == []
    for process in shared:
        assert process.shared
        assert process.arguments == [n.name for n in process.nodes]
        assert process.module == "musculo_control.nodes.control_process"
        assert process.executable == "control_process"
    # every node keeps the parameters it has in its own process, in graph order
    assert [n.name for p in shared for n in p.nodes] == \
        [n.name for n in graph_nodes(opts) if n.name != MOCK_HARDWARE_NODE]
    assert {n.name: n.parameters for p in shared for n in p.nodes} == \
        {n.name: n.parameters for n in graph_nodes(opts) if n.name != MOCK_HARDWARE_NODE}


@pytest.mark.parametrize("options", [
    {"one_process": True}, {"one_process": None}, {"one_process": True, "mock": False},
    {"one_process": True, "use_sim_time": True, "lockstep": True},
    {"one_process": True, "use_muscle_markers": True},
    {"one_process": True, "stand_ins": {DYNAMICS_NODE: "musculo_control.testing.x"}},
    {"one_process": True, "stand_ins": {GOAL_NODE: "musculo_control.testing.x"}},
])
def test_the_hardware_nodes_never_share_a_process_with_the_qp(options):
    """The 500 Hz path to the hardware (potentiometer, tendon driver: the last line of
    defence) never waits behind a QP tick in its thread, nor freezes with the controller's
    process: in every shared layout the drivers are together and apart from the QP, the
    dynamics and the goal nodes."""
    opts = GraphOptions(default_config_dir(), **options)
    process = {n.name: process_of(opts, n.name) for n in graph_nodes(opts)}
    for driver in (POTENTIOMETER_NODE, TENDON_DRIVER_NODE):
        assert process[driver] == HARDWARE_PROCESS
        for other in (ACTIVATION_QP_NODE, DYNAMICS_NODE, GOAL_NODE, MUSCLE_MARKER_NODE):
            assert process.get(other) != process[driver], (driver, other)
    hardware = next(p for p in graph_processes(opts) if p.name == HARDWARE_PROCESS)
    assert hardware.arguments == [POTENTIOMETER_NODE, TENDON_DRIVER_NODE]
    # joint_states come from another process: after its own pause the QP waits for a fresh one
    qp = next(n for n in graph_nodes(opts) if n.name == ACTIVATION_QP_NODE)
    assert qp.parameters["resync_after_pause"] is True


def test_the_qp_waits_after_its_pause_only_for_joint_states_of_another_process():
    """In a process per node the QP resynchronises too; a QP node started without the launcher
    (its parameter's default) does not wait, since its process may run the potentiometer
    node, which could send nothing while it waits."""
    opts = GraphOptions(default_config_dir(), one_process=False)
    qp = next(n for n in graph_nodes(opts) if n.name == ACTIVATION_QP_NODE)
    assert qp.parameters["resync_after_pause"] is True
    from musculo_control.nodes.node_config import ActivationQPNodeParams

    assert ActivationQPNodeParams().resync_after_pause is False


def test_by_default_the_wall_clock_shares_processes_and_simulated_time_does_not():
    """The default layout (by measurement, doc/timing.md): shared on the wall clock, a process
    per node on simulated time (the lockstep holds the clock for each node's thread); either on
    ask. The robot's graph (no mock) is the two shared processes alone."""
    assert _layout(GraphOptions(default_config_dir())) == \
        {MOCK_HARDWARE_NODE: [MOCK_HARDWARE_NODE], **SHARED}
    sim = graph_processes(GraphOptions(default_config_dir(), use_sim_time=True))
    assert len(sim) == 6 and all(not p.shared for p in sim)
    assert [p.name for p in graph_processes(GraphOptions(
        default_config_dir(), use_sim_time=True, one_process=True))] == \
        [MOCK_HARDWARE_NODE, HARDWARE_PROCESS, CONTROL_PROCESS]
    opts = GraphOptions(default_config_dir(), one_process=False)
    processes = graph_processes(opts)
    assert [p.name for p in processes] == [n.name for n in graph_nodes(opts)]
    assert all(len(p.nodes) == 1 and p.arguments == [] and not p.shared for p in processes)
    assert all(p.executable == p.name for p in processes)
    assert _layout(GraphOptions(default_config_dir(), mock=False)) == SHARED


def _awaits(**options) -> dict[str, bool]:
    """Whether each consumer's tick waits for its inputs in lockstep (loop/lockstep.py)."""
    opts = GraphOptions(default_config_dir(), use_sim_time=True, lockstep=True, **options)
    return {n.name: n.parameters["lockstep"] for n in graph_nodes(opts)
            if "lockstep" in n.parameters}


def test_in_lockstep_a_consumer_waits_only_for_inputs_from_other_processes():
    """A tick that waits for a sample of a node in its own process holds the very thread that is
    to send it: in the shared layout the QP node (its snapshots come from the dynamics node
    beside it) does not wait; the tendon driver (muscle commands from the controller's process,
    tendon samples from the mock arm) and the dynamics node (joint states from the drivers'
    process) do, as every consumer of the per-node layout; the mock arm holds the clock in
    both."""
    assert _awaits(one_process=False) == {MOCK_HARDWARE_NODE: True, TENDON_DRIVER_NODE: True,
                                          DYNAMICS_NODE: True, ACTIVATION_QP_NODE: True}
    assert _awaits(one_process=True) == {MOCK_HARDWARE_NODE: True, TENDON_DRIVER_NODE: True,
                                         DYNAMICS_NODE: True, ACTIVATION_QP_NODE: False}
    # a stand-in runs alone: the QP's producers are then all in other processes
    assert _awaits(one_process=True, stand_ins={ACTIVATION_QP_NODE: "x"})[ACTIVATION_QP_NODE]
    # no lockstep, no waits
    opts = GraphOptions(default_config_dir(), use_sim_time=True, lockstep=False, one_process=True)
    assert not any(n.parameters.get("lockstep") for n in graph_nodes(opts))


def test_a_shared_process_is_named_by_its_nodes():
    """Its messages carry the shared process's name; a mix of the two, or none, is
    control_process (the executable's default of every node on the robot computer)."""
    assert shared_process_name([TENDON_DRIVER_NODE, POTENTIOMETER_NODE]) == HARDWARE_PROCESS
    assert shared_process_name([POTENTIOMETER_NODE]) == HARDWARE_PROCESS
    assert shared_process_name([ACTIVATION_QP_NODE, GOAL_NODE]) == CONTROL_PROCESS
    assert shared_process_name([TENDON_DRIVER_NODE, ACTIVATION_QP_NODE]) == CONTROL_PROCESS
    assert shared_process_name([]) == CONTROL_PROCESS
    # every node but the mock arm has a shared process, and only one
    listed = [n for nodes in SHARED_PROCESSES.values() for n in nodes]
    assert sorted(listed) == sorted(set(listed))
    assert MOCK_HARDWARE_NODE not in listed


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
    processes = {p.name: p for p in graph_processes(opts)}
    docs = {name: yaml.safe_load(write_parameters(tmp_path / f"{name}.yaml",
                                                  processes[name].nodes).read_text())
            for name in (HARDWARE_PROCESS, CONTROL_PROCESS)}
    for name, doc in docs.items():
        assert list(doc) == [n.name for n in processes[name].nodes]
    assert docs[CONTROL_PROCESS]["activation_qp_node"]["ros__parameters"]["controller"] == "osc"
    assert "controller" not in docs[HARDWARE_PROCESS]["tendon_driver_node"]["ros__parameters"]
    assert docs[CONTROL_PROCESS]["goal_node"]["ros__parameters"]["config_dir"] == \
        str(default_config_dir())


def test_control_process_takes_node_names_before_ros_args_and_refuses_others():
    from musculo_control.nodes.control_process import CONTROLLER_NODES, node_names

    assert node_names(["control_process", "--ros-args", "-p", "x:=1"]) == list(CONTROLLER_NODES)
    # each process of the shared layout as the launcher starts it
    for process in graph_processes(GraphOptions(default_config_dir(), one_process=True)):
        if process.shared:
            assert node_names([process.executable, *process.arguments, "--ros-args"]) == \
                process.arguments
    assert node_names(["cp", "tendon_driver_node", "potentiometer_node", "--ros-args"]) == \
        ["tendon_driver_node", "potentiometer_node"]
    assert "mock_hardware_node" in node_names(["cp", "mock_hardware_node"])
    assert "twice" in node_names(["cp", "goal_node", "goal_node"])


def test_a_stand_in_runs_in_place_of_its_node_in_a_process_of_its_own(tmp_path):
    """What a graph that injects faults starts: the test side's stand-in (same node name and
    parameters) instead of the production module; in the shared layout it leaves its shared
    process. Without stand-ins every process runs a production module."""
    from musculo_control.errors import InputError
    from musculo_control.nodes.launcher import GraphProcesses
    from musculo_control.testing.node_injection import STAND_INS

    assert all(p.module.startswith("musculo_control.nodes.")
               for layout in (True, False)
               for p in graph_processes(GraphOptions(default_config_dir(), one_process=layout)))
    qp = "activation_qp_node"
    opts = GraphOptions(default_config_dir(), one_process=True, stand_ins={qp: STAND_INS[qp]})
    processes = {p.name: p for p in graph_processes(opts)}
    assert list(processes) == ["mock_hardware_node", qp, HARDWARE_PROCESS, CONTROL_PROCESS]
    assert processes[qp].module == "musculo_control.testing.injecting_activation_qp_node"
    assert not processes[qp].shared and processes[qp].arguments == []
    assert qp not in [n.name for n in processes[CONTROL_PROCESS].nodes]
    assert processes[CONTROL_PROCESS].module == "musculo_control.nodes.control_process"
    # a shared process left with none of its nodes is not started
    both = dataclasses.replace(opts, stand_ins=dict.fromkeys(SHARED[HARDWARE_PROCESS], "x"))
    assert HARDWARE_PROCESS not in [p.name for p in graph_processes(both)]
    graph = GraphProcesses(dataclasses.replace(opts, one_process=False), tmp_path)
    assert graph.command(qp)[1:3] == ["-m", STAND_INS[qp]]
    assert graph.command("dynamics_node")[1:3] == ["-m", "musculo_control.nodes.dynamics_node"]
    with pytest.raises(InputError, match="stand-ins"):
        GraphOptions(default_config_dir(), stand_ins={"qp_node": "x"}).check()


def test_the_launcher_starts_each_shared_process_with_its_nodes_names(tmp_path):
    """``musculo graph`` and the tests start ``python -m musculo_control.nodes.control_process
    NODE ... --ros-args ...`` once per shared process; a signal to a node reaches the nodes of
    its process only."""
    from musculo_control.nodes.launcher import GraphProcesses

    graph = GraphProcesses(GraphOptions(default_config_dir(), one_process=True), tmp_path)
    assert graph.process_of == {MOCK_HARDWARE_NODE: MOCK_HARDWARE_NODE,
                                **{n: name for name, nodes in SHARED.items() for n in nodes}}
    for name, nodes in SHARED.items():
        command = graph.command(nodes[-1])
        assert command[1:3 + len(nodes)] == ["-m", "musculo_control.nodes.control_process",
                                              *nodes]
        assert command[3 + len(nodes)] == "--ros-args"
        assert graph.log_path(nodes[0]) == tmp_path / f"{name}.log"


def test_rviz_without_robot_state_publisher_is_warned_about():
    """RViz without robot_state_publisher would draw no robot and no TF: the launch says so
    (launch_builder logs these); the other three combinations need no word."""
    warned = display_warnings(use_rviz=True, use_robot_state_publisher=False)
    assert len(warned) == 1 and "no robot model and no TF" in warned[0]
    assert "use_robot_state_publisher:=false" in warned[0]
    for rviz, publisher in ((True, True), (False, True), (False, False)):
        assert display_warnings(rviz, publisher) == []
