"""Run-time parameters of every node, as frozen dataclasses, and the check of parameter files.

ROS-free (importable and tested without rclpy). Each node declares its ROS parameters from
its dataclass here (name, default, description) and parses the values it receives back into
the dataclass, so ranges and choices are checked by the same :func:`parse` as every other
config file. What the robot is (URDF, muscles, calibration, controller gains) comes from the
config folder (``config_dir``), loaded by the same code as the ROS-free runner, and so do the
loop's rates (hardware.yaml, controller.yaml) and every safety threshold (safety.yaml): the
nodes and the runner cannot disagree on them. Only what is about running as ROS processes
(polling, queues, modes, diagnostics, real-time priority) lives here, in
``config/<robot>/ros_params.yaml`` under ``<node_name>: ros__parameters:``.

:func:`check_params_file` validates such a file for one node before rclpy reads it, so a
missing or malformed file stops the node with an error naming the file and the key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from musculo_control.config.parser import located, parse, read_yaml, spec, unknown_keys
from musculo_control.control.controller_names import CONTROLLER_NAMES
from musculo_control.errors import ConfigError, raise_collected
from musculo_control.paths import default_config_dir

#: The ``executor`` parameter's choices (musculo_control.nodes.executors, which needs rclpy).
EXECUTOR_CHOICES = ("auto", "events", "single_threaded")

T = TypeVar("T")

#: Node names (also the executables' names and the keys of ros_params.yaml).
POTENTIOMETER_NODE = "potentiometer_node"
TENDON_DRIVER_NODE = "tendon_driver_node"
DYNAMICS_NODE = "dynamics_node"
ACTIVATION_QP_NODE = "activation_qp_node"
MOCK_HARDWARE_NODE = "mock_hardware_node"
GOAL_NODE = "goal_node"
MUSCLE_MARKER_NODE = "muscle_marker_node"

#: Parameters every rclpy node has; a parameter file may set them for any node.
ROS_STANDARD_PARAMETERS = ("use_sim_time",)
#: Name of the parameter file inside a config folder.
ROS_PARAMS_FILE = "ros_params.yaml"

_CONFIG_DIR_DOC = "robot config folder; empty: the installed share/musculo_control/config/<robot>"


@dataclass(frozen=True, kw_only=True)
class CommonNodeParams:
    """Parameters every node has."""

    config_dir: str = spec("", doc=_CONFIG_DIR_DOC)
    diagnostics_period_s: float = spec(1.0, gt=0.0, doc="/diagnostics period [s]")
    warn_throttle_s: float = spec(1.0, gt=0.0, doc="shortest interval between two warnings "
                                                   "about one input topic [s]")
    housekeeping_period_s: float = spec(
        0.02, gt=0.0, doc="in the real-time tick loop, how often the single-threaded executor "
                          "runs what is ready (parameter services, goals, diagnostics timer); "
                          "the EventsExecutor runs each as it comes [s]")
    realtime_priority: int = spec(
        0, ge=0, le=99, doc="SCHED_FIFO priority of the node's tick thread; 0: the normal "
                            "scheduler. Needs CAP_SYS_NICE or an rtprio limit; without, the "
                            "node warns and runs normally (musculo_control.realtime)")
    nice: int = spec(0, ge=-20, le=19, doc="niceness of the process's other threads (the "
                                           "middleware's, which receive the samples); 0: "
                                           "unchanged. Below 0 needs CAP_SYS_NICE")
    cpu_affinity: tuple[int, ...] = spec((), doc="CPUs the tick thread may run on; empty: any")
    gc_freeze: bool = spec(True, doc="gc.freeze() once the process's nodes are built: the "
                                     "long-lived objects (models, solvers, libraries) leave the "
                                     "collector's working set, so that an oldest-generation "
                                     "collection in the loop does not walk them all (a stall of "
                                     "tens of ms)")
    lock_memory: bool = spec(False, doc="lock the process's memory (mlockall): no page fault "
                                        "in a tick. Needs CAP_IPC_LOCK or a memlock limit")
    executor: str = spec("auto", choices=EXECUTOR_CHOICES,
                         doc="rclpy executor of the node's process: auto (the EventsExecutor "
                             "where rclpy has it, Jazzy 7.1.4 and Kilted, on the wall clock; "
                             "else the single-threaded one), events, single_threaded. The "
                             "nodes of one process must agree (musculo_control.nodes."
                             "executors)")


@dataclass(frozen=True, kw_only=True)
class LockstepParams:
    """A node whose tick takes other nodes' outputs, on simulated time with the mock arm's
    lockstep (:mod:`musculo_control.loop.lockstep`)."""

    lockstep: bool = spec(False, doc="simulated time with the mock arm's lockstep (the "
                                     "launcher sets it with the mock's): a tick first waits "
                                     "for the input samples the clock says were sent")
    lockstep_wait_s: float = spec(0.25, gt=0.0, doc="longest wall time one tick waits for such "
                                                    "a sample; a stream that silent (or that "
                                                    "far behind) is not waited for again until "
                                                    "it catches up; below the mock arm's "
                                                    "lockstep_timeout_s [s]")


@dataclass(frozen=True, kw_only=True)
class PotentiometerNodeParams(CommonNodeParams):
    """``potentiometer_node``: hw/potentiometers (ADC counts) -> joint_states (rad, rad/s)."""

    poll_rate_hz: float = spec(1000.0, gt=0.0, doc="with the single-threaded executor: how "
                                                   "often hw/potentiometers is read; every "
                                                   "queued sample is converted (twice the "
                                                   "sensor rate: a sample waits at most half a "
                                                   "sensor period) [Hz]")
    age_check_rate_hz: float = spec(100.0, gt=0.0,
                                    doc="with the EventsExecutor, which hands each sample over "
                                        "as it arrives: how often the newest sample's age is "
                                        "checked (late, stale) between samples [Hz]")
    input_queue: int = spec(10, ge=1, doc="hw/potentiometers samples kept between two reads")


@dataclass(frozen=True, kw_only=True)
class TendonDriverNodeParams(LockstepParams, CommonNodeParams):
    """``tendon_driver_node``: muscle_commands (N) -> hw/tendon_commands (driver units), and
    hw/tendon_states (counts) -> muscle_states (m, m/s, N)."""

    input_queue: int = spec(10, ge=1, doc="hw/tendon_states samples kept between two ticks; "
                                          "every one becomes a muscle_states message")
    commander: str = spec(ACTIVATION_QP_NODE, doc="the one node whose muscle_commands the "
                                                  "driver obeys (relative to the driver's "
                                                  "namespace, or absolute)")
    sample_ids: bool = spec(True, doc="tell the commander's samples from a foreign "
                                      "publisher's by the publisher id rclpy gives with each "
                                      "sample, where it does (Kilted on); false: by the "
                                      "graph's publisher list alone, as on Humble and Jazzy "
                                      "(a foreign publisher then means minimum tension)")


@dataclass(frozen=True, kw_only=True)
class DynamicsNodeParams(LockstepParams, CommonNodeParams):
    """``dynamics_node``: joint_states -> dynamics snapshot (paper's 20 Hz thread; the rate is
    controller.yaml ``loop.dynamics_rate_hz``, the joint-state limit safety.yaml's)."""


@dataclass(frozen=True, kw_only=True)
class ActivationQPNodeParams(LockstepParams, CommonNodeParams):
    """``activation_qp_node``: the 125 Hz controller (paper eq. 9-17) with the safety
    supervisor (rate: controller.yaml ``loop.control_rate_hz``; limits: safety.yaml)."""

    #: parameters that may change while the node runs (the rest are read-only)
    DYNAMIC: ClassVar[tuple[str, ...]] = ("controller", "use_goal_orientation")

    controller: str = spec("osc", choices=CONTROLLER_NAMES,
                           doc="controller to run; set while running, it switches without a "
                               "jump (controller.yaml loop.switch_ramp_s), refused with the "
                               "reason during a stop or the resume after one")
    use_goal_orientation: bool = spec(True, doc="track the goal's orientation (rows wy, wz); "
                                                "false: position only (with the orientation "
                                                "damping); may be set while running")
    timing_report_period_s: float = spec(1.0, gt=0.0, doc="controller/timing period [s]")
    tendon_queue: int = spec(50, ge=1, doc="muscle_states samples and hw/tendon_commands "
                                           "outputs kept between two ticks (each goes through "
                                           "the tendon monitor)")
    actuator_writer: str = spec(TENDON_DRIVER_NODE, doc="the one node that may publish "
                                                        "hw/tendon_commands (relative to this "
                                                        "node's namespace, or absolute)")
    resync_after_pause: bool = spec(False, doc="after the node's own pause (a tick "
                                               "safety.yaml inputs.own_pause_s late), wait up "
                                               "to inputs.joint_state.late_s for a joint "
                                               "sample taken since (the launcher sets it when "
                                               "joint_states come from another process: in the "
                                               "same one, nothing can arrive meanwhile)")


@dataclass(frozen=True, kw_only=True)
class MockHardwareNodeParams(CommonNodeParams):
    """``mock_hardware_node``: the MuJoCo arm behind the raw hw/ topics."""

    seed: int = spec(-1, ge=-1, doc="model error and noise seed; -1: mock_arm.yaml's")
    initial_pose_rad: tuple[float, ...] = spec((), doc="start joint angles [rad]; empty: "
                                                       "robot.yaml home_pose_rad")
    publish_clock: bool = spec(False, doc="publish /clock with the physics time (simulated "
                                          "time; the other nodes then run with use_sim_time)")
    clock_start_s: float = spec(1.0, gt=0.0, doc="simulated time at the start (publish_clock); "
                                                 "not 0, which ROS reads as 'time not set' [s]")
    real_time_factor: float = spec(1.0, gt=0.0, doc="simulated seconds per wall second")
    max_catch_up_s: float = spec(0.1, gt=0.0, doc="largest physics time stepped in one timer "
                                                  "tick (a stalled process catches up to the "
                                                  "wall clock, as real hardware never stalls); "
                                                  "beyond, the simulation falls behind "
                                                  "(counted as overruns) [s]")
    command_queue: int = spec(50, ge=1, doc="hw/tendon_commands kept between two ticks, each "
                                            "applied at its stamp's physics step")
    command_writer: str = spec(TENDON_DRIVER_NODE, doc="the one node whose hw/tendon_commands "
                                                       "the mock's actuator modules apply "
                                                       "(relative to this node's namespace, "
                                                       "or absolute)")
    truth_rate_hz: float = spec(50.0, gt=0.0, doc="mock/ ground-truth topics rate [Hz]")
    lockstep: bool = spec(False, doc="with publish_clock: publish the next clock only once "
                                     "every node has produced its output of the instants "
                                     "before (joint_states, dynamics, the controller's "
                                     "controller/activations, the tendon driver's own samples "
                                     "of hw/tendon_commands), so that a loaded computer slows "
                                     "the simulation instead of starving the loop")
    lockstep_timeout_s: float = spec(0.5, gt=0.0, doc="a node behind the clock and silent for "
                                                      "longer (wall time) is no longer waited "
                                                      "for (a dead node) [s]")


@dataclass(frozen=True, kw_only=True)
class GoalNodeParams(CommonNodeParams):
    """``goal_node``: hand goals from an RViz interactive marker or a trajectory file."""

    mode: str = spec("interactive", choices=("interactive", "trajectory", "none"),
                     doc="interactive: a marker the user drags in RViz; trajectory: play "
                         "trajectory_file; none: publish nothing")
    trajectory_file: str = spec("", doc="trajectory YAML (mode trajectory); a relative path "
                                        "is looked up in config_dir")
    publish_rate_hz: float = spec(50.0, gt=0.0, doc="goal rate while a trajectory plays [Hz]")
    start_delay_s: float = spec(0.0, ge=0.0, doc="wait this long after the controller holds "
                                                 "the arm (its first goal on controller/goal) "
                                                 "before playing the trajectory [s]")
    marker_scale_m: float = spec(0.12, gt=0.0, doc="size of the interactive marker [m]")


@dataclass(frozen=True, kw_only=True)
class MuscleMarkerNodeParams(CommonNodeParams):
    """``muscle_marker_node``: muscle paths for RViz, coloured by load."""

    rate_hz: float = spec(20.0, gt=0.0, doc="muscle_markers rate [Hz]")
    colour_by: str = spec("activation", choices=("activation", "tension", "command"),
                          doc="activation: controller/activations; tension: measured "
                              "(muscle_states); command: muscle_commands")
    activation_full_scale: float = spec(2.0, gt=0.0, doc="activation drawn fully red [-]")
    tension_full_scale_n: float = spec(150.0, gt=0.0, doc="tension drawn fully red [N]")
    line_width_m: float = spec(0.006, gt=0.0, doc="muscle line width [m]")


#: Each node's parameter dataclass.
NODE_PARAMS: dict[str, type] = {
    POTENTIOMETER_NODE: PotentiometerNodeParams,
    TENDON_DRIVER_NODE: TendonDriverNodeParams,
    DYNAMICS_NODE: DynamicsNodeParams,
    ACTIVATION_QP_NODE: ActivationQPNodeParams,
    MOCK_HARDWARE_NODE: MockHardwareNodeParams,
    GOAL_NODE: GoalNodeParams,
    MUSCLE_MARKER_NODE: MuscleMarkerNodeParams,
}


def config_dir_of(value: str) -> Path:
    """The config folder a ``config_dir`` parameter names (empty: the installed default)."""
    return Path(value) if value else default_config_dir()


def parameter_defaults(cls: type) -> list[tuple[str, Any, str]]:
    """(name, default as a ROS parameter value, description) per field of ``cls``."""
    out = []
    for f in dataclasses.fields(cls):
        default = f.default
        if isinstance(default, tuple):
            default = list(default)
        out.append((f.name, default, f.metadata.get("doc", "")))
    return out


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """Parameter values as :func:`parse` takes them: arrays as lists; unset (None) and empty
    strings (the 'not given' of a string parameter) left out, so the field default applies."""
    plain: dict[str, Any] = {}
    for name, value in values.items():
        if value is None or (isinstance(value, str) and value == ""):
            continue
        if not isinstance(value, (bool, int, float, str)):
            value = list(value)  # array('d'), list
        plain[name] = value
    return plain


def parse_parameters(cls: type[T], values: dict[str, Any], source: str, key: str) -> T:
    """The dataclass from received parameter values (ROS arrays become tuples)."""
    return parse(cls, _plain(values), source, key)


def _node_sections(data: Any, file: str, node_name: str) -> list[tuple[str, dict[str, Any]]]:
    """The (key, ros__parameters) sections of a parameter file that apply to ``node_name``."""
    if data is None:
        return []
    if not isinstance(data, dict):
        raise ConfigError(file, "<top level>", "a mapping of node names to "
                                               "{ros__parameters: {...}}", type(data).__name__)
    out = []
    for key, section in data.items():
        name = str(key)
        if name not in (node_name, "/" + node_name, "/**", "**"):
            continue
        if not isinstance(section, dict) or set(section) != {"ros__parameters"}:
            raise ConfigError(file, name, "a mapping with the single key 'ros__parameters'",
                              sorted(section) if isinstance(section, dict) else section)
        params = section["ros__parameters"]
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise ConfigError(file, f"{name}.ros__parameters", "a mapping of parameters",
                              params)
        out.append((f"{name}.ros__parameters", params))
    return out


def check_params_file(path: str | Path, node_name: str, cls: type[T]) -> dict[str, Any]:
    """Validate the parts of a ROS parameter file that apply to ``node_name``.

    Returns the merged parameter values (the file's order: later sections win). Raises
    :class:`ConfigError` naming the file and ``<node>.ros__parameters.<key>`` on a missing or
    unreadable file, bad YAML, an unknown parameter or a value of the wrong type or range.
    """
    file = str(path)
    data = read_yaml(Path(path))
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    merged: dict[str, Any] = {}
    errors: list[ConfigError] = []
    try:
        for where, params in _node_sections(data, file, node_name):
            # a wildcard section may carry parameters of other nodes
            if not where.startswith(("/**", "**")):
                errors += unknown_keys({k: v for k, v in params.items()
                                        if k not in ROS_STANDARD_PARAMETERS}, known, file, where)
            merged.update({k: v for k, v in params.items() if k in known})
            try:
                parse(cls, _plain({k: v for k, v in params.items() if k in known}), file, where)
            except ConfigError as exc:
                errors.append(exc)
        raise_collected(errors)
    except ConfigError as exc:
        raise located(exc, Path(path)) from None
    return merged


def params_files_from_argv(argv: Sequence[str]) -> list[str]:
    """The ``--params-file`` arguments inside the ``--ros-args`` part of a command line."""
    files: list[str] = []
    in_ros = False
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--ros-args":
            in_ros = True
        elif arg == "--" and in_ros:
            in_ros = False
        elif in_ros and arg == "--params-file" and i + 1 < len(args):
            files.append(args[i + 1])
            i += 1
        i += 1
    return files


def parameters_markdown() -> str:
    """The parameter tables of doc/ros.md (a test holds the doc to this): the parameters every
    node takes, then each node's own, with defaults and descriptions."""
    def table(title: str, fields: list[dataclasses.Field[Any]]) -> list[str]:
        rows = [f"| {title} | default | meaning |", "|---|---|---|"]
        for f in fields:
            default = list(f.default) if isinstance(f.default, tuple) else f.default
            doc = f.metadata.get("doc", "").replace("|", "\\|")
            rows.append(f"| `{f.name}` | `{default!r}` | {doc} |")
        return rows

    common = {f.name for f in dataclasses.fields(CommonNodeParams)}
    lines = table("every node", list(dataclasses.fields(CommonNodeParams))) + [""]
    for name, cls in NODE_PARAMS.items():
        own = [f for f in dataclasses.fields(cls) if f.name not in common]
        if own:
            lines += table(f"`{name}`", own) + [""]
    return "\n".join(lines)
