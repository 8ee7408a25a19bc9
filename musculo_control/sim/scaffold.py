"""A runnable config folder written from an MJCF alone (``musculo init``).

:func:`write_config` reads the MJCF (:func:`~musculo_control.model.mjcf_survey.survey`), writes
``robot.yaml`` and ``muscles.yaml``, loads the robot they describe, and derives from it what the
other files need, each choice recorded with its reason in :attr:`Scaffold.choices`:

- the task: the hand position; two rows for an arm whose hand moves in a plane (the two base
  axes closest to the plane), three otherwise; the decoupling mask lets every task row use the
  joints that move the task point somewhere in the joint range; joints that never move it
  (fingers) get a posture spring in the task's nullspace;
- poses: the pose solver moves the joints that move the task point by at least 5 % of the
  most moving one; the elbow frame is the joint anchor farthest from both the shoulder (the
  first such joint's anchor) and the hand;
- experiments: B moves the hand ``move_m`` from where the home pose puts it, in the first
  direction the hand can follow (up, down, then the horizontal base axes), from three start
  poses with rising elbow height when the arm is redundant; C releases the arm from the home
  pose with the elbow raised (redundant arms only, else switched off with the reason); A pushes
  the elbow along the direction it moves most freely with the hand held (up for an arm without
  redundancy);
- limits: the driver's tension limit 1.5 times the largest muscle's peak force, the mock
  arm's motor sized to deliver 1.1 times that, the workspace gate the sampled reach;
- the mock's model error: the planar arm's, unless the MJCF's smallest wrap surface makes it
  large (finger pulleys of 1.5 mm): then a fifth of that radius;
- safety: the planar arm's thresholds; where a tendon's length jumps as a joint sweeps its
  range (its path flipping round a wrap surface: the model's, and the mock's a little elsewhere),
  the consistency check's tolerance is raised above the largest jump;
- the files that depend on no robot (mapping, benchmark and node parameters) are the shipped
  planar arm's, with its comments.

Every file the dataclasses describe is written by :func:`~musculo_control.config.writer.dump`,
every key with its documentation. Nothing here runs a simulation: ``musculo init`` validates the
folder by loading it as ``musculo simulate`` does.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

import mujoco
import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import load, load_section
from musculo_control.config.writer import dump, dump_sections, scalar
from musculo_control.control.baselines_config import (
    BaselinesConfig,
    JointStiffnessConfig,
    MuscleStiffnessConfig,
)
from musculo_control.control.controller_config import ControllerConfig
from musculo_control.control.goal import WorkspaceConfig
from musculo_control.control.task_space import GainsConfig
from musculo_control.errors import ConfigError, ConfigErrors, MusculoError
from musculo_control.model.arm import ArmConfig
from musculo_control.model.hill import HillParams
from musculo_control.model.learned_mapping import MuscleGeometryConfig
from musculo_control.model.mjcf_survey import HOME_MARGIN, Survey, survey
from musculo_control.model.mujoco_tendons import MujocoTendonGeometry
from musculo_control.model.muscles import MusclesConfig, MuscleSpec
from musculo_control.model.poses import NamedPose, PoseError, PosesConfig, PoseSolver
from musculo_control.model.robot import Robot, RobotConfig, load_robot
from musculo_control.model.task import TaskConfig
from musculo_control.paths import config_root
from musculo_control.safety.config import SafetyConfig
from musculo_control.sim.fault_matrix import FaultMatrixConfig
from musculo_control.sim.mock_arm import ActuatorConfig, MockArmConfig, StartupConfig
from musculo_control.sim.mujoco_arm import ModelErrorConfig, PhysicsConfig
from musculo_control.sim.reliability_config import RELIABILITY_SECTIONS
from musculo_control.sim.setup import (
    DisturbanceConfig,
    ExperimentsConfig,
    NullspaceConfig,
    TrajectoryConfig,
)
from musculo_control.sim.soak_schedule import SoakConfig

FloatArray = npt.NDArray[np.float64]

#: The shipped MJCF robot whose robot-independent files a new folder starts from.
TEMPLATE = "planar_arm"
#: Files copied from the template as they are (they name nothing of the robot).
COPIED = ("mapping.yaml", "realtime.yaml")
#: Poses sampled over the joint box for the task analysis.
_SAMPLES = 512
#: A joint moves the task point when its Jacobian column reaches this share of the largest.
_MOVES = 1e-3
#: ... and the pose solver moves it when its column reaches this share.
_IK_SHARE = 0.05
#: A frame whose Jacobian stays below this everywhere does not move [m/rad].
_STILL_M_RAD = 1e-6
#: The elbow of experiment C is raised by at most this, in steps of _STEP_M [m].
_RAISE_M = 0.10
_STEP_M = 0.01
#: Experiment B's move is halved, down to this, until the hand can follow it [m].
_SHORTEST_MOVE_M = 0.02
#: Experiment B's start poses differ in elbow height by this [m].
_ELBOW_SPREAD_M = 0.03
#: The driver's limit over the largest peak force; the motor's over the driver's [-].
_DRIVER_OVER_F1 = 1.5
_MOTOR_OVER_DRIVER = 1.1
#: The planar template's motor: force per ampere at the winch [N/A] (mock_arm.yaml actuator).
_TEMPLATE_MOTOR = ActuatorConfig(time_constant_s=0.02, supply_voltage_v=24.0,
                                 torque_constant_nm_a=0.0259, terminal_resistance_ohm=1.0,
                                 current_limit_a=7.0, gear_ratio=101.0, gear_efficiency=0.85,
                                 command_timeout_s=0.05, timeout_tension_n=5.0)
_WINCH_RADIUS_M = 0.01
#: The mock's site and wrap-radius errors are at most this share of the smallest wrap radius
#: a muscle passes (a 1 mm error on a 1.5 mm finger pulley is no longer a small error) [-].
_ERROR_OVER_RADIUS = 0.2
#: Grid points per joint range where the tendon lengths are checked for jumps.
_JUMP_GRID = 401
#: A length change this much larger than the moment arm predicts over one grid step is a jump [m].
_JUMP_M = 1e-3


@dataclass
class Scaffold:
    """What :func:`write_config` wrote and why."""

    folder: Path
    files: list[str] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)  # one line per decision, with its reason
    switched_off: list[str] = field(default_factory=list)  # experiments not set up, and why
    runs: int = 0  # experiment runs set up (B once per start pose)
    move_m: float = 0.0  # experiment B's move, when it is set up [m]


def _round(values: npt.ArrayLike, digits: int = 4) -> tuple[float, ...]:
    return tuple(float(round(float(v), digits)) + 0.0 for v in np.ravel(values))


def _sig(value: float, digits: int = 3) -> float:
    """``value`` to ``digits`` significant digits."""
    if value == 0.0 or not math.isfinite(value):
        return 0.0
    return float(f"{value:.{digits}g}")


# -- stage 1: robot.yaml and muscles.yaml from the MJCF alone ------------------------------------
def _first_robot(s: Survey, folder: Path) -> RobotConfig:
    arm = ArmConfig(mjcf=os.path.relpath(s.path.resolve(), folder.resolve()), joints=s.joints,
                    task_frame=s.task_frame, task_offset_m=s.task_offset_m, base_frame="world")
    return RobotConfig(arm=arm, muscles_file="muscles.yaml", hill=HillParams(),
                       home_pose_rad=_round(s.home_pose_rad), poses=None,
                       muscle_geometry=MuscleGeometryConfig())


def _muscles(s: Survey) -> MusclesConfig:
    specs = tuple(MuscleSpec(name=m.name, actuator_id=i + 1,
                             tendon=None if m.tendon == m.name else m.tendon)
                  for i, m in enumerate(s.muscles))
    return MusclesConfig(muscles=specs)


# -- stage 2: what the loaded robot says ------------------------------------------------------
@dataclass
class _Task:
    rows: tuple[str, ...]
    axes: tuple[int, ...]  # base axes of the task rows
    moves: FloatArray  # (n,) largest |dx/dq_j| over the samples [m/rad]
    planar: bool


def _task(robot: Robot, out: Scaffold) -> _Task:
    arm = robot.arm
    ws = arm.body.workspace()
    poses = robot.sample_poses(_SAMPLES, seed=0)
    hands = np.array([arm.hand_pose(q, ws)[0] for q in poses])
    moves = np.zeros(arm.n_joints)
    for q in poses[:: max(1, len(poses) // 128)]:
        J = arm.body.jacobians(ws, q, (arm.task_frame,))[0][:3]
        moves = np.maximum(moves, np.linalg.norm(J, axis=0))
    spread = np.linalg.svd(hands - hands.mean(axis=0), compute_uv=True)
    sing, normal = spread[1], spread[2][2]
    planar = bool(sing[2] < 1e-6 * sing[0])
    movers = int(np.count_nonzero(moves > _MOVES * float(moves.max())))
    if movers == 1:  # one joint moves the hand (a one-joint elbow): along a curve, one row
        axis = int(np.argmax(np.ptp(hands, axis=0)))
        row = "v" + "xyz"[axis]
        out.choices.append(f"task rows ['{row}']: one joint moves the hand, along a curve; "
                           f"one row, the base axis along which it moves farthest "
                           f"({np.ptp(hands[:, axis]):.3f} m over the joint range)")
        return _Task((row,), (axis,), moves, planar)
    if planar or movers < 3:
        drop = int(np.argmax(np.abs(normal)))
        axes = tuple(i for i in range(3) if i != drop)
        tilt = math.degrees(math.acos(min(1.0, abs(float(normal[drop])))))
        shape = "a plane" if planar else (f"a surface ({movers} joints move it; best-fit "
                                           f"plane)")
        how = (f"the hand moves in {shape} (normal {np.round(normal, 3).tolist()}, "
               f"{tilt:.1f} deg from base {'xyz'[drop]}): two rows, the in-plane axes")
    else:
        axes, how = (0, 1, 2), "the hand moves in 3-D: the three position rows"
    rows = tuple("v" + "xyz"[i] for i in axes)
    out.choices.append(f"task rows {list(rows)}: {how}")
    return _Task(rows, axes, moves, planar)


def _anchors(robot: Robot, q: FloatArray) -> dict[str, FloatArray]:
    """World position of every independent joint's anchor at ``q``."""
    body = robot.arm.body
    ws = body.workspace()
    frames = tuple(body.find_frame(j, np.zeros(3)) for j in robot.arm.joint_names)
    return {j: p for j, (p, _) in zip(robot.arm.joint_names,
                                      body.poses(ws, q, tuple(f for f in frames if f)))}


def _poses_config(robot: Robot, task: _Task, out: Scaffold) -> tuple[PosesConfig, str]:
    names = robot.arm.joint_names
    top = float(task.moves.max())
    ik = tuple(j for j, m in zip(names, task.moves) if m >= _IK_SHARE * top)
    home = robot.home_pose_rad
    anchors = _anchors(robot, home)
    hand = robot.arm.hand_pose(home)[0]
    shoulder = anchors[ik[0]]
    elbow = max(ik, key=lambda j: min(float(np.linalg.norm(anchors[j] - shoulder)),
                                      float(np.linalg.norm(anchors[j] - hand))))
    out.choices.append(f"pose solver joints {list(ik)}: those moving the task point by at least "
                       f"{100 * _IK_SHARE:.0f} % of the most moving one")
    out.choices.append(f"elbow frame '{elbow}' (a joint: its anchor), the joint farthest from "
                       f"both the shoulder '{ik[0]}' and the hand")
    axes = tuple("xyz"[i] for i in task.axes)
    return PosesConfig(elbow_frame=elbow, ik_joints=ik, hand_axes=axes), ik[0]


def _solver(robot: Robot) -> PoseSolver:
    """The robot's pose solver (robot.yaml has its ``poses`` section by then)."""
    if robot.poses is None:
        raise ConfigError(robot.robot_file, "poses", "a poses section (musculo init writes it)")
    return robot.poses


def _follows(robot: Robot, q: FloatArray, start: FloatArray, end: FloatArray) -> bool:
    """The hand can follow the straight path start -> end from ``q`` (a few points)."""
    solver = _solver(robot)
    for s in np.linspace(0.0, 1.0, 11):
        try:
            q = solver.solve(q, start + s * (end - start), None, what="path").q_rad
        except PoseError:
            return False
    return True


def _elbow_heights(robot: Robot, q0: FloatArray, step: float, most: float) -> list[FloatArray]:
    """Poses raising (step > 0) or lowering the elbow from ``q0`` with the hand fixed."""
    solver = _solver(robot)
    z0 = solver.targets_at(q0)[1]
    heights = z0 + step * np.arange(1, int(round(most / abs(step))) + 1)
    return [s.q_rad for s in solver.elbow_path(q0, heights)]


def _experiments(robot: Robot, task: _Task, move_m: float, out: Scaffold
                 ) -> tuple[ExperimentsConfig, list[NamedPose], FloatArray]:
    """Experiments A, B, C and the named poses they need; also B's direction."""
    solver = _solver(robot)
    arm, home = robot.arm, robot.home_pose_rad
    up = arm.up
    hand0 = arm.hand_pose(home)[0]
    redundant = len(solver.config.ik_joints) > len(task.rows)
    # B: the first direction the hand can follow from home
    mask = np.zeros(3)
    mask[list(task.axes)] = 1.0
    candidates = [up, -up, *np.eye(3), *-np.eye(3)]
    direction = None
    asked = move_m
    lengths = [move_m * 0.5**k for k in range(4) if move_m * 0.5**k >= _SHORTEST_MOVE_M]
    for length in lengths or [move_m]:  # the move asked for, else shorter (a finger's reach)
        for d in candidates:
            d = d * mask
            if np.linalg.norm(d) < 0.5:
                continue
            d = d / np.linalg.norm(d)
            if _follows(robot, home, hand0, hand0 + length * d):
                direction, move_m = d, length
                break
        if direction is not None:
            break
    named: list[NamedPose] = []
    trajectory = None
    if direction is None:
        out.switched_off.append(f"trajectory: from the home pose the hand cannot follow a "
                                f"move of {100 * min(lengths or [asked]):.1f}-"
                                f"{100 * asked:.0f} cm along any base axis")
        direction = up * mask / max(float(np.linalg.norm(up * mask)), 1e-9)
    else:
        if move_m < asked:
            tried = [round(100 * x, 1) for x in lengths]
            out.choices.append(f"experiment B's move: {100 * move_m:.1f} cm, the longest of "
                               f"{tried} cm that the hand can follow from the home pose along "
                               f"a base axis ({100 * asked:.0f} cm asked; --move-m)")
        start, end = hand0, hand0 + move_m * direction
        starts: list[str] = []
        z0 = solver.targets_at(home)[1]
        heights = [z0, z0 + _ELBOW_SPREAD_M, z0 + 2 * _ELBOW_SPREAD_M] if redundant else [None]
        for label, z in zip("abc", heights):
            pose = NamedPose(name=f"start_{label}", hand_m=_round(start),
                             elbow_z_m=None if z is None else round(float(z), 4),
                             doc=f"experiment B start pose {label.upper()}")
            try:
                q = solver.solve(home, start, pose.elbow_z_m, what=pose.name).q_rad
            except PoseError:
                continue
            if _follows(robot, q, start, end):
                named.append(pose)
                starts.append(pose.name)
        if starts:
            raised_cm = ", ".join(f"{100 * _ELBOW_SPREAD_M * 'abc'.index(n[-1]):.0f}"
                                  for n in starts)
            trajectory = TrajectoryConfig(start_m=_round(start), end_m=_round(end),
                                          start_poses=tuple(starts))
            out.choices.append(
                f"experiment B: the hand moves {100 * move_m:.3g} cm along "
                f"{np.round(direction, 3).tolist()} from {np.round(start, 3).tolist()} m, from "
                f"start poses {starts}" + (f" (elbow raised {raised_cm} cm)"
                                           if redundant and len(starts) > 1 else ""))
            out.move_m = move_m
        else:
            out.switched_off.append("trajectory: no start pose follows the move")
    # C: the elbow raised with the hand fixed
    nullspace = None
    if not redundant:
        out.switched_off.append(
            f"nullspace: the task's {len(task.rows)} rows leave the pose solver's "
            f"{len(solver.config.ik_joints)} joints no redundancy (C needs an elbow that "
            f"can move while the hand stays)")
    else:
        raised = _elbow_heights(robot, home, _STEP_M, _RAISE_M)
        if len(raised) < 3:
            out.switched_off.append("nullspace: the elbow cannot be raised 3 cm with the hand "
                                    "held at the home pose's position")
        else:
            q_high = raised[-1]
            z_high = solver.targets_at(q_high)[1]
            named.append(NamedPose(name="elbow_raised", elbow_z_m=round(float(z_high), 4),
                                   doc="experiment C: released from here"))
            change = np.abs(q_high - home)
            drift = arm.joint_names[int(np.argmax(change))]
            nullspace = NullspaceConfig(start_pose="elbow_raised", drift_joint=drift)
            out.choices.append(
                f"experiment C: released with the elbow {100 * len(raised) * _STEP_M:.0f} cm "
                f"above the home pose's, hand held; drift joint '{drift}' (changes most)")
    # A: push the elbow where it moves most freely with the hand held
    disturbance = None
    if _elbow_moves(robot):
        axis = _push_axis(robot, task, redundant, out)
        disturbance = DisturbanceConfig(start_pose="home", axis=_round(axis, 3),
                                        displacement_m=0.02)
    else:
        out.switched_off.append(
            f"disturbance: the elbow frame '{solver.config.elbow_frame}' does not move anywhere "
            f"in the joint range (the anchor of the arm's first joint): the gauge would push a "
            f"point fixed to the base")
    exp = ExperimentsConfig(disturbance=disturbance, trajectory=trajectory, nullspace=nullspace)
    out.runs = ((1 if disturbance else 0) + (len(trajectory.start_poses) if trajectory else 0)
                + (1 if nullspace else 0))
    return exp, named, direction


def _elbow_moves(robot: Robot) -> bool:
    """The pose solver's elbow frame moves somewhere in the joint range (a one-joint arm's
    elbow is that joint's anchor, fixed to the base)."""
    solver = _solver(robot)
    body, ws = robot.arm.body, robot.arm.body.workspace()
    most = 0.0
    for q in robot.sample_poses(32, seed=3):
        J = body.jacobians(ws, q, (solver.elbow_frame,))[0][:3]
        most = max(most, float(np.abs(J).max()))
    return most > _STILL_M_RAD


def _push_axis(robot: Robot, task: _Task, redundant: bool, out: Scaffold) -> FloatArray:
    solver = _solver(robot)
    arm, up = robot.arm, robot.arm.up
    mask = np.zeros(3)
    mask[list(task.axes)] = 1.0
    if redundant:
        cols = solver.ik_idx
        body, ws = arm.body, arm.body.workspace()
        jh, je = body.jacobians(ws, robot.home_pose_rad, (arm.task_frame,
                                                           solver.elbow_frame))
        Jh, Je = jh[:3][:, cols], je[:3][:, cols]
        N = np.eye(len(cols)) - np.linalg.pinv(Jh) @ Jh
        U, S, _ = np.linalg.svd(Je @ N)
        axis = U[:, 0] if S[0] > 1e-6 else up
        how = "the direction the elbow moves most freely with the hand held"
    else:
        axis = up * mask
        how = "up (against gravity), in the task's plane: the arm has no redundancy"
        if float(np.linalg.norm(axis)) < 0.5:  # a plane across gravity: sideways in it
            hand = arm.hand_pose(robot.home_pose_rad)[0]
            elbow = solver.elbow_position(robot.home_pose_rad)
            along = (hand - elbow) * mask
            axis = np.cross(1.0 - mask, along)  # in the task's plane, across the forearm
            how = ("across the forearm in the task's plane (the plane is across gravity): "
                   "the arm has no redundancy")
    if float(axis @ up) < 0.0:
        axis = -axis
    axis = axis / max(float(np.linalg.norm(axis)), 1e-12)
    out.choices.append(f"experiment A: the gauge pushes the elbow along "
                       f"{np.round(axis, 3).tolist()}, {how}")
    return axis


def _controller(robot: Robot, task: _Task, out: Scaffold) -> ControllerConfig:
    arm = robot.arm
    moves = task.moves > _MOVES * float(task.moves.max())
    mask = tuple(tuple(bool(v) for v in moves) for _ in task.rows)
    ws = arm.body.workspace()
    poses = robot.sample_poses(64, seed=1)
    gravity = np.max([np.abs(arm.body.gravity_torque(ws, q)) for q in poses], axis=0)
    inertia = np.max([np.diag(arm.body.dynamics(ws, q, np.zeros_like(q),
                                                arm.task_frame).mass_matrix)
                      for q in poses[:8]], axis=0)
    # joint stiffness of the baseline: the largest gravity torque deflects a joint 0.25 rad,
    # and a joint swings at no less than 1.5 Hz on it (an arm moving across gravity has none)
    K = np.maximum(gravity / 0.25, inertia * (2.0 * math.pi * 1.5) ** 2)
    K = np.maximum(K, 0.01 * float(K.max()))
    stiffness = tuple(_sig(k) for k in K)
    arms = np.abs(robot.geometry.kinematics_at(robot.home_pose_rad).jacobian)  # (m, n)
    squared = (arms**2).sum(axis=0)
    main = np.flatnonzero(moves)
    k_m = _sig(float(np.median(K[main] / np.maximum(squared[main], 1e-12))))
    posture = None
    if not moves.all():
        still = [j for j, m in zip(arm.joint_names, moves) if not m]
        # a spring as stiff as the baseline's: the posture of joints the task never moves
        posture = tuple(0.0 if m else s for m, s in zip(moves, stiffness))
        out.choices.append(f"posture spring in the task nullspace on {len(still)} joints the "
                           f"task point never moves ({', '.join(still[:6])}"
                           f"{', ...' if len(still) > 6 else ''}): the baseline's stiffness")
    hands = np.array([arm.hand_pose(q, ws)[0] for q in robot.sample_poses(_SAMPLES, seed=2)])
    anchors = _anchors(robot, robot.home_pose_rad)
    first = arm.joint_names[int(np.argmax(task.moves))]
    center = anchors[first]
    reach = float(np.linalg.norm(hands - center, axis=1).max())
    lo, hi = hands.min(axis=0) - 0.01, hands.max(axis=0) + 0.01
    workspace = WorkspaceConfig(center_m=_round(center), reach_m=math.floor(reach * 100) / 100,
                                box_min_m=_round(lo, 3), box_max_m=_round(hi, 3))
    out.choices.append(f"workspace: a sphere of the sampled reach {workspace.reach_m} m around "
                       f"'{first}' and the sampled hand box")
    return ControllerConfig(
        task=TaskConfig(rows=task.rows, mask=mask),
        gains=GainsConfig(nullspace_posture_nm_rad=posture),
        baselines=BaselinesConfig(joint_stiffness=JointStiffnessConfig(stiffness_nm_rad=stiffness,
                                                                       k=1e-5),
                                  muscle_stiffness=MuscleStiffnessConfig(stiffness_n_m=k_m)),
        workspace=workspace)


def _limits(robot: Robot) -> tuple[float, ActuatorConfig, float]:
    """(driver max tension [N], the mock's motor, its MuJoCo control range [N])."""
    peak = float(robot.f1_n.max())
    driver = math.ceil(_DRIVER_OVER_F1 * peak / 100.0) * 100.0
    m = _TEMPLATE_MOTOR
    per_amp = m.gear_efficiency * m.gear_ratio * m.torque_constant_nm_a / _WINCH_RADIUS_M
    current = math.ceil(_MOTOR_OVER_DRIVER * driver / per_amp * 10.0) / 10.0
    stall = per_amp * m.supply_voltage_v / m.terminal_resistance_ohm
    voltage = m.supply_voltage_v
    if stall < _MOTOR_OVER_DRIVER * driver:  # a stronger supply for a very strong muscle
        voltage = math.ceil(_MOTOR_OVER_DRIVER * driver * m.terminal_resistance_ohm / per_amp)
    motor = replace(m, current_limit_a=max(current, m.current_limit_a), supply_voltage_v=voltage,
                    timeout_tension_n=robot.hill.f_min_n)
    return driver, motor, math.ceil(1.2 * driver / 100.0) * 100.0


def _length_jumps(robot: Robot) -> list[tuple[str, str, float, float]]:
    """(muscle, joint, angle [rad], jump [m]) where a tendon's length jumps as one joint sweeps
    its range (but the margin the home pose keeps from the limits) from the home pose: its path
    flips to the other side of a wrap surface."""
    geo, arm = robot.geometry, robot.arm
    out: dict[str, tuple[str, str, float, float]] = {}
    for j, name in enumerate(arm.joint_names):
        lo, hi = arm.lower_rad[j], arm.upper_rad[j]
        margin = HOME_MARGIN * (hi - lo)  # where the poses are (the home pose's margin)
        grid = np.linspace(lo + margin, hi - margin, _JUMP_GRID)
        poses = np.tile(robot.home_pose_rad, (len(grid), 1))
        poses[:, j] = grid
        kin = [geo.kinematics_at(q) for q in poses]
        lengths = np.array([k.length_m for k in kin])
        arms = np.array([k.jacobian[:, j] for k in kin])
        step = grid[1] - grid[0]
        miss = np.abs(np.diff(lengths, axis=0) - 0.5 * (arms[1:] + arms[:-1]) * step)
        for i in np.flatnonzero(miss.max(axis=0) > _JUMP_M):
            k = int(np.argmax(miss[:, i]))
            jump = float(lengths[k + 1, i] - lengths[k, i])
            muscle = robot.muscle_names[i]
            if muscle not in out or abs(jump) > abs(out[muscle][3]):
                out[muscle] = (muscle, name, float(grid[k]), jump)
    return list(out.values())


def _safety(robot: Robot, out: Scaffold) -> str:
    template = config_root() / TEMPLATE / "safety.yaml"
    cfg = load(SafetyConfig, template)
    jumps = _length_jumps(robot)
    notes: dict[str, str] = {}
    if jumps:
        largest = max(abs(j[3]) for j in jumps)
        tolerance = max(cfg.consistency.tolerance_m, math.ceil(1.2 * largest * 1e3) / 1e3)
        cfg = replace(cfg, consistency=replace(cfg.consistency, tolerance_m=tolerance))
        listed = "; ".join(f"{m} {1e3 * d:+.1f} mm at {j} = {q:+.3f} rad"
                           for m, j, q, d in jumps)
        notes["consistency.tolerance_m"] = (f"musculo init: 1.2 x the largest jump of a tendon "
                                            f"length in the MJCF's geometry ({listed})")
        out.choices.append(f"tendon lengths that jump (a path flipping round its wrap surface) "
                           f"as one joint sweeps from home: {listed}; the consistency check's "
                           f"tolerance is {1e3 * tolerance:.0f} mm to let a jump of the model "
                           f"or the mock pass")
    return ("# Thresholds of the safety rules (musculo_control/safety), written by musculo init\n"
            "# from the planar arm's (the same modules and rates).\n" + dump(cfg, notes))


def _model_error(robot: Robot, template: ModelErrorConfig, out: Scaffold) -> ModelErrorConfig:
    geo = robot.geometry
    if not isinstance(geo, MujocoTendonGeometry):
        return template
    model = geo.model
    radii = [float(model.geom_size[g, 0]) for g in {int(model.wrap_objid[w])
             for t in geo.tendon_ids
             for w in range(model.tendon_adr[t], model.tendon_adr[t] + model.tendon_num[t])
             if int(model.wrap_type[w]) in (int(mujoco.mjtWrap.mjWRAP_SPHERE),
                                            int(mujoco.mjtWrap.mjWRAP_CYLINDER))}]
    if not radii:
        return template
    cap_mm = round(_ERROR_OVER_RADIUS * min(radii) * 1e3, 2)
    if cap_mm >= template.via_point_error_mm and cap_mm >= template.wrap_radius_error_mm:
        return template
    out.choices.append(f"mock model error: sites and wrap radii off by up to {cap_mm} mm, "
                       f"{100 * _ERROR_OVER_RADIUS:.0f} % of the smallest wrap radius a muscle "
                       f"passes ({1e3 * min(radii):.1f} mm)")
    return replace(template, via_point_error_mm=min(cap_mm, template.via_point_error_mm),
                   wrap_radius_error_mm=min(cap_mm, template.wrap_radius_error_mm))


def _hardware(robot: Robot, driver_max: float) -> str:
    """hardware.yaml: the template's rates, modules, driver and potentiometer reader (its text,
    comments kept), the driver's tension limit scaled, one potentiometer per joint centred on
    the ADC and one tendon entry per muscle."""
    text = (config_root() / TEMPLATE / "hardware.yaml").read_text(encoding="utf-8")
    head = ["# Hardware parameters (musculo init): raw <-> SI calibration, driver limits,",
            "# potentiometer reader. The actuator modules are the planar arm's; each",
            "# potentiometer's offset puts the middle of its joint's range at the middle of the",
            "# 12-bit ADC. Replace them with the measured values of a physical arm."]
    rates = text[text.index("rates:"):text.index("calibration:")]
    defaults = text[text.index("  potentiometer_defaults:"):text.index("  potentiometers:")]
    found = re.search(r"counts_per_rad:\s*([0-9.eE+-]+)", defaults)
    if found is None:
        raise ConfigError(str(config_root() / TEMPLATE / "hardware.yaml"),
                          "calibration.potentiometer_defaults.counts_per_rad", "a number")
    counts = float(found.group(1))
    arm = robot.arm
    lines = ["calibration:",
             f"  calibration_pose_rad: {scalar_list(robot.home_pose_rad)}  # encoders zeroed "
             f"here: the home pose [rad]", defaults.rstrip("\n"),
             "  potentiometers:                 # offset_counts: reading at q = 0 [counts]"]
    for name, lo, hi in zip(arm.joint_names, arm.lower_rad, arm.upper_rad):
        offset = round(2048.0 - counts * 0.5 * (lo + hi), 1)
        lines.append(f"    - {{joint: {name}, offset_counts: {offset}}}")
    tendon_defaults = text[text.index("  tendon_defaults:"):text.index("  tendons:")]
    lines += [tendon_defaults.rstrip("\n"), "  tendons:"]
    lines += [f"    - {{actuator_id: {a}}}" for a in robot.actuator_ids]
    rest = text[text.index("driver:"):]
    rest = re.sub(r"(max_tension_n:\s*)[0-9.eE+-]+(\s*#)?.*",
                  lambda m: f"{m.group(1)}{driver_max}          # {_DRIVER_OVER_F1} x the "
                            f"largest peak force {robot.f1_n.max():.0f} N [N]", rest, count=1)
    rest = re.sub(r"(rate_limit_n_s:\s*)[0-9.eE+-]+(\s*#)?.*",
                  lambda m: f"{m.group(1)}{20.0 * driver_max}        # the full range in "
                            f"50 ms [N/s]", rest, count=1)
    return "\n".join([*head, rates.rstrip("\n"), *lines]) + "\n" + rest


def scalar_list(values: npt.ArrayLike) -> str:
    return "[" + ", ".join(scalar(v) for v in _round(values)) + "]"


def _reliability(robot: Robot, direction: FloatArray, controller: ControllerConfig) -> str:
    template = config_root() / TEMPLATE / "reliability.yaml"
    faults = load_section(FaultMatrixConfig, template, "faults", RELIABILITY_SECTIONS)
    soak = load_section(SoakConfig, template, "soak", RELIABILITY_SECTIONS)
    arm = robot.arm
    hand0 = arm.hand_pose(robot.home_pose_rad)[0]
    move = 0.06 * direction
    stuck = arm.joint_names[0]
    if robot.poses is not None:
        try:
            q = robot.poses.solve(robot.home_pose_rad, hand0 + move, None, what="faults").q_rad
            stuck = arm.joint_names[int(np.argmax(np.abs(q - robot.home_pose_rad)))]
        except PoseError:
            pass
    ws = controller.workspace
    away = hand0 - np.asarray(ws.center_m)
    away = away / max(float(np.linalg.norm(away)), 1e-9)
    injection = replace(faults.injection, stuck_joint=stuck, nan_joint=arm.joint_names[0],
                        out_of_range_joint=arm.joint_names[0],
                        goal_offset_m=_round(away * (ws.reach_m + 0.25), 3))
    faults = replace(faults, move_m=_round(move, 3), injection=injection)
    notes = {"faults.move_m": "musculo init: 6 cm along experiment B's direction",
             "faults.injection.stuck_joint": "musculo init: the joint that moves most in the move",
             "faults.injection.goal_offset_m": "musculo init: 25 cm beyond the workspace's reach"}
    return ("# The fault matrix (musculo simulate faults) and the soak (musculo soak), written by\n"
            "# musculo init.\n" + dump_sections({"faults": faults, "soak": soak}, notes))


def _trajectory_file(direction: FloatArray) -> str:
    d = _round(0.10 * direction, 3)
    return ("# A 10 cm reach and back, relative to where the hand starts (goal_node mode:\n"
            "# trajectory; written by musculo init along experiment B's direction).\n"
            "frame_id: world\nrelative: true\nloop: false\nwaypoints:\n"
            "  - {time_s: 0.0, position_m: [0.0, 0.0, 0.0]}\n"
            f"  - {{time_s: 2.0, position_m: {list(d)}}}\n"
            f"  - {{time_s: 4.0, position_m: {list(d)}}}\n"
            "  - {time_s: 6.0, position_m: [0.0, 0.0, 0.0]}\n")


def _bench(robot: Robot) -> str:
    text = (config_root() / TEMPLATE / "bench.yaml").read_text(encoding="utf-8")
    if robot.n_muscles < 30:
        return text
    # a large arm: its own tick targets (the template's are a 15-muscle arm's)
    text = text.replace("tick_p50_ms: 0.12 ", "tick_p50_ms: 0.3  ")
    text = text.replace("tick_p99_ms: 0.25 ", "tick_p99_ms: 0.5  ")
    text = text.replace("snapshot_p99_ms: 0.2 ", "snapshot_p99_ms: 0.5 ")
    text = text.replace("fused_p99_ms: 0.5 ", "fused_p99_ms: 1.0 ")
    return text


def _ros_params() -> str:
    text = (config_root() / TEMPLATE / "ros_params.yaml").read_text(encoding="utf-8")
    start = text.index("trajectory_file:")
    end = text.index("\n", start)
    line = text[start:end]
    return text[:start] + line.replace(line.split()[1], "trajectories/reach_10cm.yaml") + text[end:]


def write_config(mjcf: Path, folder: Path, *, task_frame: str | None = None,
                 home: str | None = None, move_m: float = 0.2,
                 overwrite: bool = False) -> Scaffold:
    """Write a config folder for the MJCF at ``mjcf`` into ``folder`` (module docstring).

    Without ``home``, the home pose is the first keyframe or qpos0; when the experiments
    cannot all start from there (an arm stretched out on its limits), the middle of every
    joint's range is tried too, and the pose that sets up more of them is kept (said in
    :attr:`Scaffold.choices`). Refuses a folder that already holds a robot.yaml unless
    ``overwrite``.
    """
    folder = Path(folder)
    if (folder / "robot.yaml").exists() and not overwrite:
        raise ConfigError(str(folder / "robot.yaml"), "<file>",
                          "a folder without a config (or --force to overwrite it)", "exists")
    folder.mkdir(parents=True, exist_ok=True)
    first = _write_once(Path(mjcf), folder, task_frame, home, move_m)
    if home is not None or (not first.switched_off and first.move_m >= move_m):
        return first
    middle = _write_once(Path(mjcf), folder, task_frame, "middle", move_m)
    if _score(middle) > _score(first):
        was = next(c for c in first.choices if c.startswith("home pose:"))
        k = next(i for i, c in enumerate(middle.choices) if c.startswith("home pose:"))
        middle.choices[k] = (f"home pose: the middle of every joint's range, where "
                             f"{_runs(middle)} (from the "
                             f"{was.split(': ', 1)[1].split(' (')[0]} pose {_runs(first)})")
        return middle
    return _write_once(Path(mjcf), folder, task_frame, home, move_m)


def _score(scaffold: Scaffold) -> tuple[int, float]:
    """How many experiment runs a folder sets up (B counts once per start pose), then how long
    B's move is."""
    return scaffold.runs, scaffold.move_m


def _runs(scaffold: Scaffold) -> str:
    move = f", B a {100 * scaffold.move_m:.3g} cm move" if scaffold.move_m else ""
    return f"{scaffold.runs} experiment runs can start{move}"


def _write_once(mjcf: Path, folder: Path, task_frame: str | None, home: str | None,
                move_m: float) -> Scaffold:
    out = Scaffold(folder)
    s = survey(mjcf, home=home, task_frame=task_frame)
    out.choices.append(f"joints: {len(s.joints)} independent"
                       + (f", {len(s.coupled)} coupled by equality constraints" if s.coupled
                          else ""))
    out.choices.append(f"muscles: {s.muscles_reason}")
    out.choices.append(f"task frame '{s.task_frame}': {s.task_reason}")
    out.choices.append(f"home pose: {s.home_reason}")
    first = _first_robot(s, folder)
    muscles = _muscles(s)
    _write(out, "muscles.yaml", "# The muscles (musculo init): each is the MJCF tendon named in "
           "'tendon' (default: its own name);\n# its peak force is its muscle actuator's.\n"
           + dump(muscles))
    _write(out, "robot.yaml", _robot_text(first, s))
    try:
        robot = load_robot(folder)
    except MusculoError as exc:
        head = ConfigError(str(mjcf), "<robot>", f"an arm the controller can describe: the "
                           f"robot.yaml and muscles.yaml written from it do not load, for the "
                           f"reasons below (edit them, then check with musculo model-report "
                           f"--config {folder})")
        if not isinstance(exc, ConfigError):
            raise ConfigErrors([head, ConfigError(str(folder), "<robot>", "a robot that loads",
                                                  str(exc))]) from exc
        found = exc.errors if isinstance(exc, ConfigErrors) else (exc,)
        unique = list({str(e): e for e in found}.values())  # each reason once
        raise ConfigErrors([head, *unique]) from exc
    task = _task(robot, out)
    poses, _ = _poses_config(robot, task, out)
    robot_cfg = replace(first, poses=poses)
    _write(out, "robot.yaml", _robot_text(robot_cfg, s))
    robot = load_robot(folder)
    controller = _controller(robot, task, out)
    _write(out, "controller.yaml", "# Controller parameters (musculo init; paper Table I).\n"
           + dump(controller))
    exp, named, direction = _experiments(robot, task, move_m, out)
    robot_cfg = replace(robot_cfg, poses=replace(poses, named=tuple(named)))
    _write(out, "robot.yaml", _robot_text(robot_cfg, s))
    robot = load_robot(folder)
    notes = {f"{e}": f"switched off: {why.split(': ', 1)[1]}" for e, why in
             ((w.split(":")[0], w) for w in out.switched_off)}
    _write(out, "experiments.yaml", "# The paper's experiments on the mock arm (musculo init).\n"
           + "".join(f"# {w}\n" for w in out.switched_off) + dump(exp, notes))
    driver_max, motor, tension_limit = _limits(robot)
    _write(out, "hardware.yaml", _hardware(robot, driver_max))
    template = load(MockArmConfig, config_root() / TEMPLATE / "mock_arm.yaml")
    mock = replace(template,
                   physics=PhysicsConfig(tendon_frictionloss_n=1.0,
                                         tension_limit_n=tension_limit),
                   actuator=motor, elbow_link=poses.elbow_frame, elbow_point_m=(0.0, 0.0, 0.0),
                   startup=StartupConfig(release_after_s=0.1),
                   model_error=_model_error(robot, template.model_error, out))
    out.choices.append(f"limits: driver {driver_max:.0f} N ({_DRIVER_OVER_F1} x the largest "
                       f"peak force {robot.f1_n.max():.0f} N); the mock's motor "
                       f"{motor.current_limit_a} A at {motor.supply_voltage_v} V delivers "
                       f"{_MOTOR_OVER_DRIVER} x that; the MJCF's own joint damping is kept")
    _write(out, "mock_arm.yaml", "# The mock arm (musculo init): MuJoCo physics from the MJCF "
           "itself, its muscle actuators\n# replaced by tension actuators; the MJCF's joint "
           "damping, friction and armature are kept\n# (the per-joint lists are empty).\n"
           + dump(mock))
    _write(out, "safety.yaml", _safety(robot, out))
    _write(out, "reliability.yaml", _reliability(robot, direction, controller))
    _write(out, "bench.yaml", _bench(robot))
    _write(out, "ros_params.yaml", _ros_params())
    (folder / "trajectories").mkdir(exist_ok=True)
    _write(out, "trajectories/reach_10cm.yaml", _trajectory_file(direction))
    for name in COPIED:
        shutil.copyfile(config_root() / TEMPLATE / name, folder / name)
        out.files.append(name)
    return out


def _robot_text(cfg: RobotConfig, s: Survey) -> str:
    head = ["# The robot (musculo init): the MJCF, its independent joints in MuJoCo's order,",
            "# the task frame, the home pose and the experiments' named poses.",
            "# Base frame: MuJoCo's world."]
    if s.coupled:
        head.append("# Coupled joints (not coordinates of their own; they follow these):")
        head += [f"#   {line}" for line in s.coupled]
    head.append(f"# Task frame: {s.task_reason}.")
    head.append(f"# Home pose: {s.home_reason}.")
    return "\n".join(head) + "\n" + dump(cfg)


def _write(out: Scaffold, name: str, text: str) -> None:
    path = out.folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if name not in out.files:
        out.files.append(name)
