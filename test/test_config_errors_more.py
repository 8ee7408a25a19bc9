"""Malformed controller, hardware, mock-arm, experiments, safety and reliability files stop with
an error naming the file, the key and what was expected (the robot description's cases are in
test_config_errors.py)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from musculo_control.config.parser import load_with_overrides
from musculo_control.control.controller import CONTROLLER_NAMES, make_controller
from musculo_control.control.controller_config import load_controller_config
from musculo_control.errors import ConfigError
from musculo_control.hardware.drivers import load_drivers
from musculo_control.safety.config import load_safety_config
from musculo_control.sim.fault_matrix import load_fault_matrix_config
from musculo_control.sim.mock_arm import MockArm, load_mock_config
from musculo_control.sim.runner import divisors
from musculo_control.sim.setup import ExperimentsConfig
from musculo_control.sim.soak_schedule import load_soak_config


def load_folder(folder: Path, robot) -> None:
    """Every file of a config folder but the robot description, loaded and cross-checked the
    way the commands do it."""
    ctrl = load_controller_config(folder)
    for name in CONTROLLER_NAMES:
        make_controller(name, robot, ctrl, str(folder / "controller.yaml"))
    drivers = load_drivers(robot, folder / "hardware.yaml")
    mock_cfg = load_mock_config(robot, folder / "mock_arm.yaml")
    MockArm(robot, drivers.calibration, mock_cfg, file=str(folder / "mock_arm.yaml"))
    exp = load_with_overrides(ExperimentsConfig, folder / "experiments.yaml")
    divisors(ctrl.loop, drivers.rates, exp.runner, mock_cfg.physics.timestep_s, str(folder))
    load_safety_config(folder, drivers.tendons.config)
    load_fault_matrix_config(folder, robot)
    load_soak_config(folder, robot)


def edit(name: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / name
        data = yaml.safe_load(path.read_text())
        change(data)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return apply


def put(name: str, dotted: str, value) -> Callable[[Path], None]:
    """Set ``dotted`` (a.b.c, list indices as numbers) in file ``name`` to ``value``."""
    def change(data: dict) -> None:
        *path, last = dotted.split(".")
        node = data
        for part in path:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return edit(name, change)


def drop(name: str, dotted: str) -> Callable[[Path], None]:
    def change(data: dict) -> None:
        *path, last = dotted.split(".")
        node = data
        for part in path:
            node = node[part]
        del node[last]
    return edit(name, change)


C, H, M, E = "controller.yaml", "hardware.yaml", "mock_arm.yaml", "experiments.yaml"
S, R = "safety.yaml", "reliability.yaml"

# (id, mutation, file the message must name, key fragment, expectation fragment)
CASES = [
    # controller.yaml
    ("unknown QP formulation", put(C, "qp.formulation", "eq12"), C, "qp.formulation",
     "one of ['eq9', 'eq10', 'eq11']"),
    ("negative activation weight", put(C, "qp.k", -0.01), C, "qp.k", ">= 0.0"),
    ("gain as text", put(C, "gains.kp_s2", "300"), C, "gains.kp_s2", "a number"),
    ("unknown key in the QP", put(C, "qp.nullspace_weight", 1.0), C, "qp.nullspace_weight",
     "one of the known keys"),
    ("task section missing", drop(C, "task"), C, "task", "a value"),
    ("workspace box upside down", put(C, "workspace.box_min_m", [0.7, -0.1, -0.1]), C,
     "workspace.box_min_m", "box_min_m < box_max_m"),
    ("zero reach", put(C, "workspace.reach_m", 0.0), C, "workspace.reach_m", "> 0.0"),
    ("OSQP iterations as a float", put(C, "osqp.max_iter", 40.5), C, "osqp.max_iter",
     "an integer"),
    ("control rate negative", put(C, "loop.control_rate_hz", -125.0), C,
     "loop.control_rate_hz", "> 0.0"),
    ("baseline stiffness for six joints", put(C, "baselines.joint_stiffness.stiffness_nm_rad",
                                              [40.0] * 6), C,
     "baselines.joint_stiffness.stiffness_nm_rad", "7 values"),
    ("task mask for six joints", edit(C, lambda d: d["task"].__setitem__(
        "mask", [row[:6] for row in d["task"]["mask"]])), C, "task.mask[0]", "7 entries"),
    ("controller.yaml not YAML", lambda f: (f / C).write_text("qp: [formulation: \n"), C,
     "<file>", "valid YAML"),
    # hardware.yaml
    ("driver maximum below minimum", put(H, "driver.max_tension_n", 4.0), H,
     "driver.max_tension_n", "more than the minimum tension"),
    ("a second minimum tension in hardware.yaml", put(H, "driver.min_tension_n", 5.0), H,
     "driver.min_tension_n", "hill.f_min_n"),
    ("unknown hardware section", put(H, "drivers", {}), H, "drivers", "one of the known keys"),
    ("potentiometer reader missing", drop(H, "potentiometer_reader"), H,
     "potentiometer_reader", "a section"),
    ("potentiometer for an unknown joint", put(H, "calibration.potentiometers.0.joint",
                                               "shoulder_pitch"), H,
     "calibration.potentiometers[0].joint", "a joint of the robot"),
    ("potentiometer sign 2", put(H, "calibration.potentiometers.1.sign", 2), H,
     "calibration.potentiometers[1].sign", "+1 or -1"),
    ("tendon for an unknown actuator", put(H, "calibration.tendons.0.actuator_id", 99), H,
     "calibration.tendons[0].actuator_id", "an actuator_id of the muscles file"),
    ("load cell scale zero", put(H, "calibration.tendon_defaults.loadcell_counts_per_n", 0.0), H,
     "loadcell_counts_per_n", "> 0.0"),
    # mock_arm.yaml
    ("physics step too long", put(M, "physics.timestep_s", 0.05), M, "physics.timestep_s",
     "<= 0.01"),
    ("unknown integrator", put(M, "physics.integrator", "rk5"), M, "physics.integrator",
     "one of"),
    ("damping for six joints", put(M, "physics.joint_damping_nm_s_rad", [0.5] * 6), M,
     "physics.joint_damping_nm_s_rad", "7 values"),
    ("gearbox efficiency above one", put(M, "actuator.gear_efficiency", 1.5), M,
     "actuator.gear_efficiency", "<= 1.0"),
    ("negative sensor noise", put(M, "sensors.loadcell_noise_counts", -2.0), M,
     "sensors.loadcell_noise_counts", ">= 0.0"),
    ("elbow on an unknown link", put(M, "elbow_link", "forearm"), M, "elbow_link",
     "a URDF link"),
    ("negative seed", put(M, "seed", -1), M, "seed", ">= 0"),
    # experiments.yaml
    ("control rate that does not divide 1 kHz", put(C, "loop.control_rate_hz", 300.0), C,
     "loop.control_rate_hz", "divides the physics rate"),
    ("sensor rate that does not divide 1 kHz", put("hardware.yaml", "rates.sensor_rate_hz", 300.0),
     "hardware.yaml", "rates.sensor_rate_hz", "divides the physics rate"),
    ("late snapshot warning after the fault", put("safety.yaml", "inputs.snapshot.late_s", 0.2),
     "safety.yaml", "inputs.snapshot.late_s", "at most hold_s"),
    ("transport delay of half a step", put(E, "runner.transport_delay_s", 0.0005), E,
     "runner.transport_delay_s", "a whole number of physics steps"),
    ("trajectory start of two numbers", put(E, "trajectory.start_m", [0.36, 0.15]), E,
     "trajectory.start_m", "a list of 3 items"),
    ("no trajectory start poses", put(E, "trajectory.start_poses", []), E,
     "trajectory.start_poses", "at least 1 items"),
    ("push of zero distance", put(E, "disturbance.displacement_m", 0.0), E,
     "disturbance.displacement_m", "> 0.0"),
    # safety.yaml
    ("slack threshold above the minimum tension", put(S, "tendons.slack_tension_n", 6.0), S,
     "tendons.slack_tension_n", "less than the minimum tension"),
    ("tracking tolerance beyond the tension span", put(S, "tendons.tracking_tolerance_n",
                                                       5000.0), S,
     "tendons.tracking_tolerance_n", "less than the driver's tension span"),
    ("joint late bound of zero", put(S, "inputs.joint_state.late_s", 0.0), S,
     "inputs.joint_state.late_s", "> 0.0"),
    ("watchdog hold before its late bound", put(S, "inputs.muscle_commands.hold_s", 0.01), S,
     "inputs.muscle_commands.late_s", "at most hold_s"),
    ("relative tolerance of one", put(S, "consistency.relative_tolerance", 1.0), S,
     "consistency.relative_tolerance", "< 1.0"),
    ("tracking samples as a float", put(S, "tendons.tracking_samples", 2.5), S,
     "tendons.tracking_samples", "an integer"),
    ("safety.yaml missing", lambda f: (f / S).unlink(), S, "<file>", "a readable YAML file"),
    # reliability.yaml
    ("unknown fault in the matrix", put(R, "faults.cases", ["pot_nan", "pot_melt"]), R,
     "faults.cases[1]", "a fault of"),
    ("stuck potentiometer on an unknown joint", put(R, "faults.injection.stuck_joint",
                                                    "shoulder"), R,
     "faults.injection.stuck_joint", "a joint of robot.yaml"),
    ("unknown controller under test", put(R, "faults.controller", "pid"), R,
     "faults.controller", "one of"),
    ("soak hold range reversed", put(R, "soak.hold_s", [5.0, 2.0]), R, "soak.hold_s",
     "[low, high]"),
    ("soak push probability above one", put(R, "soak.push_probability", 1.5), R,
     "soak.push_probability", "<= 1.0"),
    ("soak window longer than a rest", put(R, "soak.window_s", 10.0), R, "soak.window_s",
     "at most rest_s"),
    ("unknown reliability section", put(R, "stress", {}), R, "stress", "one of the known keys"),
    ("soak from a pose robot.yaml lacks", put(R, "soak.start_pose", "no_such_pose"), R,
     "soak.start_pose", "'home' or a named pose"),
]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, config_dir):
    folder = tmp_path_factory.mktemp("pristine") / "robot"
    shutil.copytree(config_dir, folder)
    return folder


def test_the_shipped_folder_loads(pristine, robot):
    load_folder(pristine, robot)


def test_there_are_enough_cases():
    from test_config_errors import CASES as DESCRIPTION_CASES

    assert len(CASES) >= 30 and len(CASES) + len(DESCRIPTION_CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("mutate, file, key, expected", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_file_names_file_key_and_expectation(tmp_path, pristine, robot, mutate, file, key,
                                                 expected):
    folder = tmp_path / "robot"
    shutil.copytree(pristine, folder)
    mutate(folder)
    with pytest.raises(ConfigError) as info:
        load_folder(folder, robot)
    err = info.value
    message = str(err)
    assert Path(err.file).name == file, message
    assert key in err.key, message
    assert expected in err.expected, message
    assert file in message and key in message
