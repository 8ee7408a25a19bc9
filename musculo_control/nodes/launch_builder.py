"""The launch description shared by ``arm.launch.py`` and ``mock_arm.launch.py``.

The node list and each node's parameters come from :func:`musculo_control.nodes.graph.
graph_nodes`, the one description the test harness and ``musculo graph`` also use; this module
only turns launch arguments into :class:`~musculo_control.nodes.graph.GraphOptions` and the
entries into ``launch_ros`` actions, and adds what only a ROS 2 distribution has
(robot_state_publisher, RViz). The two launch files differ only in whether the mock hardware
node stands in for the arm (as ros2_control demos switch with ``use_mock_hardware``). Before any
node starts, the parameter file is checked for every node with the same code the nodes use, so
a missing or malformed file stops the launch with the file and the key. robot_state_publisher
gets the robot's URDF, or for an MJCF robot a URDF generated from it
(:mod:`musculo_control.model.description`); RViz starts in the robot's base frame. The mock
graph's discovery stays on this machine (:mod:`musculo_control.nodes.discovery`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import launch.logging
from launch.actions import (
    DeclareLaunchArgument,
    OpaqueFunction,
    RegisterEventHandler,
    SetEnvironmentVariable,
)
from launch.event_handlers import OnShutdown
from launch.launch_context import LaunchContext
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from musculo_control.control.controller_names import CONTROLLER_NAMES
from musculo_control.model.description import base_frame, robot_description
from musculo_control.nodes.discovery import graph_transport, localhost_discovery
from musculo_control.nodes.graph import (
    GOAL_MODES,
    GraphOptions,
    ProcessLaunch,
    display_warnings,
    graph_processes,
    write_parameters,
)
from musculo_control.nodes.node_config import ROS_PARAMS_FILE
from musculo_control.nodes.security import enclave_of, security_environment

PACKAGE = "musculo_control"
_TRUE = ("true", "1", "yes", "on")


def _share() -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory(PACKAGE))


def _flag(context: LaunchContext, name: str) -> bool:
    value = LaunchConfiguration(name).perform(context).strip().lower()
    if value not in _TRUE + ("false", "0", "no", "off"):
        raise ValueError(f"launch argument {name}:={value}: expected true or false")
    return value in _TRUE


def arguments(mock: bool) -> list[DeclareLaunchArgument]:
    return [
        DeclareLaunchArgument("config_dir", default_value="",
                              description="robot config folder; empty: the installed "
                                          "share/musculo_control/config/musashi_left_arm"),
        DeclareLaunchArgument("params_file", default_value="",
                              description="node parameters (ros__parameters YAML); empty: "
                                          f"<config_dir>/{ROS_PARAMS_FILE}"),
        DeclareLaunchArgument("controller", default_value="osc", choices=list(CONTROLLER_NAMES),
                              description="the 125 Hz controller"),
        DeclareLaunchArgument("goal_orientation", default_value="",
                              choices=["", "true", "false"],
                              description="track the goal's orientation (rows wy, wz); false: "
                                          "position only, as the paper's trajectory experiment "
                                          "(kr = 0); empty: the parameter file's"),
        DeclareLaunchArgument("use_rviz", default_value="true", description="start RViz"),
        DeclareLaunchArgument("use_muscle_markers", default_value="",
                              description="start muscle_marker_node; empty: as use_rviz"),
        DeclareLaunchArgument("rviz_config", default_value="",
                              description="RViz config; empty: share/musculo_control/config/"
                                          "rviz/musculo.rviz"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="run on simulated time: the mock arm publishes "
                                          "/clock and every node uses it"
                                          if mock else "use /clock (from a simulator)"),
        DeclareLaunchArgument("use_robot_state_publisher", default_value="true",
                              description="start robot_state_publisher (TF for RViz); false on "
                                          "a minimal ROS 2 without rclcpp packages"),
        DeclareLaunchArgument("goal_mode", default_value="", choices=list(GOAL_MODES),
                              description="goal_node mode; empty: the parameter file's"),
        DeclareLaunchArgument("trajectory_file", default_value="",
                              description="goal_node trajectory (goal_mode trajectory); empty: "
                                          "the parameter file's"),
        DeclareLaunchArgument("use_mock_hardware", default_value="true" if mock else "false",
                              description="the MuJoCo mock arm instead of the real one"),
        DeclareLaunchArgument("real_time_factor", default_value="1.0",
                              description="mock arm: simulated seconds per wall second"),
        DeclareLaunchArgument("lockstep", default_value="false",
                              description="with use_sim_time and the mock arm: hold each clock "
                                          "step until every node has put out the instants "
                                          "before (a loaded computer slows the simulation "
                                          "instead of starving the loop; repeatable runs)"),
        DeclareLaunchArgument("one_process", default_value="", choices=["", "true", "false"],
                              description="the shared layout: the potentiometer and tendon "
                                          "driver nodes in one process (hardware_process), the "
                                          "dynamics, QP and goal nodes in another "
                                          "(control_process), each with one executor and tick "
                                          "loop; false: a process per node; empty: shared on "
                                          "the wall clock, a process per node on simulated "
                                          "time (see doc/timing.md)"),
        DeclareLaunchArgument("secure", default_value="false",
                              description="SROS2: each process in its enclave of "
                                          "config/sros2/policy.xml, ROS_SECURITY_STRATEGY "
                                          "Enforce; needs a keystore made from that policy "
                                          "(doc/ros.md \"SROS2\")"),
        DeclareLaunchArgument("keystore", default_value="",
                              description="with secure:=true, the SROS2 keystore; empty: "
                                          "$ROS_SECURITY_KEYSTORE"),
        DeclareLaunchArgument("realtime", default_value="false" if mock else "true",
                              description="the real-time profile of <config_dir>/realtime.yaml "
                                          "(SCHED_FIFO tick threads, nice middleware threads, "
                                          "locked memory); a process not permitted warns and "
                                          "runs without (see doc/timing.md)"),
    ]


def options(context: LaunchContext) -> GraphOptions:
    """The graph the launch arguments ask for."""
    config_text = LaunchConfiguration("config_dir").perform(context)
    config_dir = Path(config_text) if config_text else _share() / "config" / "musashi_left_arm"
    params_text = LaunchConfiguration("params_file").perform(context)
    markers = LaunchConfiguration("use_muscle_markers").perform(context)
    orientation = LaunchConfiguration("goal_orientation").perform(context)
    layout = LaunchConfiguration("one_process").perform(context)
    return GraphOptions(
        config_dir,
        params_file=Path(params_text) if params_text else None,
        mock=_flag(context, "use_mock_hardware"),
        controller=LaunchConfiguration("controller").perform(context),
        use_sim_time=_flag(context, "use_sim_time"),
        real_time_factor=float(LaunchConfiguration("real_time_factor").perform(context)),
        lockstep=_flag(context, "lockstep"),
        goal_mode=LaunchConfiguration("goal_mode").perform(context),
        trajectory_file=LaunchConfiguration("trajectory_file").perform(context),
        goal_orientation=_flag(context, "goal_orientation") if orientation else None,
        use_muscle_markers=_flag(context, "use_muscle_markers" if markers else "use_rviz"),
        one_process=_flag(context, "one_process") if layout else None,
        realtime=_flag(context, "realtime"))


def _process(opts: GraphOptions, process: ProcessLaunch, secure: bool = False) -> list[Any]:
    """The launch actions of one process: a node with its parameters on top of the parameter
    file, or a shared process (the executable ``control_process`` with its nodes' names, under
    the process's name in the launch's log) with its nodes' parameters in a temporary file of
    one section per node (launch_ros would give a parameter dictionary to every node of the
    process), removed when the launch shuts down. ``secure``: in the process's SROS2 enclave."""
    enclave = ["--enclave", enclave_of(process.name)] if secure else []
    if not process.shared:
        n = process.nodes[0]
        return [Node(package=PACKAGE, executable=process.executable, name=n.name,
                     output="screen", parameters=[str(opts.parameter_file), n.parameters],
                     ros_arguments=enclave)]
    handle, path = tempfile.mkstemp(prefix=f"{process.name}_", suffix=".yaml")
    os.close(handle)
    write_parameters(Path(path), process.nodes)
    # no name: launch_ros would remap every node of the process to it
    return [Node(package=PACKAGE, executable=process.executable, exec_name=process.name,
                 output="screen", arguments=process.arguments,
                 parameters=[str(opts.parameter_file), path], ros_arguments=enclave),
            RegisterEventHandler(OnShutdown(
                on_shutdown=lambda _event, _context: Path(path).unlink(missing_ok=True)))]


def _nodes(context: LaunchContext) -> list[Any]:
    opts = options(context)
    opts.check()  # fail here, naming file and key, not in a node
    actions: list[Any] = []
    if opts.mock:  # the mock graph (and its RViz) stays on this machine
        actions += [SetEnvironmentVariable(name, value)
                    for name, value in localhost_discovery(os.environ).items()]
    # a process that paused must hear the others again (nodes/discovery.py)
    actions += [SetEnvironmentVariable(name, value)
                for name, value in graph_transport(os.environ).items()]
    secure = _flag(context, "secure")
    if secure:
        actions += [SetEnvironmentVariable(name, value) for name, value in security_environment(
            LaunchConfiguration("keystore").perform(context), os.environ).items()]
    actions += [a for p in graph_processes(opts) for a in _process(opts, p, secure)]
    # a URDF as written, or one generated from an MJCF (model/description.py)
    description = robot_description(opts.config_dir)
    publisher = _flag(context, "use_robot_state_publisher")
    if publisher:
        actions.append(Node(package="robot_state_publisher", executable="robot_state_publisher",
                            output="screen", parameters=[{"robot_description": description,
                                                          "use_sim_time": opts.use_sim_time}]))
    use_rviz = _flag(context, "use_rviz")
    for warning in display_warnings(use_rviz, publisher):
        launch.logging.get_logger("launch").warning(warning)
    if use_rviz:
        rviz_text = LaunchConfiguration("rviz_config").perform(context)
        rviz = rviz_text or str(_share() / "config" / "rviz" / "musculo.rviz")
        actions.append(Node(package="rviz2", executable="rviz2", output="screen",
                            arguments=["-d", rviz, "-f", base_frame(opts.config_dir, description)],
                            parameters=[{"use_sim_time": opts.use_sim_time}]))
    return actions


def generate(mock: bool) -> LaunchDescription:
    """The whole suite; ``mock``: the default of ``use_mock_hardware``."""
    return LaunchDescription([*arguments(mock), OpaqueFunction(function=_nodes)])
