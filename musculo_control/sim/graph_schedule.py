"""What a client sends, and when, to run one of the paper's experiments over the node graph
(ROS-free; ``musculo experiment --graph`` sends it, :mod:`musculo_control.nodes.experiment_client`).

A lab with the robot runs an experiment as this schedule says:

1. **To the start pose** (:class:`StartMove`): switch to eq. 16 (``joint-stiffness``), send joint
   goals along a minimum-jerk joint path from where the arm is to the experiment's start pose
   (``experiments.yaml`` ``graph``), and hold it until every joint is there and still;
2. **the switch** to the experiment's controller (bumpless: it starts from the tensions in
   force, holding the hand where it is);
3. **the run** (:class:`RunSchedule`): the experiment's hand goals (held, or the minimum-jerk
   move of B with its feed-forward), a joint-space baseline's joint goals (B's joint path), and
   for A the gauge's tip pose along its axis; times from the run's start, as on the runner.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from musculo_control.control.goal import HandGoal
from musculo_control.control.minimum_jerk import minimum_jerk
from musculo_control.sim.experiments import (
    experiment_duration_s,
    gauge_axis,
    gauge_tip_progress,
    trajectory_goal_at,
    trajectory_joint_path,
)
from musculo_control.sim.setup import GraphRunConfig, Setup, experiment_config, start_pose

FloatArray = npt.NDArray[np.float64]

#: The controller that brings the arm to a start pose (it takes joint goals).
MOVER = "joint-stiffness"
#: The controllers that take joint goals (paper eq. 16-17).
BASELINES = ("joint-stiffness", "muscle-stiffness")


class StartMove:
    """The minimum-jerk joint path from ``q_from_rad`` to ``q_to_rad``: its peak joint speed
    ``config.move_speed_rad_s`` (15/8 of distance over duration), at least ``move_min_s``."""

    def __init__(self, q_from_rad: npt.ArrayLike, q_to_rad: npt.ArrayLike,
                 config: GraphRunConfig) -> None:
        self.q_from = np.array(q_from_rad, dtype=float)
        self.q_to = np.array(q_to_rad, dtype=float)
        self.config = config
        far = float(np.abs(self.q_to - self.q_from).max())
        self.duration_s = max(config.move_min_s, 1.875 * far / config.move_speed_rad_s)
        self._shift = np.zeros_like(self.q_to)  # the holding goal's shift [rad]

    def joint_goal(self, t_s: float) -> FloatArray:
        """The joint goal ``t_s`` [s] after the move began (the pose itself after it)."""
        return minimum_jerk(self.q_from, self.q_to, self.duration_s, t_s)[0]

    def holding_goal(self, q_rad: npt.ArrayLike, dt_s: float) -> FloatArray:
        """The joint goal while holding the pose, given the joints ``q_rad`` measured ``dt_s``
        [s] after the last call: the pose shifted by the integral of its error
        (``reach_gain_per_s``, at most ``reach_correction_rad`` per joint), so that eq. 16's
        sag under gravity and the model's error is taken out."""
        cfg = self.config
        self._shift = np.clip(self._shift + cfg.reach_gain_per_s * dt_s
                              * (self.q_to - np.asarray(q_rad)),
                              -cfg.reach_correction_rad, cfg.reach_correction_rad)
        return self.q_to + self._shift

    def reached(self, q_rad: npt.ArrayLike, qd_rad_s: npt.ArrayLike) -> bool:
        """Every joint within ``reach_tolerance_rad`` of the pose and slower than
        ``reach_speed_rad_s``."""
        cfg = self.config
        return bool(np.abs(np.asarray(q_rad) - self.q_to).max() <= cfg.reach_tolerance_rad
                    and np.abs(np.asarray(qd_rad_s)).max() <= cfg.reach_speed_rad_s)


class RunSchedule:
    """The run of one experiment (after the switch): ``duration_s`` long, its hand goal and a
    joint-space baseline's joint goal at each time from the run's start, and A's gauge tip;
    the runner's own definitions (:mod:`musculo_control.sim.experiments`)."""

    def __init__(self, setup: Setup, experiment: str, controller: str,
                 pose: str | None = None) -> None:
        self.setup, self.experiment, self.controller = setup, experiment, controller
        cfg = experiment_config(setup, experiment)
        self.config = cfg
        chosen = pose if pose is not None else getattr(cfg, "start_pose", None)
        #: the start pose's name
        self.pose: str = chosen if chosen is not None else cfg.start_poses[0]
        self.q_start = start_pose(setup.robot, self.pose)
        self.x0, self.rotation0 = setup.robot.arm.hand_pose(self.q_start)
        baseline = controller in BASELINES
        self._goal_at: Callable[[float], HandGoal] | None = None
        self._joint_path: Callable[[float], FloatArray] | None = None
        self.gauge_axis: FloatArray | None = None
        if experiment == "disturbance":
            self.gauge_axis = gauge_axis(cfg)
            self.contact_radius_m = setup.mock_config.gauge.contact_radius_m
        elif experiment == "trajectory":
            self._goal_at = trajectory_goal_at(cfg, self.rotation0)
            if baseline:
                self._joint_path = trajectory_joint_path(setup, self.pose)
        #: the run's length from its t = 0 [s], as the runner runs it
        self.duration_s = experiment_duration_s(setup, experiment)
        #: whether the controller tracks the goals' orientation: B runs with its orientation
        #: stiffness off (``orientation_gain_s2``: 0), which the QP node does by dropping the
        #: goal's orientation (its ``use_goal_orientation``), the orientation damping kept as
        #: in the runner's; another gain than controller.yaml's cannot be set over the graph
        self.track_orientation = True
        if experiment == "trajectory":
            kr = float(cfg.orientation_gain_s2)
            self.track_orientation = kr != 0.0
            if kr not in (0.0, float(setup.controller_config.gains.kr_s2)):
                raise ValueError(
                    f"experiments.yaml trajectory.orientation_gain_s2 is {kr:g}: over the node "
                    f"graph it can be 0 (orientation feedback off) or controller.yaml's "
                    f"gains.kr_s2 ({setup.controller_config.gains.kr_s2:g})")
        #: whether the run's t = 0 waits for the hand to be at its first goal and still
        #: (``graph.settle_tolerance_m``): not for C, whose drift from the start pose is what
        #: it scores (the runner starts it there at rest; the switch leaves the arm so)
        self.settles = experiment != "nullspace"
        self._held = HandGoal.hold(self.x0, self.rotation0)
        self._baseline = baseline

    def hand_goal(self, t_s: float) -> HandGoal:
        """The hand goal at ``t_s`` [s from the run's start] (with B's feed-forward)."""
        return self._held if self._goal_at is None else self._goal_at(t_s)

    def moving(self, t_s: float) -> bool:
        """Whether the goals change at ``t_s`` (B's move, A's push): sent at the goal rate."""
        cfg = self.config
        if self.experiment == "trajectory":
            return cfg.settle_s <= t_s <= cfg.settle_s + cfg.move_s
        if self.experiment == "disturbance":
            return cfg.settle_s <= t_s <= cfg.settle_s + cfg.push_s
        return False

    def joint_goal(self, t_s: float) -> FloatArray | None:
        """A joint-space baseline's joint goal at ``t_s`` (None: the controller takes hand
        goals)."""
        if not self._baseline:
            return None
        return self.q_start if self._joint_path is None else self._joint_path(t_s)

    def gauge_tip(self, t_s: float, elbow_at_touch_m: FloatArray) -> FloatArray | None:
        """A's gauge tip at ``t_s`` (None before the touch): set against the arm's surface at
        the elbow where it was at the touch, then along the axis."""
        if self.gauge_axis is None or t_s < self.config.settle_s:
            return None
        return (np.asarray(elbow_at_touch_m) - self.contact_radius_m * self.gauge_axis
                + float(gauge_tip_progress(self.config, t_s)) * self.gauge_axis)
