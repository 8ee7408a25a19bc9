"""Recording the joint-muscle mapping on the mock arm, through the one loop.

The arm is moved through its joint range by the joint-stiffness controller (paper eq. 16) over a
space-filling set of joint targets inside the limits: a scrambled Halton sequence
(``scipy.stats.qmc``), kept ``margin_fraction`` of each joint's range away from its limits. The
target moves from one point to the next at no more than ``speed_rad_s`` on any joint and dwells
``dwell_s`` at each, so the motion is slow and close to static. It starts at the calibration
pose (where the winch encoders were zeroed), so the recorded box holds it.

What is recorded is what the node graph publishes: the potentiometer stage's joint states and
the tendon stage's muscle states (encoder lengths with their offsets, load-cell tensions), from
the mock's own sensors with their noise and quantisation, sampled at ``sample_rate_hz`` on the
control ticks the supervisor passed. The mock's true joint angles go along (``truth_q_rad``) for
the accuracy check only; the fit never reads them.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.stats import qmc

from musculo_control.config.parser import load_with_overrides, spec
from musculo_control.control.controller import make_controller
from musculo_control.control.goal import HandGoal
from musculo_control.errors import ConfigError
from musculo_control.model.mapping_fit import FitConfig
from musculo_control.model.mapping_recording import Recording
from musculo_control.provenance import provenance
from musculo_control.sim.runner import LoopState
from musculo_control.sim.setup import Setup

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class RecordConfig:
    """``mapping.yaml`` key ``record``: how ``musculo record-mapping`` moves the mock arm."""

    targets: int = spec(120, ge=2, doc="joint targets of the space-filling sequence [-]")
    seed: int = spec(0, ge=0, doc="scramble seed of the Halton sequence [-]")
    margin_fraction: float = spec(0.1, ge=0.0, lt=0.5, doc="targets keep this fraction of each "
                                                           "joint's range from its limits [-]")
    speed_rad_s: float = spec(0.5, gt=0.0, doc="largest joint speed of the moving target [rad/s]")
    min_move_s: float = spec(0.2, gt=0.0, doc="shortest move between two targets [s]")
    dwell_s: float = spec(0.5, ge=0.0, doc="hold at each target [s]")
    start_hold_s: float = spec(1.0, ge=0.0, doc="hold at the calibration pose first [s]")
    sample_rate_hz: float = spec(25.0, gt=0.0, doc="samples kept per second; divides the "
                                                   "control rate [Hz]")
    stiffness_nm_rad: tuple[float, ...] | None = spec(
        None, doc="joint stiffness K while recording [Nm/rad]; absent: controller.yaml's "
                  "baselines.joint_stiffness")
    max_tension_n: float | None = spec(
        None, gt=0.0, doc="largest tension the recording's controller commands [N]; absent: "
                          "the driver's max_tension_n (hardware.yaml)")


@dataclass(frozen=True, kw_only=True)
class MappingConfig:
    """``mapping.yaml``: recording and fitting the joint-muscle mapping."""

    record: RecordConfig = spec(RecordConfig(), doc="the recording on the mock arm")
    fit: FitConfig = spec(FitConfig(), doc="the fit of l(q)")


def load_mapping_config(config_dir: Path, overrides: dict[str, Any] | None = None
                        ) -> MappingConfig:
    """``mapping.yaml`` of a config folder (defaults when the folder has none)."""
    path = Path(config_dir) / "mapping.yaml"
    if not path.is_file():
        if overrides:
            raise ConfigError(str(path), "<file>", "a mapping.yaml to apply --set to",
                              "no such file")
        return MappingConfig()
    return load_with_overrides(MappingConfig, path, overrides)


def joint_targets(lower: FloatArray, upper: FloatArray, config: RecordConfig) -> FloatArray:
    """(targets, n) space-filling joint targets inside the limits, less the margin [rad]."""
    margin = config.margin_fraction * (upper - lower)
    sampler = qmc.Halton(d=lower.shape[0], scramble=True, seed=config.seed)
    return np.asarray(qmc.scale(sampler.random(config.targets), lower + margin, upper - margin))


def schedule(start: FloatArray, waypoints: FloatArray,
             config: RecordConfig) -> tuple[FloatArray, FloatArray]:
    """(times (K,) [s], joint targets (K, n) [rad]) of the piecewise-linear target path: from
    ``start``, a move to each waypoint at no more than ``speed_rad_s``, then a dwell."""
    times, points = [0.0], [start]
    t, prev = 0.0, start
    for i, point in enumerate(waypoints):
        t += max(float(np.abs(point - prev).max()) / config.speed_rad_s, config.min_move_s)
        times.append(t)
        points.append(point)
        hold = config.start_hold_s if i == 0 else config.dwell_s
        if hold > 0.0:
            t += hold
            times.append(t)
            points.append(point)
        prev = point
    return np.array(times), np.array(points)


def record_on_mock(setup: Setup, config: RecordConfig, *, progress: bool = True) -> Recording:
    """Move the mock arm through its joint range (see the module docstring); the recording."""
    from musculo_control.sim.rig import Rig  # here: learn-mapping reads this module's config
    # without loading the loop and MuJoCo

    robot = setup.robot
    folder = robot.config_dir
    ctrl_cfg = setup.controller_config
    if config.stiffness_nm_rad is not None:
        if len(config.stiffness_nm_rad) != robot.arm.n_joints:
            raise ConfigError(str(folder / "mapping.yaml"), "record.stiffness_nm_rad",
                              f"{robot.arm.n_joints} values (one per joint)",
                              len(config.stiffness_nm_rad))
        js = dataclasses.replace(ctrl_cfg.baselines.joint_stiffness,
                                 stiffness_nm_rad=config.stiffness_nm_rad)
        ctrl_cfg = dataclasses.replace(
            ctrl_cfg, baselines=dataclasses.replace(ctrl_cfg.baselines, joint_stiffness=js))
    rig = Rig(setup, "joint-stiffness", ctrl_cfg)
    control_hz = rig.parts.controller.loop.control_rate_hz
    every = control_hz / config.sample_rate_hz
    if abs(every - round(every)) > 1e-9 or round(every) < 1:
        raise ConfigError(str(folder / "mapping.yaml"), "record.sample_rate_hz",
                          f"a rate that divides the control rate {control_hz:g} Hz",
                          config.sample_rate_hz)
    every_tick = int(round(every))
    controller: Any = rig.controller
    if config.max_tension_n is not None:
        controller = make_controller("joint-stiffness", robot, ctrl_cfg,
                                     tension_max_n=min(config.max_tension_n,
                                                       rig.tension_limit_n))
    loop = rig.loop(controller)
    start = robot.home_pose_rad.copy()
    calibration_pose = rig.calibration.calibration_pose_rad
    waypoints = np.vstack([calibration_pose,
                           joint_targets(robot.arm.lower_rad, robot.arm.upper_rad, config)])
    times, points = schedule(start, waypoints, config)

    def target_at(t: float) -> FloatArray:
        return np.array([np.interp(t, times, points[:, j]) for j in range(points.shape[1])])

    x0, rot0 = rig.robot.arm.hand_pose(start)
    goal = HandGoal.hold(x0, rot0)
    controller.set_joint_target(start)
    loop.reset(start, goal)
    rows: list[tuple[Any, ...]] = []
    ticks = {"count": 0, "unsafe": 0}
    last = {"stamp": -np.inf}

    def goal_fn(t: float) -> HandGoal:
        controller.set_joint_target(target_at(t))
        return goal

    def on_control(state: LoopState) -> None:
        ticks["count"] += 1
        if not state.report.ok:
            ticks["unsafe"] += 1
            return
        joints, tendons = state.joints, state.tendons
        if ticks["count"] % every_tick or joints is None or tendons is None:
            return
        if not (joints.ok and tendons.ok) or joints.stamp_s <= last["stamp"]:
            return
        last["stamp"] = joints.stamp_s
        rows.append((joints.stamp_s, joints.q_rad.copy(), tendons.stamp_s,
                     tendons.length_m.copy(), tendons.tension_n.copy(), rig.mock.q_rad))

    duration = float(times[-1])
    if progress:
        print(f"record-mapping: {config.targets} targets, {duration:.0f} s simulated",
              file=sys.stderr, flush=True)
    loop.run(duration, goal_fn, on_control=on_control,
             label="record-mapping" if progress else "")
    stamps = np.array([r[0] for r in rows])
    rec = Recording(
        stamp_s=stamps, q_rad=np.array([r[1] for r in rows]),
        length_stamp_s=np.array([r[2] for r in rows]), length_m=np.array([r[3] for r in rows]),
        tension_n=np.array([r[4] for r in rows]), session=np.zeros(len(rows), dtype=np.int64),
        joint_names=robot.arm.joint_names, muscle_names=robot.muscle_names,
        config_dir=str(folder),
        source=f"mock arm (MuJoCo), seed {setup.mock_config.seed}, joint-stiffness controller "
               f"(paper eq. 16) over {config.targets} Halton targets",
        meta={"record": dataclasses.asdict(config), "mock_seed": setup.mock_config.seed,
              "control_ticks": ticks["count"], "unsafe_ticks": ticks["unsafe"],
              "faults": [f"{t:.3f} s: {why}" for t, why in loop.faults[:20]],
              "duration_s": duration, "provenance": provenance()},
        truth_q_rad=np.array([r[5] for r in rows]))
    return rec
