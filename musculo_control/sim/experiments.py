"""The paper's three experiments on the mock arm (SPEC section 8), ROS-free.

- ``disturbance`` (8 A): the hand goal fixed at the start; a simulated hand-held force gauge,
  push-only along its own axis, moves its tip 4 cm medially against the elbow and holds it.
- ``trajectory`` (8 B): a 20 cm minimum-jerk point-to-point move from start poses A, B, C with
  rising elbow height, orientation feedback off.
- ``nullspace`` (8 C): released from a high-elbow pose with the hand goal at its start.

Each run is set up from one parameter set (``experiments.yaml`` plus the robot's folder, with
command-line overrides) and saves its parameters, initial state and sampled signals. A robot's
``experiments.yaml`` holds a section for each experiment that applies to it: the nullspace
experiment needs a task with fewer rows than the arm has joints.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.control.controller import (
    CONTROLLER_NAMES,
    ControllerConfig,
    load_controller_config,
)
from musculo_control.control.goal import HandGoal
from musculo_control.control.minimum_jerk import minimum_jerk
from musculo_control.errors import ConfigError, InputError
from musculo_control.hardware.mock_arm import MockArm, MockArmConfig
from musculo_control.model.checks import check_reachable, check_workspace
from musculo_control.model.config import load_with_overrides, parse_override, spec
from musculo_control.model.robot import Robot, load_robot
from musculo_control.provenance import provenance
from musculo_control.sim.recorder import Recorder
from musculo_control.sim.runner import LoopState, RunnerConfig
from musculo_control.sim.scoring import (
    Scored,
    Target,
    disturbance_metrics,
    nullspace_metrics,
    trajectory_metrics,
)
from musculo_control.sim.signals import RunSignals
from musculo_control.sim.study import StudyConfig
from musculo_control.sim.supervised_loop import check_start_pose

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
class StartHoldConfig:
    """Before the score starts, the arm must hold its start pose (see sim/scoring.py)."""

    hand_tolerance_m: float = spec(0.02, gt=0.0, doc="largest hand motion from its start [m]")
    elbow_tolerance_m: float = spec(0.02, gt=0.0, doc="largest elbow motion from its start [m]")


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
    targets: tuple[Target, ...] = spec((), doc="what the results are judged against")
    studies: tuple[StudyConfig, ...] = spec((), doc="named studies of `musculo study`")

    def configured(self) -> tuple[str, ...]:
        """The experiments this robot's file sets up, in EXPERIMENT_NAMES order."""
        return tuple(e for e in EXPERIMENT_NAMES if getattr(self, e) is not None)


@dataclass(frozen=True)
class Overrides:
    """``--set file.key=value`` overrides, split by the file they address."""

    controller: dict[str, Any]
    experiments: dict[str, Any]
    mock_arm: dict[str, Any]
    robot: dict[str, Any] = dataclasses.field(default_factory=dict)

    PREFIXES = ("controller", "experiments", "mock_arm", "robot")

    @classmethod
    def parse(cls, items: list[str] | tuple[str, ...] = ()) -> Overrides:
        """``controller.qp.r=0.01`` -> controller.yaml key qp.r = 0.01 (value parsed as YAML)."""
        out: dict[str, dict[str, Any]] = {p: {} for p in cls.PREFIXES}
        for item in items:
            key, value = parse_override(item)
            prefix, _, rest = key.partition(".")
            if prefix not in out:
                raise InputError("--set", f"a key starting with one of {list(cls.PREFIXES)}",
                                 item)
            out[prefix][rest] = value
        return cls(out["controller"], out["experiments"], out["mock_arm"], out["robot"])


@dataclass
class Setup:
    """Everything one run needs, loaded from one config folder and its overrides."""

    robot: Robot
    controller_config: ControllerConfig
    experiments: ExperimentsConfig
    mock_config: MockArmConfig
    overrides: Overrides


def load_setup(config_dir: Path, overrides: Overrides) -> Setup:
    """Load and validate the robot, controller, experiments and mock arm files."""
    robot = load_robot(config_dir, overrides.robot)
    ctrl = load_controller_config(config_dir, overrides.controller)
    exp = load_with_overrides(ExperimentsConfig, config_dir / "experiments.yaml",
                              overrides.experiments)
    mock = load_with_overrides(MockArmConfig, config_dir / "mock_arm.yaml", overrides.mock_arm)
    mock.physics.check_joints(robot.arm.n_joints, str(config_dir / "mock_arm.yaml"), "physics")
    file = str(config_dir / "experiments.yaml")
    if exp.disturbance is not None:
        check_start_pose(robot, exp.disturbance.start_pose, file, "disturbance.start_pose")
    if exp.nullspace is not None:
        check_start_pose(robot, exp.nullspace.start_pose, file, "nullspace.start_pose")
        if exp.nullspace.drift_joint not in robot.arm.joint_names:
            raise ConfigError(file, "nullspace.drift_joint",
                              f"a joint of the robot {list(robot.arm.joint_names)}",
                              exp.nullspace.drift_joint)
        rows, n = len(ctrl.task.rows), robot.arm.n_joints
        if rows >= n:
            raise ConfigError(file, "nullspace",
                              f"no section: the task has {rows} rows for {n} joints, so it leaves "
                              f"no nullspace for the arm to drift in", "a nullspace section")
    if exp.trajectory is not None:
        for i, name in enumerate(exp.trajectory.start_poses):
            check_start_pose(robot, name, file, f"trajectory.start_poses[{i}]")
            check_reachable(robot, start_pose(robot, name), exp.trajectory.start_m,
                            exp.trajectory.end_m, file, "trajectory")
    check_workspace(robot, ctrl.workspace, str(config_dir / "controller.yaml"))
    return Setup(robot, ctrl, exp, mock, overrides)


def experiment_config(setup: Setup, experiment: str) -> Any:
    """The section of ``experiment``, or :class:`InputError` saying it is not set up."""
    if experiment not in EXPERIMENT_NAMES:
        raise InputError("experiment", f"one of {list(EXPERIMENT_NAMES)}", experiment)
    cfg = getattr(setup.experiments, experiment)
    if cfg is None:
        file = setup.robot.config_dir / "experiments.yaml"
        raise InputError(f"experiment '{experiment}'",
                         f"a section '{experiment}' in {file} (this robot runs "
                         f"{list(setup.experiments.configured())})", "none")
    return cfg


@dataclass
class RunResult:
    """One experiment run with one controller."""

    experiment: str
    controller: str
    variant: str  # e.g. the start pose of a trajectory run; '' otherwise
    metrics: dict[str, Any]
    recorder: Recorder
    run_info: dict[str, Any]
    wall_s: float
    simulated_s: float
    scored: Scored  # what the metrics read and the figures draw

    @property
    def label(self) -> str:
        return f"{self.controller} {self.variant}".strip()

    @property
    def realtime_factor(self) -> float:
        return self.simulated_s / max(self.wall_s, 1e-9)


# -- building a loop -----------------------------------------------------------------------------
class Bench:
    """One closed loop (the rig's stages, one controller) and its recorder, for one run."""

    def __init__(self, setup: Setup, controller_name: str,
                 controller_config: ControllerConfig | None = None) -> None:
        if controller_name not in CONTROLLER_NAMES:
            raise InputError("controller", f"one of {list(CONTROLLER_NAMES)}", controller_name)
        from musculo_control.sim.rig import Rig

        self.rig = rig = Rig(setup, controller_name, controller_config)
        robot = setup.robot
        self.robot = robot
        self.controller = rig.controller
        self.mock = rig.mock
        self.loop = rig.loop()
        self.signals = RunSignals(robot, rig.parts.controller.loop.control_rate_hz)
        self.recorder = Recorder(self.signals.labels)
        self._goal_now = HandGoal.hold(np.zeros(3))  # set by run() before each tick
        #: joint-space baselines (eq. 16-17) follow this instead of the hand goal
        self.joint_target_at: Callable[[float], FloatArray] | None = None

    def hold_joints(self, q_rad: FloatArray) -> None:
        """Give a joint-space baseline the target ``q_rad`` (no effect on the OSC)."""
        self.joint_target_at = lambda t: q_rad

    def record(self, state: LoopState) -> None:
        self.recorder.add(state.t_s, self.signals.sample(state, self.mock, self._goal_now))

    def run(self, duration_s: float, goal_at: Callable[[float], HandGoal], *,
            hook: Callable[[float, MockArm], None] | None = None, label: str = "") -> float:
        set_target = getattr(self.controller, "set_joint_target", None)

        def goal_fn(t: float) -> HandGoal:
            self._goal_now = goal_at(t)
            if set_target is not None and self.joint_target_at is not None:
                set_target(self.joint_target_at(t))
            return self._goal_now

        return self.loop.run(duration_s, goal_fn, hook=hook, on_control=self.record, label=label)


def start_pose(robot: Robot, name: str) -> FloatArray:
    """Joint angles of 'home' or of a named pose of robot.yaml's ``poses`` section."""
    if name == "home":
        return robot.home_pose_rad.copy()
    if robot.poses is None:
        raise ConfigError(robot.robot_file, "poses", f"a poses section defining '{name}'")
    return robot.poses.solve_named(name, robot.home_pose_rad).q_rad


def joint_path(robot: Robot, q0: FloatArray, start: FloatArray, end: FloatArray,
               move_s: float, t_move_s: float, hold_elbow: bool = True,
               samples: int = 41) -> Callable[[float], FloatArray]:
    """Joint targets along the minimum-jerk hand path, for the joint-space baselines.

    Each sample is solved by the pose solver from the previous one, keeping the start pose's
    elbow height if ``hold_elbow`` (an arm whose poses are their hand positions has none to
    keep); the baselines have no hand task, so they need the path in joint space.
    """
    if robot.poses is None:
        raise ConfigError(robot.robot_file, "poses", "a poses section (the baselines need IK)")
    solver = robot.poses
    elbow_z = solver.targets_at(q0)[1] if hold_elbow else None
    times = np.linspace(0.0, move_s, samples)
    path = [q0]
    for t in times[1:]:
        hand = minimum_jerk(start, end, move_s, t)[0]
        path.append(solver.solve(path[-1], hand, elbow_z).q_rad)
    qs = np.array(path)

    def at(t: float) -> FloatArray:
        s = t - t_move_s
        return np.array([np.interp(s, times, qs[:, j]) for j in range(qs.shape[1])])

    return at


def _run_info(setup: Setup, bench: Bench, experiment: str, controller: str, q0: FloatArray,
              started_unix_ns: int, extra: dict[str, Any]) -> dict[str, Any]:
    """run.yaml: parameters, initial state, what the seed drew, provenance (metrics follow)."""
    return {
        "experiment": experiment,
        "controller": controller,
        "config_dir": str(setup.robot.config_dir),
        "overrides": {"controller": setup.overrides.controller,
                      "experiments": setup.overrides.experiments,
                      "mock_arm": setup.overrides.mock_arm, "robot": setup.overrides.robot},
        "parameters": {"controller": dataclasses.asdict(setup.controller_config),
                       "experiments": dataclasses.asdict(setup.experiments),
                       "mock_arm": dataclasses.asdict(setup.mock_config)},
        "initial_state": {"q_rad": q0, "qd_rad_s": np.zeros_like(q0)},
        "random": drawn_record(setup, bench.mock),
        "provenance": provenance(),
        "log": {"stamp_origin_unix_ns": started_unix_ns,
                "stamps": "bag stamps = stamp_origin_unix_ns + simulated time"},
        **extra,
    }


def drawn_record(setup: Setup, mock: MockArm) -> dict[str, Any]:
    """What ``mock_arm.seed`` drew for this run, by name (for run.yaml)."""
    robot = setup.robot
    drawn = mock.drawn()
    error: Any = drawn["model_error"]
    record: dict[str, Any] = {}
    for f in dataclasses.fields(error):  # every part of the model error, by name
        value = getattr(error, f.name)
        if f.name == "mass_scale":
            record["link_mass_scale"] = {k: round(float(v), 6) for k, v in value.items()}
        elif f.name == "via_point_offset_m":
            record["via_point_offset_mm"] = _per_muscle(robot, 1e3 * np.asarray(value))
        else:
            record[f.name] = np.round(np.asarray(value, dtype=float), 9).tolist()
    sensors = setup.mock_config.sensors
    pot = np.asarray(drawn["potentiometer_offset_error_counts"])
    return {
        "mock_arm.seed": drawn["seed"],
        "model_error_enabled": setup.mock_config.model_error.enabled,
        **record,
        "potentiometer_offset_error_counts": dict(zip(robot.arm.joint_names,
                                                      np.round(pot, 4).tolist())),
        "sensor_noise": {
            "potentiometer_std_counts": sensors.potentiometer_noise_counts,
            "encoder_std_counts": sensors.encoder_noise_counts,
            "loadcell_std_counts": sensors.loadcell_noise_counts,
            "drawn": "per sample, Gaussian, from the seed's third stream "
                     "(numpy SeedSequence(seed).spawn(3)[2])",
        },
    }


def _per_muscle(robot: Robot, offsets_mm: FloatArray) -> Any:
    """Via-point offsets by muscle name (in the muscles file's point order), or the plain list
    when the counts do not match that order."""
    muscles = robot.muscles_config.muscles
    if any(m.path is None for m in muscles):  # an MJCF's sites: no via-point list per muscle
        return np.round(offsets_mm, 4).tolist()
    sizes = [len(m.path) for m in muscles]
    if offsets_mm.shape[0] != sum(sizes):
        return np.round(offsets_mm, 4).tolist()
    out, k = {}, 0
    for muscle, n in zip(muscles, sizes):
        out[muscle.name] = np.round(offsets_mm[k:k + n], 4).tolist()
        k += n
    return out


# -- the experiments -----------------------------------------------------------------------------
def _start_holding(setup: Setup, controller: str,
                   pose: str) -> tuple[Bench, FloatArray, FloatArray, HandGoal]:
    """A loop at rest in ``pose``, the hand goal (and a baseline's joint target) held there."""
    bench = Bench(setup, controller)
    q0 = start_pose(setup.robot, pose)
    x0, R0 = setup.robot.arm.hand_pose(q0)
    goal = HandGoal.hold(x0, R0)
    bench.hold_joints(q0)
    bench.loop.reset(q0, goal)
    return bench, q0, x0, goal


def run_disturbance(setup: Setup, controller: str, label: str = "") -> RunResult:
    """Experiment A (SPEC section 8 A), scored from the first sample with the gauge pushing."""
    cfg: DisturbanceConfig = experiment_config(setup, "disturbance")
    hold = setup.experiments.start_hold
    bench, q0, x0, goal = _start_holding(setup, controller, cfg.start_pose)
    axis = np.asarray(cfg.axis) / np.linalg.norm(cfg.axis)
    radius = setup.mock_config.gauge.contact_radius_m
    contact: dict[str, FloatArray] = {}
    t_touch = cfg.settle_s

    def tip_progress(t: FloatArray | float) -> Any:
        """How far the tip has moved along the axis since it was set against the elbow [m]."""
        return np.clip((np.asarray(t) - t_touch) / cfg.push_s, 0.0, 1.0) * cfg.displacement_m

    def gauge(t: float, mock: MockArm) -> None:
        if t < t_touch:
            return
        if "tip0" not in contact:  # the tip set against the arm's surface
            contact["tip0"] = mock.elbow_position_m - radius * axis
            contact["elbow0"] = mock.elbow_position_m
        mock.set_gauge(contact["tip0"] + float(tip_progress(t)) * axis, axis)

    duration = cfg.settle_s + cfg.push_s + cfg.hold_s
    started = time.time_ns()
    wall = bench.run(duration, lambda t: goal, hook=gauge, label=label)
    rec = bench.recorder
    t = rec.time_s
    elbow = rec.array("elbow_m")
    elbow0 = contact.get("elbow0", elbow[0])
    scored = Scored(t, {
        "hand_deviation_m": np.linalg.norm(rec.array("hand_m") - x0, axis=1),
        "gauge_force_n": rec.array("gauge_force_n")[:, 0],
        "elbow_progress_m": (elbow - elbow0) @ axis,
        "tip_progress_m": tip_progress(t),
        "elbow_motion_m": np.linalg.norm(elbow - elbow[0], axis=1),
    }, {"touch_s": t_touch, "final_from_s": duration - cfg.final_window_s, "end_s": duration})
    metrics = disturbance_metrics(
        scored, hand_tolerance_m=hold.hand_tolerance_m,
        elbow_tolerance_m=hold.elbow_tolerance_m,
        contact_gap_tolerance_m=cfg.contact_gap_tolerance_m, unsafe_ticks=len(bench.loop.faults))
    info = _run_info(setup, bench, "disturbance", controller, q0, started,
                     {"hand_goal_m": x0, "metrics": metrics})
    return RunResult("disturbance", controller, "", metrics, rec, info, wall, duration, scored)


def run_trajectory(setup: Setup, controller: str, pose_name: str, label: str = "") -> RunResult:
    """Experiment B (SPEC section 8 B) from one start pose, orientation feedback off; scored
    from the start of the move, the start hold before it checked."""
    cfg: TrajectoryConfig = experiment_config(setup, "trajectory")
    hold = setup.experiments.start_hold
    ctrl_cfg = dataclasses.replace(
        setup.controller_config,
        gains=dataclasses.replace(setup.controller_config.gains, kr_s2=cfg.orientation_gain_s2))
    bench = Bench(setup, controller, ctrl_cfg)
    q0 = start_pose(setup.robot, pose_name)
    x0, R0 = setup.robot.arm.hand_pose(q0)
    start, end = np.asarray(cfg.start_m), np.asarray(cfg.end_m)
    if np.linalg.norm(x0 - start) > 1e-3:
        raise ConfigError(setup.robot.robot_file, f"poses.named[{pose_name}]",
                          f"the hand at the trajectory start {start.tolist()} m",
                          np.round(x0, 4).tolist())
    t_move = cfg.settle_s

    def goal_at(t: float) -> HandGoal:
        pos, vel, acc = minimum_jerk(start, end, cfg.move_s, t - t_move)
        return HandGoal(pos, vel, acc, R0)

    if hasattr(bench.controller, "set_joint_target"):
        named = setup.robot.poses.named(pose_name) if setup.robot.poses is not None else None
        bench.joint_target_at = joint_path(setup.robot, q0, start, end, cfg.move_s, t_move,
                                           hold_elbow=named is not None
                                           and named.elbow_z_m is not None)
    bench.loop.reset(q0, goal_at(0.0))
    duration = cfg.settle_s + cfg.move_s + cfg.hold_s
    started = time.time_ns()
    wall = bench.run(duration, goal_at, label=label)
    rec = bench.recorder
    elbow = rec.array("elbow_m")
    up = setup.robot.arm.up
    direction = (end - start) / np.linalg.norm(end - start)
    scored = Scored(rec.time_s, {
        "tracking_error_m": rec.array("hand_error_m")[:, 0],
        "elbow_height_m": elbow @ up,  # against gravity
        "elbow_motion_m": np.linalg.norm(elbow - elbow[0], axis=1),
        # for the path panel: along the move from its start, and height [m]
        "hand_along_m": (rec.array("hand_m") - start) @ direction,
        "hand_height_m": rec.array("hand_m") @ up,
        "goal_along_m": (rec.array("hand_goal_m") - start) @ direction,
        "goal_height_m": rec.array("hand_goal_m") @ up,
    }, {"move_s": t_move, "end_s": duration})
    metrics = trajectory_metrics(scored, hand_tolerance_m=hold.hand_tolerance_m,
                                 elbow_tolerance_m=hold.elbow_tolerance_m,
                                 unsafe_ticks=len(bench.loop.faults))
    info = _run_info(setup, bench, "trajectory", controller, q0, started,
                     {"start_pose": pose_name, "metrics": metrics})
    return RunResult("trajectory", controller, pose_name, metrics, rec, info, wall, duration,
                     scored)


def run_nullspace(setup: Setup, controller: str, label: str = "") -> RunResult:
    """Experiment C (SPEC section 8 C), scored from the release (t = 0)."""
    cfg: NullspaceConfig = experiment_config(setup, "nullspace")
    bench, q0, x0, goal = _start_holding(setup, controller, cfg.start_pose)
    started = time.time_ns()
    wall = bench.run(cfg.duration_s, lambda t: goal, label=label)
    rec = bench.recorder
    j = setup.robot.arm.joint_names.index(cfg.drift_joint)
    scored = Scored(rec.time_s, {
        "activation_norm": rec.array("activation_norm")[:, 0],
        "hand_deviation_m": np.linalg.norm(rec.array("hand_m") - x0, axis=1),
        "elbow_height_m": rec.array("elbow_m") @ setup.robot.arm.up,  # against gravity
        "drift_joint_rad": rec.array("q_rad")[:, j],
    }, {"start_window_s": cfg.start_skip_s, "end_window_s": cfg.duration_s - cfg.window_s,
        "window_s": cfg.window_s, "end_s": cfg.duration_s})
    metrics = nullspace_metrics(scored, unsafe_ticks=len(bench.loop.faults))
    info = _run_info(setup, bench, "nullspace", controller, q0, started,
                     {"hand_goal_m": x0, "drift_joint": cfg.drift_joint, "metrics": metrics})
    return RunResult("nullspace", controller, "", metrics, rec, info, wall, cfg.duration_s,
                     scored)


def run_experiment(setup: Setup, experiment: str, controller: str,
                   progress: bool = True) -> list[RunResult]:
    """One experiment with one controller (several runs for ``trajectory``: one per pose)."""
    experiment_config(setup, experiment)  # the experiment applies to this robot
    label = f"{experiment}/{controller}" if progress else ""
    if experiment == "disturbance":
        return [run_disturbance(setup, controller, label)]
    if experiment == "nullspace":
        return [run_nullspace(setup, controller, label)]
    return [run_trajectory(setup, controller, pose, f"{label}/{pose}" if label else "")
            for pose in experiment_config(setup, "trajectory").start_poses]

