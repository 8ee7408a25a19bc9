"""Fault injection for the ROS-free loop: in the mock arm, in the message streams, in the
controller, each switched on for a time window by name.

One :class:`FaultInjector` carries one fault (a name of :data:`FAULTS`) active in
``[start_s, end_s)``. It plugs into three places:

- the mock arm (``mock.fault_hook``, a :class:`~musculo_control.sim.mock_arm.MockFaultHook`):
  a potentiometer stuck, NaN or out of range; a tendon that snaps (no force, the load cell reads
  zero, the free winch winds the encoder away); an actuator that saturates below its command;
- the loop's streams (``ClosedLoop(faults=...)``, a
  :class:`~musculo_control.sim.runner.StreamFaults`): potentiometer or tendon messages that stop,
  a delayed or reordered sensor stream, dynamics snapshots that stop, commands that stop, a hand
  goal outside the workspace or with NaN;
- the controller (:meth:`FaultInjector.wrap`): a QP held to one iteration (a real OSQP failure),
  a command with NaN or far above the actuator's limit;
- the writers of the command streams (the runner's
  :meth:`~musculo_control.sim.runner.ClosedLoop.watch_writers`): a stray node that publishes
  ``muscle_commands`` or ``hw/tendon_commands`` besides the loop's own writer
  (:meth:`FaultInjector.stray_writers`, :meth:`FaultInjector.stray_command`);
- the operator: the operator stop set, and released when the fault ends
  (:meth:`FaultInjector.operator_stop`).

It records the fault's *onset*: the instant the fault first touched the data, which is
``start_s`` for a physical fault (the tendon snaps then) and, for a message stream, the moment
its first missing, late or corrupted message was due. Detection times count from the onset.

Every hook is called with the stamp time of the loop; ``start_s``, ``end_s`` and the onset
count from :attr:`FaultInjector.origin_s`, the stamp of time 0 of the run (the loop sets it
when its start-up ends).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec
from musculo_control.control.goal import HandGoal
from musculo_control.control.output import ControlOutput
from musculo_control.control.tick_base import Controller
from musculo_control.errors import ConfigError, InputError
from musculo_control.estimation.snapshot import DynamicsSnapshot
from musculo_control.hardware.calibration import Calibration
from musculo_control.loop.topics import MUSCLE_COMMANDS, TENDON_COMMANDS
from musculo_control.model.robot import Robot
from musculo_control.safety.authority import Writer
from musculo_control.safety.goal_gate import GoalRequest
from musculo_control.sim.runner import SensorMessage

FloatArray = npt.NDArray[np.float64]


class FaultKind(NamedTuple):
    """One injectable fault."""

    name: str
    layer: str  # mock | stream | controller | authority (a stray writer) | operator
    expected_rules: tuple[str, ...]  # safety rules that should report it (warnings included)
    description: str
    #: stages whose health (their node's /diagnostics) also reports it, by
    #: :attr:`~musculo_control.loop.health.Health.name`
    stages: tuple[str, ...] = ()
    #: whether it must end in minimum tension (False: control goes on, a late input or a
    #: refused request, reported as a warning)
    safe_state: bool = True
    #: the input (safety.yaml ``inputs``) whose hold bound the safe state may wait for; ''
    #: the fault is a fault at once (its safe state within the detection target)
    hold: str = ""


_POTS, _TENDONS, _DYNAMICS, _MOCK = "potentiometers", "tendon actuators", "dynamics", "mock arm"

#: Every fault the injector knows, in the order of the fault matrix.
FAULTS: tuple[FaultKind, ...] = (
    FaultKind("pot_dropout", "stream", ("joint_state_late", "joint_state_stale"),
              "potentiometer messages stop", (_POTS, _DYNAMICS), hold="joint_state"),
    FaultKind("pot_stuck", "mock", ("consistency", "joint_state"),
              "one potentiometer freezes at its last count while the arm moves"),
    FaultKind("pot_nan", "mock", ("joint_state_late", "joint_state_stale", "joint_state"),
              "one potentiometer reads NaN", (_POTS,), hold="joint_state"),
    FaultKind("pot_out_of_range", "mock", ("joint_state_late", "joint_state_stale",
                                           "joint_state"),
              "one potentiometer reads a count beyond the ADC's full scale", (_POTS,),
              hold="joint_state"),
    FaultKind("tendon_dropout", "stream", ("tendon_state_late", "tendon_state_stale"),
              "tendon state messages stop", (_TENDONS,), hold="tendon_state"),
    FaultKind("tendon_snap", "mock", ("tendon_snapped", "tendon_slack", "tendon_runaway",
                                      "actuator_lagging", "actuator_tracking",
                                      "consistency"),
              "the most loaded tendon snaps: no force, load cell zero, its winch winds away"),
    FaultKind("actuator_saturation", "mock", ("actuator_lagging", "actuator_tracking"),
              "the most loaded actuator cannot deliver more than a cap below its command"),
    FaultKind("stale_snapshot", "stream", ("snapshot_late", "snapshot_stale"),
              "dynamics snapshots stop (the 20 Hz estimator hangs)", hold="snapshot"),
    FaultKind("qp_failure", "controller", ("controller",),
              "OSQP held to one iteration: every solve ends unsolved"),
    FaultKind("goal_outside_workspace", "stream", ("goal_outside_workspace",),
              "the hand goal jumps outside the workspace", safe_state=False),
    FaultKind("goal_nan", "stream", ("goal_invalid",), "the hand goal holds a NaN",
              safe_state=False),
    FaultKind("delayed_stream", "stream", ("joint_state_late", "tendon_state_late"),
              "every sensor message arrives late by extra_delay_s (less than the hold bound: "
              "a late input, not a fault)", (_POTS, _TENDONS), safe_state=False),
    FaultKind("reordered_stream", "stream", ("out_of_order",),
              "sensor messages arrive in swapped pairs", (_POTS, _TENDONS), safe_state=False),
    FaultKind("command_dropout", "stream", ("command_late", "command_watchdog"),
              "the controller's commands stop reaching the tendon driver", (_TENDONS,),
              hold="muscle_commands"),
    FaultKind("command_nan", "controller", ("command_invalid",),
              "the controller's command holds a NaN"),
    FaultKind("command_overrange", "controller", ("command_saturated",),
              "the controller commands the most loaded tendon far above the actuator's limit",
              safe_state=False),
    # where each sample carries its writer's id (rclpy from Kilted, the runner) the driver
    # passes the controller's samples only and control goes on; without ids (Humble, Jazzy)
    # it sends minimum tension while the stray is there (doc/ros.md "Command authority")
    FaultKind("foreign_commander", "authority", ("foreign_commander",),
              "a stray node publishes muscle_commands (stray_tension_n on every muscle at "
              "stray_rate_hz)", (_TENDONS,), safe_state=False),
    FaultKind("foreign_actuator_writer", "authority", ("foreign_actuator_writer",),
              "a stray node publishes hw/tendon_commands (stray_tension_n on every actuator at "
              "stray_rate_hz)", (_MOCK,)),
    FaultKind("operator_stop", "operator", ("operator_stop",),
              "an operator sets the operator stop, and releases it when the fault ends",
              (_TENDONS,)),
)
FAULT_NAMES = tuple(f.name for f in FAULTS)
#: Faults the mock arm injects by itself (its sensors, actuators, raw message streams): what
#: ``mock_hardware_node`` can inject in a running node graph.
MOCK_FAULTS = ("pot_dropout", "pot_stuck", "pot_nan", "pot_out_of_range", "tendon_dropout",
               "tendon_snap", "actuator_saturation", "delayed_stream", "reordered_stream")
#: Faults injected around the controller: what ``activation_qp_node`` can inject.
CONTROLLER_FAULTS = ("qp_failure", "command_nan", "command_overrange")


class Stray(NamedTuple):
    """A stray publisher of a command stream."""

    topic: str
    node: str  # its node's name (root namespace)

    @property
    def writer(self) -> Writer:
        """As a graph lists it (in the runner, its name stands for its endpoint id)."""
        return Writer("/" + self.node, self.node.encode())


#: The stray writer of each authority fault.
STRAYS = {"foreign_commander": Stray(MUSCLE_COMMANDS, "stray_commander"),
          "foreign_actuator_writer": Stray(TENDON_COMMANDS, "stray_actuator_writer")}
_BY_NAME = {f.name: f for f in FAULTS}


def fault_kind(name: str) -> FaultKind:
    """The fault called ``name``; :class:`InputError` lists the known ones."""
    if name not in _BY_NAME:
        raise InputError("fault", f"one of {list(FAULT_NAMES)}", name)
    return _BY_NAME[name]


@dataclass(frozen=True, kw_only=True)
class InjectionConfig:
    """Magnitudes of the injected faults (``reliability.yaml`` key ``faults.injection``)."""

    stuck_joint: str = spec(doc="joint whose potentiometer freezes")
    nan_joint: str = spec(doc="joint whose potentiometer reads NaN")
    out_of_range_joint: str = spec(doc="joint whose potentiometer reads out_of_range_counts")
    out_of_range_counts: float = spec(doc="the count it reads (beyond the ADC's range) [counts]")
    runaway_speed_m_s: float = spec(gt=0.0, doc="winding-in speed of a snapped tendon's free "
                                                "winch [m/s]")
    saturation_cap_n: float = spec(gt=0.0, doc="what the saturated actuator delivers at most [N]")
    extra_delay_s: float = spec(gt=0.0, doc="added delay of the delayed stream [s]")
    goal_offset_m: tuple[float, ...] = spec(length=3, doc="added to the goal to leave the "
                                                          "workspace [m]")
    overrange_factor: float = spec(gt=1.0, doc="the overrange command is the actuator's limit "
                                               "times this [-]")
    stray_tension_n: float = spec(900.0, gt=0.0, doc="a stray writer's command on every muscle "
                                                     "(foreign_commander) or actuator "
                                                     "(foreign_actuator_writer) [N]")
    stray_rate_hz: float = spec(200.0, gt=0.0, doc="a stray writer's rate [Hz]")

    def check_robot(self, robot: Robot, file: str, key: str) -> None:
        for field in ("stuck_joint", "nan_joint", "out_of_range_joint"):
            name = getattr(self, field)
            if name not in robot.arm.joint_names:
                raise ConfigError(file, f"{key}.{field}",
                                  f"a joint of robot.yaml {list(robot.arm.joint_names)}", name)


class FaultInjector:
    """One fault, active in ``[start_s, end_s)`` (see the module docstring)."""

    def __init__(self, name: str, start_s: float, end_s: float, config: InjectionConfig,
                 robot: Robot, calibration: Calibration, physics_dt_s: float,
                 transport_delay_s: float, *, tension_limit_n: float,
                 tendon: int | None = None) -> None:
        """``tension_limit_n``: the actuator's limit, for the overrange command; ``tendon``:
        index of the tendon a tendon or command fault hits (default: the controlled muscle
        pulling hardest when the fault starts)."""
        self.kind = fault_kind(name)
        self.name = name
        self.start_s, self.end_s = float(start_s), float(end_s)
        self.config = config
        self.calibration = calibration
        self.dt = physics_dt_s
        self.delay_s = transport_delay_s
        self.tendon = tendon
        self._controlled = robot.controlled_idx
        self.muscle_names = robot.muscle_names
        self.tension_limit_n = tension_limit_n
        joints = robot.arm.joint_names
        self.joint_name = {"pot_stuck": config.stuck_joint, "pot_nan": config.nan_joint,
                           "pot_out_of_range": config.out_of_range_joint}.get(name, "")
        self._joint = {"pot_stuck": joints.index(config.stuck_joint),
                       "pot_nan": joints.index(config.nan_joint),
                       "pot_out_of_range": joints.index(config.out_of_range_joint)}.get(name, 0)
        self.origin_s = 0.0  # the stamp of time 0 of the run [s]
        self.onset_s: float | None = None  # when the fault first touched the data [s]
        self._frozen: float | None = None  # the stuck potentiometer's count
        self._snap_encoder: float | None = None  # the snapped tendon's encoder count at t0
        self._held: SensorMessage | None = None  # reordering: the message held back
        self._extra_steps = round(config.extra_delay_s / physics_dt_s)
        self._qp_limited = False
        self.stray = STRAYS.get(name)
        self._stray_due_s = -math.inf  # the stray's next sample [s] (run time)
        self._stray_n = np.full(robot.n_muscles, config.stray_tension_n)  # (n_muscles,) [N]

    def start_now(self, t_s: float, duration_s: float) -> None:
        """Move the fault's window to start at stamp ``t_s`` [s] and last ``duration_s``."""
        self.start_s = float(t_s) - self.origin_s
        self.end_s = self.start_s + float(duration_s)
        self.onset_s = None

    def active(self, t_s: float) -> bool:
        """Whether the fault is on at stamp ``t_s`` [s]."""
        return self.start_s <= t_s - self.origin_s < self.end_s

    @property
    def target(self) -> str:
        """What the fault hits: a joint, a tendon or '' (a whole stream)."""
        if self.name in ("pot_stuck", "pot_nan", "pot_out_of_range"):
            return self.joint_name
        if self.name in ("tendon_snap", "actuator_saturation", "command_nan",
                         "command_overrange") and self.tendon is not None:
            return self.muscle_names[self.tendon]
        return ""

    def _pick_tendon(self, tension_n: FloatArray) -> int:
        if self.tendon is None:
            ci = self._controlled
            self.tendon = int(ci[int(np.argmax(tension_n[ci]))])
        return self.tendon

    def _mark(self, t_s: float) -> None:
        """The fault touched the data at stamp ``t_s`` [s] (kept in run time)."""
        if self.onset_s is None:
            self.onset_s = t_s - self.origin_s

    # -- the mock arm (MockFaultHook) ---------------------------------------------------------
    def potentiometers(self, counts: FloatArray, t_s: float) -> FloatArray:
        name = self.name
        if name == "pot_stuck":
            if not self.active(t_s):
                self._frozen = None
                return counts
            if self._frozen is None:
                self._frozen = float(counts[self._joint])
                self._mark(self.origin_s + self.start_s)
            counts[self._joint] = self._frozen
        elif name in ("pot_nan", "pot_out_of_range") and self.active(t_s):
            self._mark(self.origin_s + self.start_s)
            counts[self._joint] = math.nan if name == "pot_nan" \
                else self.config.out_of_range_counts
        return counts

    def tendons(self, encoder: FloatArray, loadcell: FloatArray,
                t_s: float) -> tuple[FloatArray, FloatArray]:
        if self.name != "tendon_snap" or not self.active(t_s):
            self._snap_encoder = None
            return encoder, loadcell
        cal = self.calibration
        i = self._pick_tendon(cal.loadcell_to_n(loadcell))
        if self._snap_encoder is None:
            self._snap_encoder = float(encoder[i])
        # the free winch winds the tendon in: the measured length falls at the no-load speed
        # (encoder counts grow by sign * counts_per_m per metre wound in)
        wound_m = self.config.runaway_speed_m_s * (t_s - self.origin_s - self.start_s)
        encoder[i] = np.rint(self._snap_encoder + cal.encoder_sign[i]
                             * cal.encoder_counts_per_m[i] * wound_m)
        return encoder, loadcell

    def actuators(self, tension_n: FloatArray, t_s: float) -> None:
        if not self.active(t_s):
            return
        if self.name == "tendon_snap":
            self._mark(self.origin_s + self.start_s)
            tension_n[self._pick_tendon(tension_n)] = 0.0
        elif self.name == "actuator_saturation":
            self._mark(self.origin_s + self.start_s)
            i = self._pick_tendon(tension_n)
            tension_n[i] = min(tension_n[i], self.config.saturation_cap_n)

    # -- the streams (StreamFaults) -----------------------------------------------------------
    def sensor_messages(self, step: int,
                        message: SensorMessage) -> list[tuple[int, SensorMessage]]:
        t = message[0]
        name = self.name
        due = t + self.delay_s  # when this message would arrive
        if name == "reordered_stream":
            if self._held is not None:  # send the newer one first, then the held one
                held, self._held = self._held, None
                self._mark(due)
                return [(step, message), (step, held)]
            if self.active(t):
                self._held = message
                return []
            return [(step, message)]
        if not self.active(t):
            return [(step, message)]
        stamp, counts, enc, cell = message
        if name == "pot_dropout":
            self._mark(due)
            return [(step, (stamp, None, enc, cell))]
        if name == "tendon_dropout":
            self._mark(due)
            return [(step, (stamp, counts, None, None))]
        if name == "delayed_stream":
            self._mark(due)
            return [(step + self._extra_steps, message)]
        return [(step, message)]

    def snapshot_passes(self, t_s: float) -> bool:
        if self.name == "stale_snapshot" and self.active(t_s):
            self._mark(t_s + self.delay_s)
            return False
        return True

    def command_passes(self, t_s: float) -> bool:
        if self.name == "command_dropout" and self.active(t_s):
            self._mark(t_s + self.delay_s)
            return False
        return True

    def goal(self, t_s: float, goal: HandGoal) -> object:
        if not self.active(t_s):
            return goal
        if self.name == "goal_outside_workspace":
            self._mark(t_s)
            return HandGoal(goal.position_m + np.asarray(self.config.goal_offset_m),
                            goal.velocity_m_s, goal.acceleration_m_s2, goal.rotation)
        if self.name == "goal_nan":
            self._mark(t_s)
            position = goal.position_m.copy()
            position[1] = math.nan
            return GoalRequest(position, goal.velocity_m_s, goal.acceleration_m_s2,
                               goal.rotation)
        return goal

    # -- the writers of the command streams (ClosedLoop.watch_writers) -----------------------
    def stray_writers(self, topic: str, t_s: float) -> tuple[Writer, ...]:
        """The publishers of ``topic`` besides the loop's own that a graph lists at stamp
        ``t_s`` [s]: the stray, while the fault is on."""
        stray = self.stray
        if stray is None or stray.topic != topic or not self.active(t_s):
            return ()
        self._mark(t_s)  # listed: the watches see it from now
        return (stray.writer,)

    def stray_command(self, topic: str, t_s: float) -> FloatArray | None:
        """The stray's sample on ``topic`` at stamp ``t_s`` [s], ``None`` when it sends none
        then: ``stray_tension_n`` on every muscle [N], at ``stray_rate_hz`` while the fault
        is on."""
        stray = self.stray
        if stray is None or stray.topic != topic or not self.active(t_s):
            self._stray_due_s = -math.inf
            return None
        t = t_s - self.origin_s
        if t < self._stray_due_s - 1e-9:
            return None
        self._stray_due_s = max(self._stray_due_s, t) + 1.0 / self.config.stray_rate_hz
        return self._stray_n.copy()

    # -- the operator ---------------------------------------------------------------------------
    def operator_stop(self, t_s: float) -> bool:
        """Whether the operator stop is set at stamp ``t_s`` [s] (``operator_stop``: while the
        fault is on)."""
        if self.name != "operator_stop" or not self.active(t_s):
            return False
        self._mark(t_s)
        return True

    # -- the controller ------------------------------------------------------------------------
    def wrap(self, controller: Controller) -> Controller:
        """``controller`` with this fault's controller-level injection (itself if none)."""
        if self.kind.layer != "controller":
            return controller
        return _FaultyController(controller, self)

    def _before_tick(self, controller: Controller, t_s: float) -> None:
        if self.name != "qp_failure":
            return
        qp = getattr(controller, "qp", None)
        if qp is None:
            raise InputError("qp_failure", "a controller with a QP (osc, osc-no-nullspace, "
                                           "joint-stiffness)", controller.name)
        on = self.active(t_s)
        if on != self._qp_limited:
            qp.limit_iterations(1 if on else None)
            self._qp_limited = on
        if on:
            self._mark(t_s)

    def _after_tick(self, out: ControlOutput, t_s: float) -> ControlOutput:
        if self.name not in ("command_nan", "command_overrange") or not self.active(t_s):
            return out
        self._mark(t_s)
        tension = out.tension_n.copy()
        tension[self._pick_tendon(tension)] = math.nan if self.name == "command_nan" \
            else self.config.overrange_factor * self.tension_limit_n
        # a buggy controller that still says ok: the supervisor must not believe it
        return ControlOutput(True, "", tension, out.activations, out.tau_null_nm,
                             out.torque_residual_nm, out.tau_ref_nm, out.hand_position_m,
                             out.hand_error_m, out.solver_status, out.iterations,
                             out.solve_time_s, out.snapshot_age_s, out.objective,
                             out.compute_time_s)


class _FaultyController:
    """A controller whose tick goes through an injector (Controller protocol)."""

    def __init__(self, inner: Controller, injector: FaultInjector) -> None:
        self.inner = inner
        self.injector = injector
        self.name = inner.name

    def tick(self, snapshot: DynamicsSnapshot | None, q_rad: npt.ArrayLike,
             qd_rad_s: npt.ArrayLike, goal: HandGoal, t_s: float) -> ControlOutput:
        self.injector._before_tick(self.inner, t_s)
        return self.injector._after_tick(self.inner.tick(snapshot, q_rad, qd_rad_s, goal, t_s),
                                         t_s)

    def reset(self) -> None:
        self.inner.reset()
