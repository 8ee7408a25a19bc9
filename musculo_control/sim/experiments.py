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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.control.controller import (
    CONTROLLER_NAMES,
    ControllerConfig,
    load_controller_config,
    make_controller,
)
from musculo_control.control.goal import HandGoal
from musculo_control.errors import ConfigError, InputError
from musculo_control.estimation.snapshot import DynamicsEstimator
from musculo_control.hardware.calibration import load_calibration
from musculo_control.hardware.drivers import load_drivers
from musculo_control.hardware.mock_arm import MockArm, MockArmConfig
from musculo_control.model.checks import check_reachable, check_workspace
from musculo_control.model.config import load_with_overrides, spec
from musculo_control.model.robot import Robot, load_robot
from musculo_control.sim.recorder import Recorder
from musculo_control.sim.runner import ClosedLoop, LoopState, RunnerConfig

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
    watch_joint: str = spec(doc="the joint whose drift the report shows (the paper's: the "
                                "shoulder roll that lowers the elbow)")
    duration_s: float = spec(10.0, gt=0.0, doc="length of the run [s]")
    window_s: float = spec(0.5, gt=0.0, doc="||a|| at start and end = mean over this window [s]")
    start_skip_s: float = spec(0.1, ge=0.0, doc="the start window begins after this [s]")


@dataclass(frozen=True, kw_only=True)
class ExperimentsConfig:
    """``experiments.yaml``."""

    runner: RunnerConfig = spec(RunnerConfig(), doc="loop rates and transport delay")
    seed: int = spec(0, ge=0, doc="seed of the mock arm's model error and sensor noise")
    compare_with_paper: bool = spec(
        False, doc="the robot stands in for the paper's arm: reports show the physical robot's "
                   "results (SPEC section 8) beside the simulated ones")
    disturbance: DisturbanceConfig | None = spec(None, doc="experiment A; absent: not run")
    trajectory: TrajectoryConfig | None = spec(None, doc="experiment B; absent: not run")
    nullspace: NullspaceConfig | None = spec(
        None, doc="experiment C; absent: not run (it needs fewer task rows than joints)")

    def configured(self) -> tuple[str, ...]:
        """The experiments this robot's file sets up, in EXPERIMENT_NAMES order."""
        return tuple(e for e in EXPERIMENT_NAMES if getattr(self, e) is not None)


@dataclass(frozen=True)
class Overrides:
    """``--set file.key=value`` overrides, split by the file they address."""

    controller: dict[str, Any]
    experiments: dict[str, Any]
    mock_arm: dict[str, Any]

    PREFIXES = ("controller", "experiments", "mock_arm")

    @classmethod
    def parse(cls, items: list[str] | tuple[str, ...] = ()) -> Overrides:
        """``controller.qp.r=0.01`` -> controller.yaml key qp.r = 0.01 (value parsed as YAML)."""
        import yaml

        out: dict[str, dict[str, Any]] = {p: {} for p in cls.PREFIXES}
        for item in items:
            key, sep, text = item.partition("=")
            prefix, dot, rest = key.strip().partition(".")
            if not sep or not dot or not rest:
                raise InputError("--set", "FILE.KEY=VALUE, e.g. controller.qp.r=0.01", item)
            if prefix not in out:
                raise InputError("--set", f"a key starting with one of {list(cls.PREFIXES)}",
                                 item)
            out[prefix][rest] = yaml.safe_load(text)
        return cls(out["controller"], out["experiments"], out["mock_arm"])


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
    robot = load_robot(config_dir)
    ctrl = load_controller_config(config_dir, overrides.controller)
    exp = load_with_overrides(ExperimentsConfig, config_dir / "experiments.yaml",
                              overrides.experiments)
    mock = load_with_overrides(MockArmConfig, config_dir / "mock_arm.yaml", overrides.mock_arm)
    mock.physics.check_joints(robot.arm.n_joints, str(config_dir / "mock_arm.yaml"), "physics")
    from musculo_control.sim.supervised_loop import check_start_pose

    file = str(config_dir / "experiments.yaml")
    if exp.disturbance is not None:
        check_start_pose(robot, exp.disturbance.start_pose, file, "disturbance.start_pose")
    if exp.nullspace is not None:
        check_start_pose(robot, exp.nullspace.start_pose, file, "nullspace.start_pose")
        if exp.nullspace.watch_joint not in robot.arm.joint_names:
            raise ConfigError(file, "nullspace.watch_joint",
                              f"a joint of the robot {list(robot.arm.joint_names)}",
                              exp.nullspace.watch_joint)
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

    @property
    def realtime_factor(self) -> float:
        return self.simulated_s / max(self.wall_s, 1e-9)


# -- building a loop -----------------------------------------------------------------------------
class Bench:
    """One closed loop (mock arm, drivers, estimator, controller) for one run."""

    def __init__(self, setup: Setup, controller_name: str,
                 controller_config: ControllerConfig | None = None) -> None:
        if controller_name not in CONTROLLER_NAMES:
            raise InputError("controller", f"one of {list(CONTROLLER_NAMES)}", controller_name)
        robot = setup.robot
        cfg = controller_config or setup.controller_config
        self.robot = robot
        self.controller = make_controller(controller_name, robot, cfg)
        drivers = load_drivers(robot)
        calibration = load_calibration(robot, robot.config_dir / "hardware.yaml")
        self.mock = MockArm(robot, calibration, setup.mock_config, setup.experiments.seed,
                            str(robot.config_dir / "mock_arm.yaml"))
        self.estimator = DynamicsEstimator(robot, cfg.task)
        self.loop = ClosedLoop(robot, self.controller, self.mock, drivers.potentiometers,
                               drivers.tendons, self.estimator, setup.experiments.runner,
                               str(robot.config_dir / "experiments.yaml"))
        n = robot.arm.n_joints
        mc = len(robot.controlled_idx)
        joints = robot.arm.joint_names
        muscles = robot.muscle_names
        controlled = tuple(muscles[i] for i in robot.controlled_idx)
        self.recorder = Recorder({
            "q_rad": joints, "qd_rad_s": joints, "q_measured_rad": joints,
            "hand_m": ("x", "y", "z"), "hand_goal_m": ("x", "y", "z"),
            "hand_error_m": ("norm",), "elbow_m": ("x", "y", "z"),
            "activation": controlled, "activation_norm": ("norm",),
            "tension_command_n": muscles, "tension_n": muscles,
            "tau_null_nm": joints, "gauge_force_n": ("value",),
            "controller": ("ok", "solve_time_ms", "iterations", "snapshot_age_ms"),
        })
        self._n, self._mc = n, mc
        self._goal_now = HandGoal.hold(np.zeros(3))  # set by run() before each tick
        #: joint-space baselines (eq. 16-17) follow this instead of the hand goal
        self.joint_target_at: Callable[[float], FloatArray] | None = None

    def hold_joints(self, q_rad: FloatArray) -> None:
        """Give a joint-space baseline the target ``q_rad`` (no effect on the OSC)."""
        self.joint_target_at = lambda t: q_rad

    def hand_pose_at(self, q: FloatArray) -> tuple[FloatArray, FloatArray]:
        data = self.robot.new_data()
        pin.framesForwardKinematics(self.robot.arm.model, data, q)
        oMf = data.oMf[self.robot.arm.task_frame_id]
        return oMf.translation.copy(), oMf.rotation.copy()

    def record(self, state: LoopState) -> None:
        out = state.output
        mock = self.mock
        goal = self._goal_now
        hand = mock.hand_position_m
        a = out.activations
        self.recorder.add(state.t_s, {
            "q_rad": mock.q_rad, "qd_rad_s": mock.qd_rad_s,
            "q_measured_rad": state.joints.q_rad if state.joints is not None else np.full(
                self._n, np.nan),
            "hand_m": hand, "hand_goal_m": goal.position_m,
            "hand_error_m": np.linalg.norm(hand - goal.position_m),
            "elbow_m": mock.elbow_position_m,
            "activation": a, "activation_norm": np.linalg.norm(a),
            "tension_command_n": out.tension_n, "tension_n": mock.tendon_tension_n,
            "tau_null_nm": out.tau_null_nm, "gauge_force_n": mock.gauge_force_n,
            "controller": (float(out.ok), out.solve_time_s * 1e3, out.iterations,
                           out.snapshot_age_s * 1e3),
        })

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


def minimum_jerk(start: FloatArray, end: FloatArray, duration_s: float,
                 t_s: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Position, velocity and acceleration of a minimum-jerk move at ``t_s`` (clamped)."""
    s = min(max(t_s / duration_s, 0.0), 1.0)
    d = end - start
    pos = start + d * (10 * s**3 - 15 * s**4 + 6 * s**5)
    vel = d * (30 * s**2 - 60 * s**3 + 30 * s**4) / duration_s
    acc = d * (60 * s - 180 * s**2 + 120 * s**3) / duration_s**2
    return pos, vel, acc


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


def _window_mean(t: FloatArray, v: FloatArray, t0: float, t1: float) -> float:
    sel = (t >= t0) & (t <= t1)
    return float(np.mean(v[sel])) if np.any(sel) else float("nan")


def _run_info(setup: Setup, experiment: str, controller: str, q0: FloatArray,
              extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "experiment": experiment,
        "controller": controller,
        "config_dir": str(setup.robot.config_dir),
        "overrides": {"controller": setup.overrides.controller,
                      "experiments": setup.overrides.experiments,
                      "mock_arm": setup.overrides.mock_arm},
        "parameters": {"controller": dataclasses.asdict(setup.controller_config),
                       "experiments": dataclasses.asdict(setup.experiments),
                       "mock_arm": dataclasses.asdict(setup.mock_config)},
        "initial_state": {"q_rad": q0, "qd_rad_s": np.zeros_like(q0)},
        **extra,
    }


# -- the experiments -----------------------------------------------------------------------------
def _start_holding(setup: Setup, controller: str,
                   pose: str) -> tuple[Bench, FloatArray, FloatArray, HandGoal]:
    """A loop at rest in ``pose``, the hand goal (and a baseline's joint target) held there."""
    bench = Bench(setup, controller)
    q0 = start_pose(setup.robot, pose)
    x0, R0 = bench.hand_pose_at(q0)
    goal = HandGoal.hold(x0, R0)
    bench.hold_joints(q0)
    bench.loop.reset(q0, goal)
    return bench, q0, x0, goal


def run_disturbance(setup: Setup, controller: str, label: str = "") -> RunResult:
    """Experiment A (SPEC section 8 A)."""
    cfg: DisturbanceConfig = experiment_config(setup, "disturbance")
    bench, q0, x0, goal = _start_holding(setup, controller, cfg.start_pose)
    axis = np.asarray(cfg.axis) / np.linalg.norm(cfg.axis)
    radius = setup.mock_config.gauge.contact_radius_m
    contact: dict[str, FloatArray] = {}
    t_touch = cfg.settle_s

    def gauge(t: float, mock: MockArm) -> None:
        if t < t_touch:
            return
        if "tip0" not in contact:  # first contact: the tip just touches the arm's surface
            contact["tip0"] = mock.elbow_position_m - radius * axis
            contact["elbow0"] = mock.elbow_position_m
        s = min((t - t_touch) / cfg.push_s, 1.0)
        mock.set_gauge(contact["tip0"] + s * cfg.displacement_m * axis, axis)

    duration = cfg.settle_s + cfg.push_s + cfg.hold_s
    wall = bench.run(duration, lambda t: goal, hook=gauge, label=label)
    rec = bench.recorder
    t = rec.time_s
    after = t >= t_touch
    hand_dev = np.linalg.norm(rec.array("hand_m") - x0, axis=1)
    force = rec.array("gauge_force_n")[:, 0]
    elbow = rec.array("elbow_m")
    elbow0 = contact.get("elbow0", elbow[0])
    metrics = {
        "max_hand_deviation_m": float(hand_dev[after].max()),
        "peak_push_force_N": float(force.max()),
        "final_push_force_N": _window_mean(t, force, duration - cfg.final_window_s, duration),
        "elbow_displacement_m": float((elbow[-1] - elbow0) @ axis),
        "unsafe_ticks": len(bench.loop.faults),
    }
    info = _run_info(setup, "disturbance", controller, q0,
                     {"hand_goal_m": x0, "metrics": metrics})
    return RunResult("disturbance", controller, "", metrics, rec, info, wall, duration)


def run_trajectory(setup: Setup, controller: str, pose_name: str, label: str = "") -> RunResult:
    """Experiment B (SPEC section 8 B) from one start pose, orientation feedback off."""
    cfg: TrajectoryConfig = experiment_config(setup, "trajectory")
    ctrl_cfg = dataclasses.replace(
        setup.controller_config,
        gains=dataclasses.replace(setup.controller_config.gains, kr_s2=cfg.orientation_gain_s2))
    bench = Bench(setup, controller, ctrl_cfg)
    q0 = start_pose(setup.robot, pose_name)
    x0, R0 = bench.hand_pose_at(q0)
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
    wall = bench.run(duration, goal_at, label=label)
    rec = bench.recorder
    t = rec.time_s
    err = rec.array("hand_error_m")[:, 0]
    scored = t >= t_move
    metrics = {
        "mean_tracking_error_m": float(err[scored].mean()),
        "max_tracking_error_m": float(err[scored].max()),
        "final_error_m": float(err[-1]),
        "elbow_height_m": float(rec.array("elbow_m")[0] @ setup.robot.arm.up),
        "unsafe_ticks": len(bench.loop.faults),
    }
    info = _run_info(setup, "trajectory", controller, q0,
                     {"start_pose": pose_name, "metrics": metrics})
    return RunResult("trajectory", controller, pose_name, metrics, rec, info, wall, duration)


def run_nullspace(setup: Setup, controller: str, label: str = "") -> RunResult:
    """Experiment C (SPEC section 8 C)."""
    cfg: NullspaceConfig = experiment_config(setup, "nullspace")
    bench, q0, x0, goal = _start_holding(setup, controller, cfg.start_pose)
    wall = bench.run(cfg.duration_s, lambda t: goal, label=label)
    rec = bench.recorder
    t = rec.time_s
    a = rec.array("activation_norm")[:, 0]
    hand_dev = np.linalg.norm(rec.array("hand_m") - x0, axis=1)
    height = rec.array("elbow_m") @ setup.robot.arm.up  # against gravity
    watched = setup.robot.arm.joint_names.index(cfg.watch_joint)
    q = rec.array("q_rad")
    start = _window_mean(t, a, cfg.start_skip_s, cfg.start_skip_s + cfg.window_s)
    end = _window_mean(t, a, cfg.duration_s - cfg.window_s, cfg.duration_s)
    metrics = {
        "activation_norm_start": start,
        "activation_norm_end": end,
        "activation_drop_fraction": float(1.0 - end / start) if start > 0 else float("nan"),
        "hand_drift_m": float(hand_dev.max()),
        "elbow_drop_m": float(height[0] - height[-1]),
        "watched_joint_change_rad": float(q[-1, watched] - q[0, watched]),
        "unsafe_ticks": len(bench.loop.faults),
    }
    info = _run_info(setup, "nullspace", controller, q0, {"hand_goal_m": x0, "metrics": metrics})
    return RunResult("nullspace", controller, "", metrics, rec, info, wall, cfg.duration_s)


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

