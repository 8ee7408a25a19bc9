"""The paper's three experiments on the mock arm (SPEC section 8), ROS-free.

- ``disturbance`` (8 A): the hand goal fixed at the start; a simulated hand-held force gauge,
  push-only along its own axis, moves its tip 4 cm medially against the elbow and holds it.
- ``trajectory`` (8 B): a 20 cm minimum-jerk point-to-point move from start poses A, B, C with
  rising elbow height, orientation feedback off.
- ``nullspace`` (8 C): released from a high-elbow pose with the hand goal at its start.

Each run is set up from one parameter set (:class:`~musculo_control.sim.setup.Setup`:
``experiments.yaml`` plus the robot's folder, with command-line overrides) and saves its
parameters, initial state (:mod:`musculo_control.sim.run_record`) and sampled signals. Its
score is computed from those signals alone (:func:`score_disturbance`, :func:`score_trajectory`,
:func:`score_nullspace`), the functions ``musculo score`` applies to a bag's
(:mod:`musculo_control.sim.bag_signals`): one implementation for both.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.control.controller_config import ControllerConfig
from musculo_control.control.goal import HandGoal
from musculo_control.control.minimum_jerk import minimum_jerk
from musculo_control.errors import ConfigError, InputError
from musculo_control.loop.parts import load_parts
from musculo_control.model.robot import Robot
from musculo_control.sim.mock_arm import MockArm
from musculo_control.sim.recorder import Recorder
from musculo_control.sim.rig import Rig
from musculo_control.sim.rosbag_log import BagRun
from musculo_control.sim.run_record import run_record
from musculo_control.sim.runner import LoopState
from musculo_control.sim.scoring import (
    Scored,
    disturbance_metrics,
    episode_metrics,
    nullspace_metrics,
    trajectory_metrics,
)
from musculo_control.sim.setup import (
    DisturbanceConfig,
    NullspaceConfig,
    Setup,
    TrajectoryConfig,
    experiment_config,
    start_pose,
)
from musculo_control.sim.signals import RunSignals
from musculo_control.stamps import NS_PER_S

FloatArray = npt.NDArray[np.float64]


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
        """Controller and variant, as the figures' legends show them."""
        return f"{self.controller} {self.variant}".strip()

    @property
    def realtime_factor(self) -> float:
        """Simulated seconds per wall second of the run."""
        return self.simulated_s / max(self.wall_s, 1e-9)


# -- building a loop -----------------------------------------------------------------------------
class Bench:
    """One closed loop (the rig's stages, one controller) and its recorder, for one run."""

    def __init__(self, setup: Setup, controller_name: str,
                 controller_config: ControllerConfig | None = None) -> None:
        if controller_name not in CONTROLLER_NAMES:
            raise InputError("controller", f"one of {list(CONTROLLER_NAMES)}", controller_name)
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

    def reset(self, q0_rad: FloatArray, goal: HandGoal) -> None:
        """The loop's start-up at ``q0_rad``; a joint-space baseline holds its target at t = 0
        from the first start-up tick (not robot.home_pose_rad until the run's first tick)."""
        set_target = getattr(self.controller, "set_joint_target", None)
        if set_target is not None and self.joint_target_at is not None:
            set_target(self.joint_target_at(0.0))
        self.loop.reset(q0_rad, goal)

    def record(self, state: LoopState) -> None:
        """Sample the run's signals at a control tick (the loop's ``on_control``)."""
        self.recorder.add(state.t_s, self.signals.sample(state, self.mock, self._goal_now))

    def run(self, duration_s: float, goal_at: Callable[[float], HandGoal], *,
            hook: Callable[[float, MockArm], None] | None = None, label: str = "") -> float:
        """Run the loop for ``duration_s`` of simulated time towards ``goal_at(t)`` (``hook``:
        called every physics step, e.g. the gauge); returns the wall time [s]."""
        set_target = getattr(self.controller, "set_joint_target", None)

        def goal_fn(t: float) -> HandGoal:
            self._goal_now = goal_at(t)
            if set_target is not None and self.joint_target_at is not None:
                set_target(self.joint_target_at(t))
            return self._goal_now

        return self.loop.run(duration_s, goal_fn, hook=hook, on_control=self.record, label=label)


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


# -- the experiments -----------------------------------------------------------------------------
def _start_holding(setup: Setup, controller: str,
                   pose: str) -> tuple[Bench, FloatArray, FloatArray, HandGoal]:
    """A loop at rest in ``pose``, the hand goal (and a baseline's joint target) held there."""
    bench = Bench(setup, controller)
    q0 = start_pose(setup.robot, pose)
    x0, R0 = setup.robot.arm.hand_pose(q0)
    goal = HandGoal.hold(x0, R0)
    bench.hold_joints(q0)
    bench.reset(q0, goal)
    return bench, q0, x0, goal


def run_disturbance(setup: Setup, controller: str, label: str = "") -> RunResult:
    """Experiment A (SPEC section 8 A), scored from the first sample with the gauge pushing."""
    cfg: DisturbanceConfig = experiment_config(setup, "disturbance")
    bench, q0, x0, goal = _start_holding(setup, controller, cfg.start_pose)
    axis = gauge_axis(cfg)
    radius = setup.mock_config.gauge.contact_radius_m
    contact: dict[str, FloatArray] = {}

    def gauge(t: float, mock: MockArm) -> None:
        if t < cfg.settle_s:
            return
        if "tip0" not in contact:  # the tip set against the arm's surface
            contact["tip0"] = mock.elbow_position_m - radius * axis
            contact["elbow0"] = mock.elbow_position_m
        mock.set_gauge(contact["tip0"] + float(gauge_tip_progress(cfg, t)) * axis, axis)

    duration = experiment_duration_s(setup, "disturbance")
    started = time.time_ns()
    wall = bench.run(duration, lambda t: goal, hook=gauge, label=label)
    rec = bench.recorder
    scored, metrics = score_disturbance(setup, rec, unsafe_ticks=len(bench.loop.faults),
                                        elbow_at_touch_m=contact.get("elbow0"))
    metrics.update(episode_metrics(bench.loop.episodes))
    info = run_record(setup, bench.mock, "disturbance", controller, q0, started,
                     {"hand_goal_m": x0, "metrics": metrics})
    return RunResult("disturbance", controller, "", metrics, rec, info, wall, duration, scored)


def run_trajectory(setup: Setup, controller: str, pose_name: str, label: str = "") -> RunResult:
    """Experiment B (SPEC section 8 B) from one start pose, orientation feedback off; scored
    from the start of the move, the start hold before it checked."""
    cfg: TrajectoryConfig = experiment_config(setup, "trajectory")
    ctrl_cfg = dataclasses.replace(
        setup.controller_config,
        gains=dataclasses.replace(setup.controller_config.gains, kr_s2=cfg.orientation_gain_s2))
    bench = Bench(setup, controller, ctrl_cfg)
    q0 = start_pose(setup.robot, pose_name)
    x0, R0 = setup.robot.arm.hand_pose(q0)
    _check_trajectory_start(setup, pose_name, x0, np.asarray(cfg.start_m))
    goal_at = trajectory_goal_at(cfg, R0)
    if hasattr(bench.controller, "set_joint_target"):
        bench.joint_target_at = trajectory_joint_path(setup, pose_name)
    bench.reset(q0, goal_at(0.0))
    duration = experiment_duration_s(setup, "trajectory")
    started = time.time_ns()
    wall = bench.run(duration, goal_at, label=label)
    rec = bench.recorder
    scored, metrics = score_trajectory(setup, rec, unsafe_ticks=len(bench.loop.faults),
                                       tension_limit_n=bench.rig.tension_limit_n)
    metrics.update(episode_metrics(bench.loop.episodes))
    info = run_record(setup, bench.mock, "trajectory", controller, q0, started,
                     {"start_pose": pose_name, "metrics": metrics})
    return RunResult("trajectory", controller, pose_name, metrics, rec, info, wall, duration,
                     scored)


def _check_trajectory_start(setup: Setup, pose_name: str, x0: FloatArray,
                            start: FloatArray) -> None:
    """The start pose has the hand at the trajectory's start, along the hand axes robot.yaml
    poses.hand_axes names (a tilted planar arm: the in-plane ones)."""
    poses = setup.robot.poses
    met = poses.hand_idx if poses is not None else np.arange(3)
    if np.linalg.norm((x0 - start)[met]) > 1e-3:
        names = [p.name for p in poses.config.named] if poses is not None else []
        key = (f"poses.named[{names.index(pose_name)}]" if pose_name in names
               else "home_pose_rad")
        raise ConfigError(setup.robot.robot_file, key,
                          f"a pose with the hand at the trajectory start {start.tolist()} m "
                          f"along {['xyz'[i] for i in met]} (poses.hand_axes)",
                          np.round(x0, 4).tolist())


def run_nullspace(setup: Setup, controller: str, label: str = "") -> RunResult:
    """Experiment C (SPEC section 8 C), scored from the release (t = 0)."""
    cfg: NullspaceConfig = experiment_config(setup, "nullspace")
    bench, q0, x0, goal = _start_holding(setup, controller, cfg.start_pose)
    started = time.time_ns()
    wall = bench.run(experiment_duration_s(setup, "nullspace"), lambda t: goal, label=label)
    rec = bench.recorder
    scored, metrics = score_nullspace(setup, rec, unsafe_ticks=len(bench.loop.faults))
    metrics.update(episode_metrics(bench.loop.episodes))
    info = run_record(setup, bench.mock, "nullspace", controller, q0, started,
                     {"hand_goal_m": x0, "drift_joint": cfg.drift_joint, "metrics": metrics})
    return RunResult("nullspace", controller, "", metrics, rec, info, wall, cfg.duration_s,
                     scored)


# -- scoring a run's signals (the runner's recorder or a bag's) ------------------------------
class Signals(Protocol):
    """The signals of one run at its control ticks, by the names of
    :class:`~musculo_control.sim.signals.RunSignals`: the runner's
    :class:`~musculo_control.sim.recorder.Recorder`, or a bag's
    (:class:`~musculo_control.sim.bag_signals.BagSignals`)."""

    @property
    def time_s(self) -> FloatArray:
        """(K,) tick times from the experiment's t = 0 [s]."""
        ...

    def array(self, name: str) -> FloatArray:
        """(K, components) samples of one signal."""
        ...


#: The signals each experiment's score reads, beside the tick times.
SCORED_SIGNALS: dict[str, tuple[str, ...]] = {
    "disturbance": ("hand_m", "hand_goal_m", "elbow_m", "gauge_force_n"),
    "trajectory": ("hand_m", "hand_goal_m", "elbow_m", "tension_command_n"),
    "nullspace": ("hand_m", "hand_goal_m", "elbow_m", "activation_norm", "q_rad"),
}
#: The value of a metric that needs a signal the run did not measure (the gauge force of a
#: bag without a force topic).
NOT_MEASURED = "not measured"
FORCE_METRICS = ("peak_push_force_N", "final_push_force_N", "final_force_fraction")


class RunScore(NamedTuple):
    """What one run is scored on and its metrics."""

    scored: Scored
    metrics: dict[str, Any]


def tick_times(t_s: npt.ArrayLike) -> FloatArray:
    """Tick times rounded to the nanosecond, a ROS stamp's resolution: a run scored from its
    recorder and from its bag sees the same times, so a tick on a window's edge falls on the
    same side of it in both [s]."""
    return np.round(np.asarray(t_s, dtype=float) * NS_PER_S) / NS_PER_S


def trajectory_goal_at(cfg: TrajectoryConfig,
                       rotation: FloatArray | None) -> Callable[[float], HandGoal]:
    """Experiment B's hand goal at each time from the run's start: held at ``start_m`` for
    ``settle_s``, the minimum-jerk move to ``end_m`` with its feed-forward, held there (the
    held goals one object each, as a goal at rest is sent once)."""
    start, end = np.asarray(cfg.start_m), np.asarray(cfg.end_m)
    held: dict[bool, HandGoal] = {}  # before (False) and after (True) the move: one goal each

    def goal_at(t: float) -> HandGoal:
        s = t - cfg.settle_s
        if s < 0.0 or s > cfg.move_s:  # the move's start or end (minimum_jerk clamps)
            goal = held.get(s > 0.0)
            if goal is None:
                goal = held[s > 0.0] = HandGoal(*minimum_jerk(start, end, cfg.move_s, s),
                                                rotation)
            return goal
        pos, vel, acc = minimum_jerk(start, end, cfg.move_s, s)
        return HandGoal(pos, vel, acc, rotation)

    return goal_at


def trajectory_joint_path(setup: Setup, pose_name: str) -> Callable[[float], FloatArray]:
    """Experiment B's joint targets for the joint-space baselines from ``pose_name``
    (:func:`joint_path`), at each time from the run's start."""
    cfg: TrajectoryConfig = experiment_config(setup, "trajectory")
    robot = setup.robot
    named = robot.poses.named(pose_name) if robot.poses is not None else None
    return joint_path(robot, start_pose(robot, pose_name), np.asarray(cfg.start_m),
                      np.asarray(cfg.end_m), cfg.move_s, cfg.settle_s,
                      hold_elbow=named is not None and named.elbow_z_m is not None)


def gauge_axis(cfg: DisturbanceConfig) -> FloatArray:
    """(3,) unit push axis of the gauge, base frame."""
    return np.asarray(cfg.axis, dtype=float) / np.linalg.norm(cfg.axis)


def gauge_tip_progress(cfg: DisturbanceConfig, t_s: npt.ArrayLike | float) -> Any:
    """How far the gauge tip has moved along its axis since it was set against the elbow at
    ``settle_s`` [m]."""
    return np.clip((np.asarray(t_s) - cfg.settle_s) / cfg.push_s, 0.0, 1.0) * cfg.displacement_m


def score_disturbance(setup: Setup, signals: Signals, *, unsafe_ticks: int,
                      elbow_at_touch_m: FloatArray | None = None) -> RunScore:
    """Experiment A's score of one run's signals (:data:`SCORED_SIGNALS`).

    ``elbow_at_touch_m``: the elbow when the gauge touched (the runner's, at the physics step;
    None: interpolated at ``settle_s`` between the ticks, or the first sample if the run ended
    before). Without a force measurement (all NaN) the contact is taken to start at the touch
    and the force metrics are :data:`NOT_MEASURED`.
    """
    cfg: DisturbanceConfig = experiment_config(setup, "disturbance")
    hold = setup.experiments.start_hold
    t = tick_times(signals.time_s)
    elbow = signals.array("elbow_m")
    if elbow_at_touch_m is None:
        elbow_at_touch_m = (np.array([np.interp(cfg.settle_s, t, e) for e in elbow.T])
                            if t[-1] >= cfg.settle_s else elbow[0])
    force = signals.array("gauge_force_n")[:, 0]
    duration = experiment_duration_s(setup, "disturbance")
    scored = Scored(t, {
        "hand_deviation_m": np.linalg.norm(signals.array("hand_m")
                                           - signals.array("hand_goal_m"), axis=1),
        "gauge_force_n": force,
        "elbow_progress_m": (elbow - elbow_at_touch_m) @ gauge_axis(cfg),
        "tip_progress_m": gauge_tip_progress(cfg, t),
        "elbow_motion_m": np.linalg.norm(elbow - elbow[0], axis=1),
    }, {"touch_s": cfg.settle_s, "final_from_s": duration - cfg.final_window_s,
        "end_s": duration})
    measured = bool(np.any(np.isfinite(force)))
    judged = scored if measured else dataclasses.replace(scored, series={
        **scored.series, "gauge_force_n": (t >= cfg.settle_s).astype(float)})
    metrics = disturbance_metrics(
        judged, hand_tolerance_m=hold.hand_tolerance_m, elbow_tolerance_m=hold.elbow_tolerance_m,
        contact_gap_tolerance_m=cfg.contact_gap_tolerance_m, unsafe_ticks=unsafe_ticks)
    if not measured:
        metrics.update(dict.fromkeys(FORCE_METRICS, NOT_MEASURED))
    return RunScore(scored, metrics)


def score_trajectory(setup: Setup, signals: Signals, *, unsafe_ticks: int,
                     tension_limit_n: float) -> RunScore:
    """Experiment B's score of one run's signals (:data:`SCORED_SIGNALS`);
    ``tension_limit_n``: the actuators' limit (:func:`actuator_limit_n`) [N]."""
    cfg: TrajectoryConfig = experiment_config(setup, "trajectory")
    hold = setup.experiments.start_hold
    t = tick_times(signals.time_s)
    hand, goal = signals.array("hand_m"), signals.array("hand_goal_m")
    elbow = signals.array("elbow_m")
    up = setup.robot.arm.up
    start, end = np.asarray(cfg.start_m), np.asarray(cfg.end_m)
    direction = (end - start) / np.linalg.norm(end - start)
    # a command at the actuators' limit: the torque the task asked for was not available
    command = signals.array("tension_command_n")
    at_limit = np.any(np.isclose(command, tension_limit_n) | (command > tension_limit_n), axis=1)
    # tracking error over the task's position axes: a planar task in a tilted plane cannot
    # control the third coordinate of a goal given in base axes
    axes = setup.controller_config.task.position_axes()
    miss = hand[:, axes] - goal[:, axes]
    scored = Scored(t, {
        "tracking_error_m": np.sqrt(np.einsum("ij,ij->i", miss, miss)),
        "at_tension_limit": at_limit.astype(float),
        "elbow_height_m": elbow @ up,  # against gravity
        "elbow_motion_m": np.linalg.norm(elbow - elbow[0], axis=1),
        # for the path panel: along the move from its start, and height [m]
        "hand_along_m": (hand - start) @ direction,
        "hand_height_m": hand @ up,
        "goal_along_m": (goal - start) @ direction,
        "goal_height_m": goal @ up,
    }, {"move_s": cfg.settle_s, "end_s": cfg.settle_s + cfg.move_s + cfg.hold_s})
    return RunScore(scored, trajectory_metrics(
        scored, hand_tolerance_m=hold.hand_tolerance_m, elbow_tolerance_m=hold.elbow_tolerance_m,
        unsafe_ticks=unsafe_ticks))


def score_nullspace(setup: Setup, signals: Signals, *, unsafe_ticks: int) -> RunScore:
    """Experiment C's score of one run's signals (:data:`SCORED_SIGNALS`)."""
    cfg: NullspaceConfig = experiment_config(setup, "nullspace")
    j = setup.robot.arm.joint_names.index(cfg.drift_joint)
    scored = Scored(tick_times(signals.time_s), {
        "activation_norm": signals.array("activation_norm")[:, 0],
        "hand_deviation_m": np.linalg.norm(signals.array("hand_m")
                                           - signals.array("hand_goal_m"), axis=1),
        "elbow_height_m": signals.array("elbow_m") @ setup.robot.arm.up,  # against gravity
        "drift_joint_rad": signals.array("q_rad")[:, j],
    }, {"start_window_s": cfg.start_skip_s, "end_window_s": cfg.duration_s - cfg.window_s,
        "window_s": cfg.window_s, "end_s": cfg.duration_s})
    return RunScore(scored, nullspace_metrics(scored, unsafe_ticks=unsafe_ticks))


def experiment_duration_s(setup: Setup, experiment: str) -> float:
    """How long a run of ``experiment`` lasts from its t = 0 [s], as the runner runs it."""
    cfg = experiment_config(setup, experiment)
    if experiment == "disturbance":
        return float(cfg.settle_s + cfg.push_s + cfg.hold_s)
    if experiment == "trajectory":
        return float(cfg.settle_s + cfg.move_s + cfg.hold_s)
    return float(cfg.duration_s)


def score_signals(setup: Setup, experiment: str, signals: Signals, *, unsafe_ticks: int,
                  tension_limit_n: float) -> RunScore:
    """The score of ``experiment`` from one run's signals (a bag's: ``musculo score``)."""
    if experiment == "disturbance":
        return score_disturbance(setup, signals, unsafe_ticks=unsafe_ticks)
    if experiment == "trajectory":
        return score_trajectory(setup, signals, unsafe_ticks=unsafe_ticks,
                                tension_limit_n=tension_limit_n)
    return score_nullspace(setup, signals, unsafe_ticks=unsafe_ticks)


def actuator_limit_n(setup: Setup, *, mock: bool) -> float:
    """The tension a command is at the actuators' limit from [N]: the tendon driver's clamp
    (hardware.yaml ``driver.max_tension_n``), and with the mock arm (``mock``) its motors' at
    rest if lower, as :class:`~musculo_control.sim.rig.Rig` has it."""
    if mock:
        return Rig(setup).tension_limit_n
    parts = load_parts(setup.robot.config_dir, robot=setup.robot,
                       controller=setup.controller_config)
    return float(parts.drivers.tendons.config.max_tension_n)


def run_label(setup: Setup, result: RunResult) -> BagRun:
    """What a run's bag says of it (:class:`~musculo_control.sim.rosbag_log.BagRun`): the
    experiment, controller, start pose and the settings it ran with, so that ``musculo score``
    scores the bag without the run's command line."""
    return BagRun(result.experiment, result.controller, result.variant,
                  run_settings(setup, result.experiment))


def run_settings(setup: Setup, experiment: str) -> dict[str, Any]:
    """The settings ``experiment`` runs with, as ``experiments.yaml`` dotted keys -> values
    (its section and ``start_hold``), for a bag's
    :class:`~musculo_control.sim.rosbag_log.BagRun`."""
    section = dataclasses.asdict(experiment_config(setup, experiment))
    settings = {f"{experiment}.{k}": v for k, v in section.items()}
    settings.update({f"start_hold.{k}": v
                     for k, v in dataclasses.asdict(setup.experiments.start_hold).items()})
    return settings


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



def metrics_json(experiment: str, runs: list[RunResult]) -> dict[str, Any]:
    """Metrics of one experiment with one controller; trajectory keys map pose -> value."""
    if experiment != "trajectory":
        return dict(runs[0].metrics)
    out: dict[str, Any] = {}
    for run in runs:
        for key, value in run.metrics.items():
            out.setdefault(key, {})[run.variant] = value
    return out
