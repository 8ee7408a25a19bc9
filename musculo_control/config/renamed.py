"""Keys that config files once had, and where each went: an old folder's stale key gets an error
that names its new home instead of a bare "unknown key".

Each entry names the file (by its name in a config folder), the old dotted key and either the
file and key that now hold the value or, for a key removed without a successor, why. A test
(test/test_config_folder.py) holds every old key refused and every new key accepted by the
current schema, so the table cannot point to a key that does not exist.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Moved(NamedTuple):
    """``file`` ``key`` now lives in ``new_file`` ``new_key``; or, with ``new_key`` empty, was
    removed (``why`` says what replaced it)."""

    file: str
    key: str
    new_file: str
    new_key: str
    why: str = ""


_LOOP = "the ROS-free runner and the nodes share one source"
_QP = "robot.yaml's copy had to be kept equal by hand; musculo operating-point uses the " \
      "controller's"

_LATE = "each input has a late bound (reported, control goes on) and a hold bound (minimum " \
        "tension)"

_INJECTION = "faults are injected only by the test side's stand-in of the node, " \
             "musculo_control.testing.node_injection"

#: Every renamed or removed key, oldest change first.
MOVED: tuple[Moved, ...] = (
    # one loop: every rate and timeout in one place
    Moved("controller.yaml", "qp.snapshot_max_age_s", "safety.yaml", "inputs.snapshot.hold_s",
          "one staleness threshold per input"),
    Moved("hardware.yaml", "potentiometer_reader.stale_timeout_s", "safety.yaml",
          "inputs.joint_state.hold_s", "one staleness threshold per input"),
    Moved("experiments.yaml", "runner.sensor_rate_hz", "hardware.yaml", "rates.sensor_rate_hz",
          _LOOP),
    Moved("experiments.yaml", "runner.driver_rate_hz", "hardware.yaml", "rates.driver_rate_hz",
          _LOOP),
    Moved("experiments.yaml", "runner.dynamics_rate_hz", "controller.yaml",
          "loop.dynamics_rate_hz", _LOOP),
    Moved("experiments.yaml", "runner.control_rate_hz", "controller.yaml",
          "loop.control_rate_hz", _LOOP),
    Moved("experiments.yaml", "seed", "mock_arm.yaml", "seed",
          "the seed of the mock arm's model error and noise"),
    Moved("controller.yaml", "workspace.frame_id", "robot.yaml", "arm.base_frame",
          "goals and the workspace are in the robot's base frame"),
    Moved("hardware.yaml", "driver.min_tension_n", "robot.yaml", "hill.f_min_n",
          "one minimum tension for the controller, the supervisor and the driver"),
    Moved("robot.yaml", "poses.operating_point.activation_weight", "controller.yaml", "qp.k",
          _QP),
    Moved("robot.yaml", "poses.operating_point.nullspace_weight", "controller.yaml", "qp.r",
          _QP),
    # node parameters that became the robot's (ros_params.yaml)
    Moved("ros_params.yaml", "potentiometer_node.check_rate_hz", "", "",
          "staleness is checked at every tick against safety.yaml inputs.joint_state"),
    Moved("ros_params.yaml", "tendon_driver_node.output_rate_hz", "hardware.yaml",
          "rates.driver_rate_hz", _LOOP),
    Moved("ros_params.yaml", "dynamics_node.rate_hz", "controller.yaml",
          "loop.dynamics_rate_hz", _LOOP),
    Moved("ros_params.yaml", "dynamics_node.joint_state_timeout_s", "safety.yaml",
          "inputs.joint_state.hold_s", _LOOP),
    Moved("ros_params.yaml", "activation_qp_node.rate_hz", "controller.yaml",
          "loop.control_rate_hz", _LOOP),
    Moved("ros_params.yaml", "activation_qp_node.joint_state_timeout_s", "safety.yaml",
          "inputs.joint_state.hold_s", _LOOP),
    Moved("ros_params.yaml", "activation_qp_node.dynamics_timeout_s", "safety.yaml",
          "inputs.snapshot.hold_s", _LOOP),
    *(Moved("ros_params.yaml", f"{node}.base_frame", "robot.yaml", "arm.base_frame",
            "one frame for every node")
      for node in ("activation_qp_node", "goal_node", "mock_hardware_node",
                   "muscle_marker_node")),
    Moved("ros_params.yaml", "mock_hardware_node.sensor_rate_hz", "hardware.yaml",
          "rates.sensor_rate_hz", _LOOP),
    Moved("ros_params.yaml", "mock_hardware_node.release_after_s", "mock_arm.yaml",
          "startup.release_after_s", _LOOP),
    Moved("ros_params.yaml", "mock_hardware_node.command_timeout_s", "mock_arm.yaml",
          "actuator.command_timeout_s", "the actuator modules' own watchdog"),
    Moved("ros_params.yaml", "mock_hardware_node.lockstep_lead_periods", "", "",
          "lockstep waits for the samples the clock says were sent; there is no lead to set"),
    # late inputs graded: reported as late first, minimum tension only at the hold bound
    Moved("safety.yaml", "joint_state_timeout_s", "safety.yaml", "inputs.joint_state.hold_s",
          _LATE),
    Moved("safety.yaml", "tendon_state_timeout_s", "safety.yaml",
          "inputs.tendon_state.hold_s", _LATE),
    Moved("safety.yaml", "driver_output_timeout_s", "safety.yaml",
          "inputs.driver_output.hold_s", _LATE),
    Moved("safety.yaml", "snapshot_late_s", "safety.yaml", "inputs.snapshot.late_s", _LATE),
    Moved("safety.yaml", "snapshot_timeout_s", "safety.yaml", "inputs.snapshot.hold_s",
          _LATE),
    Moved("hardware.yaml", "driver.watchdog_timeout_s", "safety.yaml",
          "inputs.muscle_commands.hold_s", _LATE),
    # the nodes that run the robot carry no fault injection
    *(Moved("ros_params.yaml", f"{node}.{key}", "", "", _INJECTION)
      for node in ("activation_qp_node", "mock_hardware_node")
      for key in ("inject_fault", "inject_at_s", "inject_for_s")),
)

_BY_KEY = {(m.file, m.key): m for m in MOVED}
#: ``[3]`` list indices and the ``ros__parameters`` level of a parameter file
_INDEX = re.compile(r"\[\d+\]")


def _normal(key: str) -> str:
    key = _INDEX.sub("", key).replace(".ros__parameters.", ".")
    return key.lstrip("/")


def moved(file: str, key: str) -> Moved | None:
    """The table's entry for ``key`` of the file named ``file`` (a path or a name), or None.
    A ``<node>.ros__parameters.<name>`` key is a node parameter, whatever its file is called."""
    name = file.replace("\\", "/").rsplit("/", 1)[-1]
    if ".ros__parameters." in key:
        name = "ros_params.yaml"
    return _BY_KEY.get((name, _normal(key)))


def moved_expectation(entry: Moved) -> str:
    """What an error says about a stale key: its new home, or why it went."""
    leaf = entry.key.rsplit(".", 1)[-1]
    why = f" ({entry.why})" if entry.why else ""
    if entry.new_key:
        return f"no '{leaf}' here: it moved to {entry.new_file} {entry.new_key}{why}"
    return f"no '{leaf}' here: it was removed{why}"
