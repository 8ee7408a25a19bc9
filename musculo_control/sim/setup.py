"""One run's setup: the experiments' config (``experiments.yaml``), the ``--set`` overrides,
and :class:`Setup`, everything a run needs, loaded and cross-checked from one config folder.

A robot's ``experiments.yaml`` holds a section for each experiment that applies to it: the
nullspace experiment needs a task with fewer rows than the arm has joints.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.config.folder import load_checked
from musculo_control.config.parser import load_with_overrides, located_in, overrides_by_file, spec
from musculo_control.control.controller_config import ControllerConfig, load_controller_config
from musculo_control.errors import ConfigError, ErrorCollector, InputError, raise_collected
from musculo_control.loop.parts import LOOP_FILES, check_loop_files
from musculo_control.model.checks import check_reachable, check_workspace
from musculo_control.model.robot import Robot
from musculo_control.sim.mock_arm import MockArmConfig
from musculo_control.sim.runner import RunnerConfig
from musculo_control.sim.scoring import Target
from musculo_control.sim.study_config import StudyConfig

FloatArray = npt.NDArray[np.float64]

EXPERIMENT_NAMES = ("disturbance", "trajectory", "nullspace")


@dataclass(frozen=True, kw_only=True)
class DisturbanceConfig:
    """Experiment A: push the elbow with a hand-held gauge, the hand goal fixed."""

    start_pose: str = spec("home", doc="'home' (robot.yaml home_pose_rad) or a named pose")
    settle_s: float = spec(1.0, ge=0.0, doc="hold before the gauge touches [s]")
    axis: tuple[float, ...] = spec(length=3, doc="gauge axis, the push direction, base frame "
                                                 "(the paper's: medial) [-]")
    displacement_m: float = spec(0.04, gt=0.0, doc="how far the tip moves from first contact [m]")
    push_s: float = spec(1.0, gt=0.0, doc="time the tip takes for that distance [s]")
    hold_s: float = spec(6.0, gt=0.0, doc="the tip then stays put this long [s]")
    final_window_s: float = spec(1.0, gt=0.0, doc="final push force = mean over the last [s]")
    contact_gap_tolerance_m: float = spec(
        0.002, gt=0.0, doc="contact is lost when the elbow gets further than this ahead of the "
                           "gauge tip along the push axis [m]")


@dataclass(frozen=True, kw_only=True)
class TrajectoryConfig:
    """Experiment B: one point-to-point move from several start poses."""

    start_m: tuple[float, ...] = spec(length=3, doc="hand start point, base frame [m]")
    end_m: tuple[float, ...] = spec(length=3, doc="hand end point, base frame [m]")
    start_poses: tuple[str, ...] = spec(min_length=1,
                                        doc="named poses with the hand at start_m (A, B, C)")
    settle_s: float = spec(1.0, ge=0.0, doc="hold at the start before moving [s]")
    move_s: float = spec(2.0, gt=0.0, doc="duration of the minimum-jerk move [s]")
    hold_s: float = spec(1.0, ge=0.0, doc="hold at the end, still scored [s]")
    orientation_gain_s2: float = spec(0.0, ge=0.0,
                                      doc="kr during this experiment (paper: feedback off) [1/s^2]")


@dataclass(frozen=True, kw_only=True)
class NullspaceConfig:
    """Experiment C: released from a high-elbow pose, the hand goal at its start."""

    start_pose: str = spec(doc="named pose to release from (the paper's: a high elbow)")
    duration_s: float = spec(10.0, gt=0.0, doc="length of the run [s]")
    window_s: float = spec(0.5, gt=0.0, doc="||a|| at start and end = mean over this window [s]")
    start_skip_s: float = spec(0.1, ge=0.0, doc="the start window begins after this [s]")
    drift_joint: str = spec(doc="the joint whose drift lowers the elbow (plotted; its change is "
                                "reported)")


@dataclass(frozen=True, kw_only=True)
class ExcitationConfig:
    """The tour of hand goals whose recording ``musculo identify`` needs (doc/identify.md):
    from a start pose to each waypoint in turn and back, held at each, through the controller."""

    start_pose: str = spec("home", doc="'home' or a named pose the tour starts and ends at")
    waypoints_m: tuple[tuple[float, ...], ...] = spec(
        min_length=1, doc="hand positions visited in turn, each [x, y, z] from the start pose's "
                          "hand, base frame: poses of different gravity torques [m]")
    move_s: tuple[float, ...] = spec(
        min_length=1, doc="each move's duration, taken in turn (cycled): brisk ones for the lag "
                          "and the damping, slow ones for the dry friction [s]")
    hold_s: float = spec(1.0, ge=0.0, doc="hold at each waypoint (and at the end) [s]")
    settle_s: float = spec(1.0, ge=0.0, doc="hold at the start before the first move [s]")


@dataclass(frozen=True, kw_only=True)
class StartHoldConfig:
    """Before the score starts, the arm must hold its start pose (see sim/scoring.py)."""

    hand_tolerance_m: float = spec(0.02, gt=0.0, doc="largest hand motion from its start [m]")
    elbow_tolerance_m: float = spec(0.02, gt=0.0, doc="largest elbow motion from its start [m]")


@dataclass(frozen=True, kw_only=True)
class GraphRunConfig:
    """How ``musculo experiment --graph`` brings the arm to a start pose over the node graph:
    a minimum-jerk joint path under eq. 16 (joint-stiffness), then a hold until it is there."""

    move_speed_rad_s: float = spec(0.4, gt=0.0, doc="peak joint speed of the move to a start "
                                                    "pose [rad/s]")
    move_min_s: float = spec(2.0, gt=0.0, doc="the move to a start pose lasts at least this [s]")
    reach_tolerance_rad: float = spec(0.05, gt=0.0, doc="the start pose is reached when every "
                                                        "joint is within this of it [rad]")
    reach_speed_rad_s: float = spec(0.05, gt=0.0, doc="... and moves slower than this [rad/s]")
    reach_timeout_s: float = spec(10.0, gt=0.0, doc="longest hold after the move for that [s]")
    reach_gain_per_s: float = spec(1.0, ge=0.0, doc="while holding, the joint goal moves by "
                                                    "this times the joints' error per second: "
                                                    "eq. 16's sag under a model error, taken "
                                                    "out as an operator would [1/s]")
    reach_correction_rad: float = spec(0.4, ge=0.0, doc="largest such shift of the joint goal "
                                                        "from the pose [rad]")
    goal_rate_hz: float = spec(50.0, gt=0.0, doc="goals and gauge poses are sent at this rate "
                                                 "while they change [Hz]")
    settle_tolerance_m: float = spec(0.003, gt=0.0, doc="after the switch to a hand-goal "
                                                        "controller, the run starts once the "
                                                        "hand (the controller's forward "
                                                        "kinematics) is within this of the "
                                                        "run's first goal and the joints move "
                                                        "slower than reach_speed_rad_s [m]")
    settle_timeout_s: float = spec(5.0, ge=0.0, doc="... or after this long, the score's start "
                                                    "hold then judging the start [s]")


@dataclass(frozen=True, kw_only=True)
class ExperimentsConfig:
    """``experiments.yaml``."""

    runner: RunnerConfig = spec(RunnerConfig(), doc="loop rates and transport delay")
    compare_with_paper: bool = spec(
        False, doc="the robot stands in for the paper's arm: reports show the physical robot's "
                   "results (SPEC section 8) beside the simulated ones")
    start_hold: StartHoldConfig = spec(StartHoldConfig(), doc="the start pose must be held "
                                                              "until the score starts")
    disturbance: DisturbanceConfig | None = spec(None, doc="experiment A; absent: not run")
    trajectory: TrajectoryConfig | None = spec(None, doc="experiment B; absent: not run")
    nullspace: NullspaceConfig | None = spec(
        None, doc="experiment C; absent: not run (it needs fewer task rows than joints)")
    graph: GraphRunConfig = spec(GraphRunConfig(), doc="musculo experiment --graph: the move "
                                                       "to a start pose over the node graph")
    excitation: ExcitationConfig | None = spec(
        None, doc="the tour recorded for `musculo identify`; absent: none set up")
    targets: tuple[Target, ...] = spec((), doc="what the results are judged against")
    studies: tuple[StudyConfig, ...] = spec((), doc="named studies of `musculo study`")

    def configured(self) -> tuple[str, ...]:
        """The experiments this robot's file sets up, in EXPERIMENT_NAMES order."""
        return tuple(e for e in EXPERIMENT_NAMES if getattr(self, e) is not None)


#: the files ``--set FILE.KEY=V`` addresses in a simulation
SIMULATION_FILES = ("controller", "experiments", "mock_arm", "robot")
#: and, for the fault matrix and the soak, safety.yaml and reliability.yaml too
RELIABILITY_FILES = (*SIMULATION_FILES, "safety", "reliability")
#: and, for recording a mapping, mapping.yaml
MAPPING_FILES = (*SIMULATION_FILES, "mapping")


@dataclass(frozen=True)
class Overrides:
    """``--set file.key=value`` overrides, split by the file they address (dotted keys)."""

    controller: dict[str, Any] = dataclasses.field(default_factory=dict)
    experiments: dict[str, Any] = dataclasses.field(default_factory=dict)
    mock_arm: dict[str, Any] = dataclasses.field(default_factory=dict)
    robot: dict[str, Any] = dataclasses.field(default_factory=dict)
    safety: dict[str, Any] = dataclasses.field(default_factory=dict)
    reliability: dict[str, Any] = dataclasses.field(default_factory=dict)
    mapping: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def parse(cls, items: list[str] | tuple[str, ...] = (),
              files: tuple[str, ...] = SIMULATION_FILES) -> Overrides:
        """``controller.qp.r=0.01`` -> controller.yaml key qp.r = 0.01 (value parsed as YAML);
        an item addressing a file not in ``files`` is an :class:`InputError`."""
        return cls(**overrides_by_file(items, files))


@dataclass
class Setup:
    """Everything one run needs, loaded from one config folder and its overrides."""

    robot: Robot
    controller_config: ControllerConfig
    experiments: ExperimentsConfig
    mock_config: MockArmConfig
    overrides: Overrides


#: The files of a simulated run (stems): the loop's, the mock arm's and the experiments'.
RUN_FILES = (*LOOP_FILES, "mock_arm", "experiments")


def check_run_files(config_dir: str | Path, overrides: dict[str, dict[str, Any]],
                    found: ErrorCollector, files: tuple[str, ...] = RUN_FILES) -> None:
    """Each of ``files`` (stems of :data:`RUN_FILES`) present in ``config_dir`` against its
    schema, with the dotted-key ``overrides`` of its stem, every error added to ``found``
    (:mod:`musculo_control.config.folder`)."""
    unknown = set(files) - set(RUN_FILES)
    if unknown:
        raise ValueError(f"check_run_files: unknown files {sorted(unknown)}; known: {RUN_FILES}")
    folder = Path(config_dir)
    check_loop_files(folder, overrides, found, tuple(f for f in files if f in LOOP_FILES))
    for stem, schema in (("mock_arm", MockArmConfig), ("experiments", ExperimentsConfig)):
        path = folder / f"{stem}.yaml"
        if stem in files and path.is_file():
            with found.checking():
                load_with_overrides(schema, path, dict(overrides.get(stem, {})))


def load_setup(config_dir: Path, overrides: Overrides) -> Setup:
    """Load and validate the robot, controller, experiments and mock arm files: every error of
    their schemas together (:func:`check_run_files`), with the checks across files."""
    return load_checked(
        lambda found: check_run_files(config_dir, dataclasses.asdict(overrides), found),
        lambda: _build_setup(config_dir, overrides))


def _build_setup(config_dir: Path, overrides: Overrides) -> Setup:
    """The files of :func:`load_setup` loaded, and checked against each other: every error of
    those checks together (with their lines)."""
    robot = Robot(Path(config_dir), overrides.robot)
    found = ErrorCollector()  # a file that fails to load skips only the checks that need it
    ctrl = exp = mock = None
    with found.checking():
        ctrl = load_controller_config(config_dir, overrides.controller)
    with found.checking():
        exp = load_with_overrides(ExperimentsConfig, config_dir / "experiments.yaml",
                                  overrides.experiments)
    with found.checking():
        mock = load_with_overrides(MockArmConfig, config_dir / "mock_arm.yaml",
                                   overrides.mock_arm)
        mock.physics.check_robot(robot, str(config_dir / "mock_arm.yaml"), "physics")
    if exp is not None:
        _check_experiments(robot, ctrl, exp, str(config_dir / "experiments.yaml"), found)
    if ctrl is not None:
        with found.checking():
            check_workspace(robot, ctrl.workspace.center_m, ctrl.workspace.reach_m,
                            str(config_dir / "controller.yaml"))
    sets = dataclasses.asdict(overrides)
    raise_collected(located_in(found.errors, {
        str(config_dir / f"{stem}.yaml"): set(sets.get(stem, {}))
        for stem in ("experiments", "mock_arm", "controller")}))
    assert ctrl is not None and exp is not None and mock is not None  # else an error above
    return Setup(robot, ctrl, exp, mock, overrides)


def _check_experiments(robot: Robot, ctrl: ControllerConfig | None, exp: ExperimentsConfig,
                       file: str, found: ErrorCollector) -> None:
    """experiments.yaml against the robot (and the controller's task, when it loaded)."""
    if exp.disturbance is not None:
        with found.checking():
            check_start_pose(robot, exp.disturbance.start_pose, file, "disturbance.start_pose")
    if exp.nullspace is not None:
        with found.checking():
            check_start_pose(robot, exp.nullspace.start_pose, file, "nullspace.start_pose")
        if exp.nullspace.drift_joint not in robot.arm.joint_names:
            found.add(ConfigError(file, "nullspace.drift_joint",
                                  f"a joint of the robot {list(robot.arm.joint_names)}",
                                  exp.nullspace.drift_joint))
        rows, n = (len(ctrl.task.rows) if ctrl is not None else None), robot.arm.n_joints
        if rows is not None and rows >= n:  # the task's rows known once controller.yaml loads
            found.add(ConfigError(file, "nullspace",
                                  f"no section: the task has {rows} rows for {n} joints, so it "
                                  f"leaves no nullspace for the arm to drift in",
                                  "a nullspace section"))
    if exp.excitation is not None:
        _check_excitation(robot, exp.excitation, file, found)
    if exp.trajectory is not None:
        for i, name in enumerate(exp.trajectory.start_poses):
            with found.checking():
                check_start_pose(robot, name, file, f"trajectory.start_poses[{i}]")
                check_reachable(robot, start_pose(robot, name), exp.trajectory.start_m,
                                exp.trajectory.end_m, file, "trajectory")


def _check_excitation(robot: Robot, cfg: ExcitationConfig, file: str,
                      found: ErrorCollector) -> None:
    """experiments.yaml ``excitation``: its start pose, three numbers a waypoint, and each
    move's straight path reachable from the start pose."""
    with found.checking():
        check_start_pose(robot, cfg.start_pose, file, "excitation.start_pose")
    bad = [i for i, w in enumerate(cfg.waypoints_m) if len(w) != 3]
    for i in bad:
        found.add(ConfigError(file, f"excitation.waypoints_m[{i}]", "[x, y, z] [m]",
                              list(cfg.waypoints_m[i])))
    still = any(m <= 0.0 for m in cfg.move_s)
    if still:
        found.add(ConfigError(file, "excitation.move_s", "durations above 0 [s]",
                              list(cfg.move_s)))
    if bad or still:  # no path to check
        return
    with found.checking():
        q0 = start_pose(robot, cfg.start_pose)
        x0 = robot.arm.hand_pose(q0)[0]
        points = [x0, *(x0 + np.asarray(w) for w in cfg.waypoints_m), x0]
        for i, (a, b) in enumerate(zip(points[:-1], points[1:])):
            check_reachable(robot, q0, a, b, file, f"excitation.waypoints_m (move {i + 1})")


def experiment_config(setup: Setup, experiment: str) -> Any:
    """The section of ``experiment``, or :class:`InputError` saying it is not set up."""
    if experiment not in EXPERIMENT_NAMES:
        raise InputError("experiment", f"one of {list(EXPERIMENT_NAMES)}", experiment)
    cfg = getattr(setup.experiments, experiment)
    if cfg is None:
        file = setup.robot.config_dir / "experiments.yaml"
        rows, n = len(setup.controller_config.task.rows), setup.robot.arm.n_joints
        why = ""
        if experiment == "nullspace" and rows >= n:
            why = (f"; it cannot have one: the task's {rows} rows leave the arm's {n} joints "
                   f"no nullspace to drift in (experiment C needs more joints than task rows)")
        raise InputError(f"experiment '{experiment}'",
                         f"a section '{experiment}' in {file} (this robot runs "
                         f"{list(setup.experiments.configured())}){why}", "none")
    return cfg


def start_pose(robot: Robot, name: str) -> FloatArray:
    """Joint angles of 'home' or of a named pose of robot.yaml's ``poses`` section."""
    if name == "home":
        return robot.home_pose_rad.copy()
    if robot.poses is None:
        raise ConfigError(robot.robot_file, "poses", f"a poses section defining '{name}'")
    return robot.poses.solve_named(name, robot.home_pose_rad).q_rad


def check_start_pose(robot: Robot, name: str, file: str, key: str) -> None:
    """A start pose must be 'home' or a named pose of robot.yaml."""
    names = [p.name for p in robot.poses.config.named] if robot.poses is not None else []
    if name != "home" and name not in names:
        raise ConfigError(file, key, f"'home' or a named pose of {robot.robot_file} 'poses' "
                                     f"{names}", name)
