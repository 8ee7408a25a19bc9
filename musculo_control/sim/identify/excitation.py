"""The excitation tour (``experiments.yaml`` ``excitation``): what a lab records so that
``musculo identify`` can tell its parameters apart (doc/identify.md, "What to record").

From the start pose the hand goal visits each waypoint in turn along minimum-jerk moves (with
their feed-forward), holds there, and returns to the start: holds over poses whose gravity
torques differ pin the link masses, brisk moves the actuators' lag and the joints' damping,
slow moves and the reversals between them the dry friction. The controller moves the arm
(the QP keeps every tension within its limits, the supervisor every stop), so the tour runs
over the node graph as an experiment's run does (:class:`ExcitationSchedule` is read as a
:class:`~musculo_control.sim.graph_schedule.RunSchedule` is), and on the runner first
(:func:`rehearse`), where a tour that stops the arm or leaves the joints' range is caught
before it reaches the robot.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from musculo_control.control.goal import HandGoal
from musculo_control.control.minimum_jerk import minimum_jerk
from musculo_control.errors import InputError
from musculo_control.sim.setup import ExcitationConfig, Setup, start_pose

FloatArray = npt.NDArray[np.float64]

#: the controller that runs the tour (it takes hand goals)
CONTROLLER = "osc"


def excitation_config(setup: Setup) -> ExcitationConfig:
    """The robot's tour, or :class:`InputError` saying where to set one up."""
    cfg = setup.experiments.excitation
    if cfg is None:
        raise InputError("excitation", f"a section 'excitation' in "
                                       f"{setup.robot.config_dir / 'experiments.yaml'}", "none")
    return cfg


class ExcitationSchedule:
    """The tour's hand goal at each time from its start (the run's t = 0), the hand's
    orientation held as at the start pose."""

    experiment = "excitation"
    controller = CONTROLLER
    gauge_axis = None
    #: the run starts with the hand at its first goal, as a hand-goal experiment's does
    settles = True
    #: the orientation tracked (controller.yaml's gains): with it off, as experiment B runs,
    #: the shipped tour took the wrist to its limit on the runner
    track_orientation = True

    def __init__(self, setup: Setup) -> None:
        cfg = excitation_config(setup)
        self.config = cfg
        self.pose: str = cfg.start_pose
        self.q_start = start_pose(setup.robot, cfg.start_pose)
        self.x0, self.rotation0 = setup.robot.arm.hand_pose(self.q_start)
        points = [self.x0, *(self.x0 + np.asarray(w, dtype=float) for w in cfg.waypoints_m),
                  self.x0]
        #: (start time [s], move duration [s], from, to) of each move
        self.moves: list[tuple[float, float, FloatArray, FloatArray]] = []
        t = cfg.settle_s
        for i, (a, b) in enumerate(zip(points[:-1], points[1:])):
            move_s = float(cfg.move_s[i % len(cfg.move_s)])
            self.moves.append((t, move_s, a, b))
            t += move_s + cfg.hold_s
        #: the tour's length from its t = 0 [s]
        self.duration_s = t
        self._held = [HandGoal.hold(p, self.rotation0) for p in points]

    def _index(self, t_s: float) -> int:
        """The move under way or last begun at ``t_s`` (-1: before the first)."""
        index = -1
        for i, (start, _, _, _) in enumerate(self.moves):
            if t_s >= start:
                index = i
        return index

    def hand_goal(self, t_s: float) -> HandGoal:
        """The hand goal at ``t_s`` [s from the tour's start], with the move's feed-forward;
        a goal at rest is the same object throughout its hold (sent once)."""
        i = self._index(t_s)
        if i < 0:
            return self._held[0]
        start, move_s, a, b = self.moves[i]
        if t_s - start >= move_s:
            return self._held[i + 1]
        pos, vel, acc = minimum_jerk(a, b, move_s, t_s - start)
        return HandGoal(pos, vel, acc, self.rotation0)

    def moving(self, t_s: float) -> bool:
        """Whether a move is under way at ``t_s``: goals then go at the goal rate."""
        i = self._index(t_s)
        return i >= 0 and t_s - self.moves[i][0] <= self.moves[i][1]

    def joint_goal(self, t_s: float) -> None:
        """No joint goals: the tour is the hand's."""
        return None


@dataclass(frozen=True)
class Rehearsal:
    """The tour run on the runner's mock arm: whether it may go to the robot."""

    ticks_in_a_stop: int  # control ticks not running (a fault's stop)
    max_tracking_error_m: float  # the hand's largest distance from its goal [m]
    joint_margin_rad: float  # the joints' smallest distance from their limits [rad]
    closest_joint: str  # the joint that came that close, and when on the tour [s]
    closest_at_s: float
    largest_tension_n: float  # the largest tension commanded [N]
    tension_limit_n: float  # the actuators' limit [N]

    @property
    def ok(self) -> bool:
        return self.ticks_in_a_stop == 0 and self.joint_margin_rad > 0.0 \
            and self.largest_tension_n < self.tension_limit_n

    def describe(self) -> str:
        return (f"{self.ticks_in_a_stop} ticks in a stop, hand at most "
                f"{1e3 * self.max_tracking_error_m:.1f} mm from its goal, joints at least "
                f"{self.joint_margin_rad:.3f} rad inside their limits ({self.closest_joint} "
                f"at {self.closest_at_s:.1f} s), tensions at most "
                f"{self.largest_tension_n:.0f} N of {self.tension_limit_n:.0f} N")


def rehearse(setup: Setup) -> Rehearsal:
    """The tour on the runner (the mock arm with its model error, the controller as the QP
    node runs it): :class:`Rehearsal`."""
    from musculo_control.sim.experiments import Bench

    schedule = ExcitationSchedule(setup)
    bench = Bench(setup, CONTROLLER, setup.controller_config)
    bench.reset(schedule.q_start, schedule.hand_goal(0.0))
    bench.run(schedule.duration_s, schedule.hand_goal)
    rec, arm = bench.recorder, setup.robot.arm
    q = rec.array("q_rad")
    inside = np.minimum(q - arm.lower_rad, arm.upper_rad - q)  # (ticks, n) [rad]
    tick, joint = np.unravel_index(int(np.argmin(inside)), inside.shape)
    return Rehearsal(len(bench.loop.faults), float(rec.array("hand_error_m").max()),
                     float(inside[tick, joint]), arm.joint_names[joint],
                     float(rec.time_s[tick]), float(rec.array("tension_command_n").max()),
                     float(bench.rig.tension_limit_n))


def tour_settings(setup: Setup) -> dict[str, object]:
    """The tour's settings as ``experiments.yaml`` dotted keys -> values, for its bag's
    :class:`~musculo_control.sim.rosbag_log.BagRun`."""
    return {f"excitation.{k}": v
            for k, v in dataclasses.asdict(excitation_config(setup)).items()}
