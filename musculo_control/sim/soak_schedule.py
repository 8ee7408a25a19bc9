"""What the soak does (``reliability.yaml`` key ``soak``, seeded): the hand goal moves (minimum
jerk) to the hand pose of a random joint pose near the start pose (so it is reachable, and inside
the workspace or drawn again), holds there, and in some holds a hand-held gauge pushes the elbow
in a random horizontal direction; every ``rest_every_s`` the goal returns to the start pose and
holds quietly for ``rest_s``: the drift check. :mod:`musculo_control.sim.soak` runs and measures
it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.config.parser import spec
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.control.goal import HandGoal, check_goal
from musculo_control.control.minimum_jerk import minimum_jerk_profile
from musculo_control.errors import ConfigError
from musculo_control.model.robot import Robot
from musculo_control.sim.mock_arm import MockArm
from musculo_control.sim.reliability_config import load_reliability_section
from musculo_control.sim.rig import Rig
from musculo_control.sim.setup import check_start_pose

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class SoakConfig:
    """``reliability.yaml`` key ``soak``."""

    controller: str = spec("osc", choices=CONTROLLER_NAMES, doc="controller under test")
    duration_s: float = spec(gt=0.0, doc="simulated time [s]")
    seed: int = spec(0, ge=0, doc="seed of the goals and pushes")
    start_pose: str = spec("home", doc="'home' or a named pose; also the rest goal")
    pose_spread_rad: float = spec(gt=0.0, doc="random goal poses: start pose + U(-s, s) per "
                                              "joint [rad]")
    joint_margin_rad: float = spec(ge=0.0, doc="random poses stay this far inside the limits "
                                               "[rad]")
    move_s: tuple[float, ...] = spec(length=2, doc="range of move durations [s]")
    hold_s: tuple[float, ...] = spec(length=2, doc="range of hold durations [s]")
    push_probability: float = spec(ge=0.0, le=1.0, doc="chance that a hold has a push [-]")
    push_depth_m: tuple[float, ...] = spec(length=2, doc="range of gauge travel after touching "
                                                         "[m]")
    push_s: float = spec(gt=0.0, doc="time of the gauge's travel [s]")
    push_hold_s: tuple[float, ...] = spec(length=2, doc="range of time the gauge then stays [s]")
    rest_every_s: float = spec(gt=0.0, doc="a rest at the start goal this often [s]")
    rest_s: float = spec(gt=0.0, doc="length of a rest [s]")
    window_s: float = spec(gt=0.0, doc="rest and hold figures are over the last this of each "
                                       "[s]")
    memory_every_s: float = spec(gt=0.0, doc="memory sample period; also the progress line [s]")
    warmup_s: float = spec(ge=0.0, doc="the memory baseline is taken after this [s]")
    acknowledge_after_s: float = spec(gt=0.0, doc="the soak's operator acknowledges a latched "
                                                  "fault after this (counted) [s]")

    def check(self, file: str, key: str) -> None:
        for name in ("move_s", "hold_s", "push_depth_m", "push_hold_s"):
            lo, hi = getattr(self, name)
            if not 0.0 <= lo <= hi:
                raise ConfigError(file, f"{key}.{name}", "[low, high] with 0 <= low <= high",
                                  [lo, hi])
        if self.window_s > min(self.rest_s, self.hold_s[0]):
            raise ConfigError(file, f"{key}.window_s", "at most rest_s and the shortest hold",
                              self.window_s)
        if self.move_s[0] <= 0.0:
            raise ConfigError(file, f"{key}.move_s", "a positive shortest move", self.move_s[0])


def load_soak_config(config_dir: Path, robot: Robot,
                     overrides: dict[str, Any] | None = None) -> SoakConfig:
    """``reliability.yaml`` ``soak``, checked against the robot (start pose)."""
    cfg = load_reliability_section(Path(config_dir), "soak", SoakConfig, overrides)
    check_start_pose(robot, cfg.start_pose, str(Path(config_dir) / "reliability.yaml"),
                     "soak.start_pose")
    return cfg


def _draw(rng: np.random.Generator, low_high: tuple[float, ...]) -> float:
    """A uniform draw from a [low, high] pair of the config."""
    return float(rng.uniform(low_high[0], low_high[1]))


class Segment:
    """One piece of the schedule: a move, a hold (maybe with a push) or a rest."""

    def __init__(self, kind: str, t0: float, t1: float, start: tuple[FloatArray, FloatArray],
                 end: tuple[FloatArray, FloatArray],
                 push: tuple[float, float, FloatArray, float] | None = None,
                 to_rest: bool = False) -> None:
        self.kind, self.t0, self.t1 = kind, t0, t1
        self.to_rest = to_rest  # a move back to the start goal, before a rest
        self.p0, self.r0 = start
        self.p1, self.r1 = end
        self.turn = pin.log3(self.r0.T @ self.r1)  # (3,) rotation vector of the move [rad]
        self.push = push  # (t_touch, t_release, axis, depth) or None

    def goal(self, t: float) -> HandGoal:
        """The hand goal of this segment at time ``t`` [s] (a move follows the minimum-jerk
        profile)."""
        if self.kind != "move":
            return HandGoal.hold(self.p1, self.r1)
        h, hd, hdd = minimum_jerk_profile(t - self.t0, self.t1 - self.t0)
        d = self.p1 - self.p0
        return HandGoal(self.p0 + h * d, hd * d, hdd * d, self.r0 @ pin.exp3(h * self.turn))


class SoakSchedule:
    """Random reachable goals and pushes, generated as time goes (constant memory)."""

    def __init__(self, rig: Rig, cfg: SoakConfig, q0: FloatArray) -> None:
        self.cfg = cfg
        self.rig = rig
        self.rng = np.random.default_rng(cfg.seed)
        self.q0 = q0
        self.home = rig.robot.arm.hand_pose(q0)
        robot = rig.robot
        self.lo = robot.arm.lower_rad + cfg.joint_margin_rad
        self.hi = robot.arm.upper_rad - cfg.joint_margin_rad
        self.workspace = rig.setup.controller_config.workspace
        self.radius = rig.setup.mock_config.gauge.contact_radius_m
        self.next_rest = cfg.rest_every_s
        self.seg = Segment("rest", 0.0, cfg.rest_s, self.home, self.home)
        self.rests = 0
        self.tip0: FloatArray | None = None

    def _random_target(self) -> tuple[FloatArray, FloatArray]:
        cfg = self.cfg
        for _ in range(1000):
            q = np.clip(self.q0 + self.rng.uniform(-cfg.pose_spread_rad, cfg.pose_spread_rad,
                                                   self.q0.shape), self.lo, self.hi)
            x, rot = self.rig.robot.arm.hand_pose(q)
            if check_goal(HandGoal.hold(x, rot), self.workspace) is None:
                return x, rot
        raise ConfigError("reliability.yaml", "soak.pose_spread_rad",
                          "poses whose hand lies inside controller.yaml workspace",
                          cfg.pose_spread_rad)

    def _advance(self, t: float) -> None:
        cfg, rng = self.cfg, self.rng
        while t >= self.seg.t1:
            prev = self.seg
            here = (prev.p1, prev.r1)
            t0 = prev.t1
            if prev.kind == "move":
                if prev.to_rest:
                    self.seg = Segment("rest", t0, t0 + cfg.rest_s, here, here)
                    self.rests += 1
                else:
                    duration = _draw(rng, cfg.hold_s)
                    push = None
                    if rng.random() < cfg.push_probability:
                        angle = float(rng.uniform(0.0, 2.0 * math.pi))
                        axis = np.array([math.cos(angle), math.sin(angle), 0.0])
                        t_touch = t0 + 0.5 * (duration - cfg.window_s) * float(rng.random())
                        t_release = t_touch + cfg.push_s + _draw(rng, cfg.push_hold_s)
                        push = (t_touch, t_release, axis, _draw(rng, cfg.push_depth_m))
                        # the quiet window at the end of the hold starts after the release
                        duration = max(duration, t_release - t0 + cfg.window_s)
                    self.seg = Segment("hold", t0, t0 + duration, here, here, push)
            else:
                to_rest = t0 >= self.next_rest
                if to_rest:
                    self.next_rest += cfg.rest_every_s
                target = self.home if to_rest else self._random_target()
                self.seg = Segment("move", t0, t0 + _draw(rng, cfg.move_s), here, target,
                                   to_rest=to_rest)

    def goal_at(self, t: float) -> HandGoal:
        """The hand goal at time ``t`` [s], advancing the schedule as time passes."""
        self._advance(t)
        return self.seg.goal(t)

    def step_hook(self, t: float, mock: MockArm) -> None:
        """Moves the gauge during a push."""
        self._advance(t)
        push = self.seg.push
        if push is None or not push[0] <= t < push[1]:
            if self.tip0 is not None:
                mock.clear_gauge()
                self.tip0 = None
            return
        t_touch, _, axis, depth = push
        if self.tip0 is None:
            self.tip0 = mock.elbow_position_m - self.radius * axis
        s = min((t - t_touch) / self.cfg.push_s, 1.0)
        mock.set_gauge(self.tip0 + s * depth * axis, axis)

    def quiet(self, t: float) -> str:
        """'rest' or 'hold' when ``t`` lies in the quiet window at the end of a rest or a
        hold without a push in it, else ''."""
        seg = self.seg
        if seg.kind in ("rest", "hold") and seg.t1 - self.cfg.window_s <= t < seg.t1:
            return seg.kind
        return ""
