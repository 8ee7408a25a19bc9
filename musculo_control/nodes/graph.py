"""The node graph, described once: which nodes run and with which parameters.

``ros2 launch`` (launch/*.launch.py through :mod:`musculo_control.nodes.launch_builder`), the
test harness and ``musculo graph`` (a launcher for machines without ``ros2 launch``) all ask
:func:`graph_nodes` for the list, so what a test starts is exactly what the launch file starts.
ROS-free: each entry names an executable and the parameters to set on top of the parameter
file (``config/<robot>/ros_params.yaml``); the caller turns it into a launch action or a
process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from musculo_control.control.controller_names import CONTROLLER_NAMES
from musculo_control.errors import ConfigError, ErrorCollector, InputError, raise_collected
from musculo_control.nodes.node_config import (
    ACTIVATION_QP_NODE,
    DYNAMICS_NODE,
    GOAL_NODE,
    MOCK_HARDWARE_NODE,
    MUSCLE_MARKER_NODE,
    NODE_PARAMS,
    POTENTIOMETER_NODE,
    ROS_PARAMS_FILE,
    TENDON_DRIVER_NODE,
    check_params_file,
)

#: The real-time profile's parameter file of a config folder (parameters added to the nodes'
#: with ``realtime``; :mod:`musculo_control.realtime`).
REALTIME_FILE = "realtime.yaml"

#: Goal node modes; '' keeps the parameter file's.
GOAL_MODES = ("", "interactive", "trajectory", "none")


@dataclass(frozen=True)
class GraphOptions:
    """The choices of a launch (the launch files' arguments)."""

    config_dir: Path
    params_file: Path | None = None  # None: <config_dir>/ros_params.yaml
    mock: bool = True  # the MuJoCo mock arm instead of the real one
    controller: str = "osc"
    use_sim_time: bool = False  # the mock arm publishes /clock and every node uses it
    real_time_factor: float = 1.0  # mock arm: simulated seconds per wall second
    #: with use_sim_time: the mock arm holds the clock for a lagging node, and the nodes that
    #: take other nodes' outputs wait for what the clock says was sent (loop/lockstep.py)
    lockstep: bool = False
    goal_mode: str = ""
    trajectory_file: str = ""  # '' keeps the parameter file's
    goal_orientation: bool | None = None  # None keeps the parameter file's
    use_muscle_markers: bool = False
    #: the shared layout (:data:`SHARED_PROCESSES`, nodes/control_process.py): the drivers in
    #: one process, the controller's other nodes in another, the mock arm alone; None: the
    #: default by measurement (doc/timing.md): shared on the wall clock, a process per node on
    #: simulated time (the lockstep holds the clock for each node's own thread)
    one_process: bool | None = None
    #: the real-time profile of ``<config_dir>/realtime.yaml`` on top of the parameter file
    realtime: bool = False
    #: per node, parameters to set on top of everything else (tests, a user's launcher)
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: per node, the Python module (``python -m``) that runs it instead of its executable's:
    #: a stand-in with the node's name, parameters and topics (the test side's fault-injecting
    #: nodes, :data:`musculo_control.testing.node_injection.STAND_INS`), in a process of its own
    stand_ins: dict[str, str] = field(default_factory=dict)

    @property
    def parameter_file(self) -> Path:
        return self.params_file if self.params_file is not None else \
            self.config_dir / ROS_PARAMS_FILE

    @property
    def shared_process(self) -> bool:
        """Whether the controller's nodes share processes (:data:`SHARED_PROCESSES`;
        ``one_process`` or its default)."""
        return (not self.use_sim_time) if self.one_process is None else self.one_process

    @property
    def realtime_file(self) -> Path:
        return self.config_dir / REALTIME_FILE

    def realtime_parameters(self, node_name: str) -> dict[str, Any]:
        """The real-time profile's parameters of ``node_name`` (none unless ``realtime``)."""
        if not self.realtime:
            return {}
        return check_params_file(self.realtime_file, node_name, NODE_PARAMS[node_name])

    def check(self) -> None:
        """Raise :class:`InputError` on a bad choice, :class:`ConfigError` on a bad parameter
        file or config folder (naming the file and the key; every error of the folder's files
        and of every node's parameters together), before any node starts."""
        if self.controller not in CONTROLLER_NAMES:
            raise InputError("controller", f"one of {list(CONTROLLER_NAMES)}", self.controller)
        if self.goal_mode not in GOAL_MODES:
            raise InputError("goal_mode", f"one of {list(GOAL_MODES)}", self.goal_mode)
        if not self.real_time_factor > 0.0:
            raise InputError("real_time_factor", "a factor > 0", self.real_time_factor)
        for what, per_node in (("extra parameters", self.extra), ("stand-ins", self.stand_ins)):
            unknown = set(per_node) - set(NODE_PARAMS)
            if unknown:
                raise InputError(what, f"node names of {sorted(NODE_PARAMS)}", sorted(unknown))
        errors: list[ConfigError] = []

        def collect(exc: ConfigError) -> None:
            # a wildcard section's error is every node's: once is enough
            errors.extend(e for e in getattr(exc, "errors", (exc,))
                          if str(e) not in {str(f) for f in errors})

        # imported here, by the launcher only: the processes that run nodes import this module
        # for the graph's description, and the drivers' process loads no model (nor, on the
        # robot, the simulation)
        from musculo_control.loop.parts import LOOP_FILES, check_loop_files

        found = ErrorCollector()
        if self.mock:  # the simulation's files too
            from musculo_control.sim.setup import check_run_files

            check_run_files(self.config_dir, {}, found, (*LOOP_FILES, "mock_arm"))
        else:
            check_loop_files(self.config_dir, {}, found)
        try:
            found.raise_any()
        except ConfigError as exc:
            collect(exc)
        for name, cls in NODE_PARAMS.items():
            for path in (self.parameter_file, *([self.realtime_file] if self.realtime else [])):
                try:
                    check_params_file(path, name, cls)
                except ConfigError as exc:
                    collect(exc)
        raise_collected(errors)


@dataclass(frozen=True)
class NodeLaunch:
    """One node of the graph: its name (also its executable's) and parameters."""

    name: str
    parameters: dict[str, Any]  # on top of the parameter file
    stand_in: str = ""  # the module of a stand-in that runs instead ('' the node itself)

    @property
    def module(self) -> str:
        """The Python module whose ``main()`` runs it (``python -m``)."""
        return self.stand_in or f"musculo_control.nodes.{self.name}"


def graph_nodes(options: GraphOptions) -> list[NodeLaunch]:
    """The nodes of the graph in start order (the mock arm first: it is the clock)."""
    sim = options.use_sim_time

    def node(name: str, extra: dict[str, Any] | None = None,
             use_sim_time: bool = sim) -> NodeLaunch:
        params: dict[str, Any] = {"config_dir": str(options.config_dir),
                                  "use_sim_time": use_sim_time}
        params.update(options.realtime_parameters(name))
        params.update(extra or {})
        params.update(options.extra.get(name, {}))
        return NodeLaunch(name, params, options.stand_ins.get(name, ""))

    goal: dict[str, Any] = {}
    if options.goal_mode:
        goal["mode"] = options.goal_mode
    if options.trajectory_file:
        goal["trajectory_file"] = options.trajectory_file
    qp: dict[str, Any] = {"controller": options.controller}
    if options.goal_orientation is not None:
        qp["use_goal_orientation"] = options.goal_orientation
    lockstep = sim and options.mock and options.lockstep

    def awaits(name: str) -> dict[str, Any]:
        # a consumer waits for samples another process has sent; in a process with a producer
        # of its inputs it would only block the thread that is to send them (seen: a QP in the
        # dynamics node's process waiting out lockstep_wait_s for a snapshot its own thread
        # had yet to compute)
        own = process_of(options, name)
        return {"lockstep": lockstep and all(process_of(options, producer) != own
                                             for producer in AWAITED_PRODUCERS[name])}

    qp.update(awaits(ACTIVATION_QP_NODE))
    if process_of(options, POTENTIOMETER_NODE) != process_of(options, ACTIVATION_QP_NODE):
        # after its own pause the QP waits for a joint sample taken since: one another process
        # sends meanwhile (in its own, the wait would only delay the node that is to send it)
        qp["resync_after_pause"] = True
    nodes = []
    if options.mock:
        # the mock arm is the clock in simulated time; it must not wait for /clock itself
        nodes.append(node(MOCK_HARDWARE_NODE, {"publish_clock": sim,
                                               "real_time_factor": options.real_time_factor,
                                               "lockstep": lockstep},
                          use_sim_time=False))
    nodes += [node(POTENTIOMETER_NODE), node(TENDON_DRIVER_NODE, awaits(TENDON_DRIVER_NODE)),
              node(DYNAMICS_NODE, awaits(DYNAMICS_NODE)), node(ACTIVATION_QP_NODE, qp),
              node(GOAL_NODE, goal)]
    if options.use_muscle_markers:
        nodes.append(node(MUSCLE_MARKER_NODE))
    return nodes


#: The executable (console script; module ``musculo_control.nodes.control_process``) that runs
#: the nodes named on its command line in one process: every process of the shared layout.
SHARED_EXECUTABLE = "control_process"
#: The shared layout's process of the hardware path: the 500 Hz drivers, the tendon driver the
#: last line of defence, on a thread (and interpreter) of their own, so that neither the QP's
#: ticks nor a frozen controller hold them up.
HARDWARE_PROCESS = "hardware_process"
#: The shared layout's process of the controller: the dynamics, QP and goal nodes (and the
#: muscle markers), which exchange their samples within it.
CONTROL_PROCESS = "control_process"
#: The shared layout (``one_process``): process -> the nodes it may run (each runs those of the
#: graph, in graph order). The mock arm (it stands for the hardware) and any stand-in run
#: alone.
SHARED_PROCESSES: dict[str, tuple[str, ...]] = {
    HARDWARE_PROCESS: (POTENTIOMETER_NODE, TENDON_DRIVER_NODE),
    CONTROL_PROCESS: (DYNAMICS_NODE, ACTIVATION_QP_NODE, GOAL_NODE, MUSCLE_MARKER_NODE),
}
#: Per consumer, the nodes whose outputs its tick awaits in lockstep (loop/lockstep.py): the
#: driver's hw/tendon_states (mock arm) and muscle_commands (QP); the dynamics node's
#: joint_states; the QP node's joint_states, muscle_states and hw/tendon_commands (drivers) and
#: snapshots (dynamics node).
AWAITED_PRODUCERS: dict[str, tuple[str, ...]] = {
    TENDON_DRIVER_NODE: (MOCK_HARDWARE_NODE, ACTIVATION_QP_NODE),
    DYNAMICS_NODE: (POTENTIOMETER_NODE,),
    ACTIVATION_QP_NODE: (POTENTIOMETER_NODE, TENDON_DRIVER_NODE, DYNAMICS_NODE),
}


def process_of(options: GraphOptions, name: str) -> str:
    """The name of the process that runs node ``name``: its own, or in the shared layout the
    one of :data:`SHARED_PROCESSES` that lists it (the mock arm and a stand-in run alone)."""
    if options.shared_process and name != MOCK_HARDWARE_NODE and not options.stand_ins.get(name):
        for process, names in SHARED_PROCESSES.items():
            if name in names:
                return process
    return name


def shared_process_name(nodes: Iterable[str]) -> str:
    """The process of :data:`SHARED_PROCESSES` that lists every one of ``nodes`` (the name a
    shared process's messages carry); :data:`CONTROL_PROCESS` for another mix."""
    names = set(nodes)
    return next((process for process, listed in SHARED_PROCESSES.items()
                 if names and names <= set(listed)), CONTROL_PROCESS)


def layout_label(options: GraphOptions) -> str:
    """The process layout of ``options`` in words, for reports."""
    if not options.shared_process:
        return "a process per node"
    return f"drivers and controller in two processes ({', '.join(SHARED_PROCESSES)})"


@dataclass(frozen=True)
class ProcessLaunch:
    """One process of the graph: its name and the nodes it runs; ``shared``: a process of the
    shared layout (:data:`SHARED_PROCESSES`), which runs :data:`SHARED_EXECUTABLE` with its
    nodes' names as arguments, however many nodes it has."""

    name: str
    nodes: tuple[NodeLaunch, ...]
    shared: bool = False

    @property
    def executable(self) -> str:
        """The package's executable that runs it: :data:`SHARED_EXECUTABLE` or its node's."""
        return SHARED_EXECUTABLE if self.shared else self.nodes[0].name

    @property
    def module(self) -> str:
        """The Python module whose ``main()`` runs it (``python -m``)."""
        return f"musculo_control.nodes.{SHARED_EXECUTABLE}" if self.shared \
            else self.nodes[0].module

    @property
    def arguments(self) -> list[str]:
        """Command-line arguments before ``--ros-args``: the node names of a shared process."""
        return [n.name for n in self.nodes] if self.shared else []


def graph_processes(options: GraphOptions) -> list[ProcessLaunch]:
    """The processes of the graph in start order: one per node, or in the shared layout the
    mock arm (it stands for the hardware), each stand-in, then each process of
    :data:`SHARED_PROCESSES` that has a node to run."""
    nodes = graph_nodes(options)
    alone = [ProcessLaunch(n.name, (n,)) for n in nodes if process_of(options, n.name) == n.name]
    shared = [ProcessLaunch(name, members, shared=True) for name in SHARED_PROCESSES
              if (members := tuple(n for n in nodes if process_of(options, n.name) == name))]
    return alone + shared


def display_warnings(use_rviz: bool, use_robot_state_publisher: bool) -> list[str]:
    """What the launch tells the operator about the display it was asked for: RViz draws the
    robot model and its frames from robot_state_publisher, so without it only the muscle
    markers would show."""
    if use_rviz and not use_robot_state_publisher:
        return ["use_rviz:=true with use_robot_state_publisher:=false: RViz will show no robot "
                "model and no TF (the muscle markers only)"]
    return []


def write_parameters(path: Path, nodes: Iterable[NodeLaunch]) -> Path:
    """A ``--params-file`` with each node's parameters under its own name (so one file serves
    a process of several nodes)."""
    doc = {n.name: {"ros__parameters": _plain(n.parameters)} for n in nodes}
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """Parameter values YAML can write and rcl can read back with their types."""
    out: dict[str, Any] = {}
    for k, v in values.items():
        if isinstance(v, Path):
            v = str(v)
        elif isinstance(v, tuple):
            v = list(v)
        out[k] = v
    return out


def with_extra(options: GraphOptions, name: str, **parameters: Any) -> GraphOptions:
    """``options`` with ``parameters`` added for node ``name``."""
    extra = {k: dict(v) for k, v in options.extra.items()}
    extra.setdefault(name, {}).update(parameters)
    return dataclasses.replace(options, extra=extra)
