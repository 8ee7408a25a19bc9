"""The mock arm: MuJoCo physics behind the same raw interface as the real arm.

Built in code from the robot's description, URDF and muscles file or MJCF
(:mod:`musculo_control.sim.mujoco_arm`), with everything the controller's model lacks:

- a model error on by default: link masses and via-points (MJCF: muscle sites, optionally wrap
  radii) off by seeded random amounts;
- joint damping, dry friction (MuJoCo ``frictionloss``) and limits;
- tension-dependent tendon friction (the capstan effect, ``tendon`` in mock_arm.yaml): a wire
  that turns through ``theta`` over guides with friction coefficient ``mu`` delivers, beyond
  them, a tension between ``f exp(-mu theta)`` (winding in) and ``f exp(mu theta)`` (pulled
  out), ``f`` the tension the module's load cell measures. ``theta`` is the wire's fixed routing
  inside the bone plus its path's bends, from MuJoCo's own path every step (:class:`PathBends`).
  The band's middle, ``f cosh(mu theta)``, is the actuator force; its half width
  ``b = f0 + f sinh(mu theta)`` (``f0`` a load-independent part) is a friction force
  ``-b sat(v / v_s)`` on the tendon's lengthening speed ``v``, Coulomb above the creep speed
  ``v_s`` and viscous below it (a wire under a load inside its band creeps at ``v_s`` times the
  load's share of the band). It is set, each step, as the tendon's MuJoCo damping
  ``b / max(|v|, v_s)``, which the ``implicitfast`` integrator treats implicitly: stable at
  1 kHz however steep the friction law (an explicit force of
  slope ``b / v_s`` of 10^5 N s/m would need steps of microseconds). MuJoCo's own tendon
  ``frictionloss`` is load-independent (its documentation says so);
- per tendon a tension actuator with a first-order lag (time constant ``tau``, discretised
  exactly: ``f <- f + (1 - exp(-dt/tau)) (f_cmd - f)``) inside a DC-motor envelope
  (SPEC section 9): the winch motor's current is limited by the driver to ``I_max`` and by the
  supply voltage against the back-EMF, ``I <= (V - k_t w) / R`` with motor speed
  ``w = gear v_in / r``, so the deliverable tension ``f <= eta gear k_t I / r`` falls along a
  straight line as the winch winds in faster. With an elastic wire (``tendon.axial_stiffness_n``
  EA, stiffness ``k = EA / (routing length + path length)``) the tension changes as
  ``df/dt = k (v_path + v_in)``: the winch speed ``v_in`` (winding in) the lag asks for is held
  within the motor's speed line at the present tension, ``-(V + R I) <= k_t w <= V - R I``, so a
  path that moves faster than the winch can follow stretches or slackens the wire. Without it
  (inextensible wire) the winch speed is the path's and the envelope clamps the tension;
- sensors in raw units: potentiometer ADC counts (offset, Gaussian noise, quantisation, seeded),
  winch encoder counts (zeroed at the calibration pose on the mock's own, erroneous geometry),
  load-cell counts (Gaussian noise, quantisation);
- a hand-held force gauge for the disturbance experiment (SPEC section 8 A): a push-only contact
  along the gauge's own axis; the force on the elbow is ``k`` times the penetration along that
  axis and zero when not touching, and has no sideways part, so the elbow may slide across the tip.

Commands arrive in driver units (:meth:`MockArm.set_command`), exactly as a real actuator module
takes them; :meth:`MockArm.step` advances one physics step. Deterministic for a given seed.

Stepping is split (``mj_step2`` then ``mj_step1``, bit-identical to ``mj_step``) so that between
steps every position- and velocity-dependent quantity (tendon lengths and speeds, body poses)
describes the current state: the envelope and the gauge use them without recomputing, and the
sensors read the present, not the state one step ago.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import mujoco
import numpy as np
import numpy.typing as npt

from musculo_control.arrays import finite
from musculo_control.config.parser import load, spec
from musculo_control.errors import ConfigError, InputError
from musculo_control.hardware.calibration import Calibration, load_calibration
from musculo_control.model.robot import Robot
from musculo_control.sim.mujoco_arm import (
    ModelErrorConfig,
    MujocoArm,
    PathBends,
    PhysicsConfig,
    build_mujoco_arm,
    draw_model_error,
    point_on_body,
    warning_counts,
)

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class ActuatorConfig:
    """Tension actuator module: tension-loop lag and the winch DC motor (SPEC section 9)."""

    time_constant_s: float = spec(0.02, gt=0.0, doc="first-order lag of the tension loop [s]")
    supply_voltage_v: float = spec(24.0, gt=0.0, doc="motor supply voltage [V]")
    torque_constant_nm_a: float = spec(gt=0.0, doc="motor torque constant = back-EMF constant "
                                                   "[Nm/A] = [V s/rad]")
    terminal_resistance_ohm: float = spec(gt=0.0, doc="motor terminal resistance [Ohm]")
    current_limit_a: float = spec(gt=0.0, doc="driver current limit [A]")
    gear_ratio: float = spec(gt=0.0, doc="motor turns per winch turn [-]")
    gear_efficiency: float = spec(1.0, gt=0.0, le=1.0, doc="gearbox efficiency [-]")
    command_timeout_s: float = spec(gt=0.0, doc="the module's own watchdog: no command for "
                                                "longer -> it holds timeout_tension_n [s]")
    timeout_tension_n: float = spec(ge=0.0, doc="tension a module holds after its watchdog "
                                                "fired [N]")


@dataclass(frozen=True, kw_only=True)
class TendonConfig:
    """The muscle wire from the winch to the insertion (``mock_arm.yaml`` key ``tendon``)."""

    friction_coefficient: float = spec(
        0.0, ge=0.0, doc="capstan friction coefficient mu of the wire on its guides [-]; 0: no "
                         "tension-dependent friction")
    routing_wrap_angle_rad: float = spec(
        0.0, ge=0.0, doc="angle the wire turns through between the winch's load cell and the "
                         "muscle's first point, inside the bone (not in the muscle's path) [rad]")
    constant_friction_n: float = spec(
        0.0, ge=0.0, doc="load-independent part of the wire's friction band [N] (bending a stiff "
                         "braid over its guides)")
    creep_speed_m_s: float = spec(
        0.001, gt=0.0, doc="below this sliding speed the friction is viscous, above it Coulomb: "
                           "a wire loaded inside its friction band creeps [m/s]")
    axial_stiffness_n: float | None = spec(
        None, gt=0.0, doc="EA of the wire [N] (stiffness = EA / length); null: inextensible")
    routing_length_m: float = spec(
        0.0, ge=0.0, doc="wire length from the winch to the muscle's first point [m]")


@dataclass(frozen=True, kw_only=True)
class SensorConfig:
    """Raw sensor imperfections of the mock."""

    potentiometer_noise_counts: float = spec(0.5, ge=0.0, doc="Gaussian noise, std [counts]")
    potentiometer_offset_error_counts: float = spec(
        0.0, ge=0.0, doc="calibration error: each pot's offset off by U(-e, e), seeded [counts]")
    encoder_noise_counts: float = spec(0.0, ge=0.0, doc="Gaussian noise, std [counts]")
    loadcell_noise_counts: float = spec(2.0, ge=0.0, doc="Gaussian noise, std [counts]")
    # hidden from hardware.yaml (what `musculo calibrate` must find), drawn from a fourth seed
    # stream so that the other draws do not change
    encoder_offset_error_counts: float = spec(
        0.0, ge=0.0, doc="each encoder reads U(-e, e) more at the calibration pose than "
                         "hardware.yaml says, seeded [counts]")
    loadcell_offset_error_counts: float = spec(
        0.0, ge=0.0, doc="each load cell's zero off hardware.yaml's by U(-e, e), seeded [counts]")


@dataclass(frozen=True, kw_only=True)
class GaugeConfig:
    """The simulated hand-held force gauge (push-only, along its own axis)."""

    stiffness_n_m: float = spec(3000.0, gt=0.0, doc="force per metre of penetration [N/m]")
    contact_radius_m: float = spec(0.0, ge=0.0, doc="arm surface radius around the elbow "
                                                    "point; the tip touches at this distance [m]")


@dataclass(frozen=True, kw_only=True)
class StartupConfig:
    """How the arm is handed over to the controller (``mock_arm.yaml`` key ``startup``)."""

    release_after_s: float = spec(ge=0.0, doc="hold the arm still (joints frozen, actuators "
                                               "working) until commands above the modules' idle "
                                               "tension have arrived for this long; 0: let go "
                                               "at once [s]")


@dataclass(frozen=True, kw_only=True)
class MockArmConfig:
    """``mock_arm.yaml``."""

    physics: PhysicsConfig = spec(doc="MuJoCo step, integrator, joint damping and friction")
    actuator: ActuatorConfig = spec(doc="tension actuator lag and motor envelope")
    tendon: TendonConfig = spec(TendonConfig(), doc="capstan friction and elasticity of the wire")
    sensors: SensorConfig = spec(SensorConfig(), doc="sensor noise and calibration error")
    model_error: ModelErrorConfig = spec(ModelErrorConfig(), doc="mass and via-point errors")
    elbow_link: str = spec(doc="link (URDF) or body, site or joint (MJCF) that carries the "
                               "elbow point, where the force gauge pushes")
    elbow_point_m: tuple[float, ...] = spec((0.0, 0.0, 0.0), length=3,
                                            doc="elbow point in that element's axes [m]")
    gauge: GaugeConfig = spec(GaugeConfig(), doc="the hand-held force gauge")
    startup: StartupConfig = spec(doc="how the arm is handed over to the controller")
    seed: int = spec(0, ge=0, doc="seed of the model error and the sensor noise")


class MockFaultHook(Protocol):
    """Fault injection inside the mock (see :mod:`musculo_control.sim.faults`): each method
    sees what the healthy mock would produce at time ``t_s`` and returns or edits it."""

    def potentiometers(self, counts: FloatArray, t_s: float) -> FloatArray: ...

    def tendons(self, encoder: FloatArray, loadcell: FloatArray,
                t_s: float) -> tuple[FloatArray, FloatArray]: ...

    def actuators(self, tension_n: FloatArray, t_s: float) -> None:
        """Edit the delivered tensions (m,) [N] in place (a snapped tendon, a weak motor)."""
        ...


class MockArm:
    """MuJoCo arm with raw-unit sensors and driver-unit commands (see the module docstring).

    Arrays are in robot order: joints as in ``robot.yaml`` (n,), tendons as in the muscles
    file (m,).
    """

    def __init__(self, robot: Robot, calibration: Calibration, config: MockArmConfig,
                 seed: int | None = None, file: str = "mock_arm.yaml") -> None:
        self.robot = robot
        self.calibration = calibration
        self.config = config
        self.seed = config.seed if seed is None else int(seed)
        error_seq, offset_seq, noise_seq, hidden_seq = np.random.SeedSequence(self.seed).spawn(4)
        error = draw_model_error(robot, config.model_error, np.random.default_rng(error_seq))
        self.arm: MujocoArm = build_mujoco_arm(robot, config.physics, error, file)
        self.model = self.arm.model
        elbow = point_on_body(self.model, config.elbow_link, config.elbow_point_m)
        if elbow is None:
            what = "an MJCF body, site or joint" if robot.arm.is_mjcf else "a URDF link"
            raise ConfigError(file, "elbow_link", f"{what} {sorted(self.arm.body_id)}",
                              config.elbow_link)
        self.data = mujoco.MjData(self.model)
        self.n = robot.arm.n_joints
        self.m = robot.n_muscles
        # actuator i is MuJoCo id i (mujoco_arm adds them in muscle order); tendons are too for a
        # URDF, while an MJCF keeps its own tendon order (and may have other tendons)
        if not np.array_equal(self.arm.actuator_ids, np.arange(self.m)):
            raise ConfigError(file, "<model>", "actuators numbered in muscle order")
        self._tids = self.arm.tendon_ids
        self._tendons_in_order = (self.model.ntendon == self.m
                                  and np.array_equal(self._tids, np.arange(self.m)))
        # views into MjData's fixed buffers, cached: each attribute access builds a new view
        self._ten_velocity_all = self.data.ten_velocity
        self._ten_length_all = self.data.ten_length
        self._ten_velocity = self._ten_velocity_all if self._tendons_in_order else np.zeros(self.m)
        self._ctrl = self.data.ctrl
        self._qpos = self.data.qpos
        self._damping = self.model.tendon_damping
        self._qadr = self.arm.qpos_adr
        self._vadr = self.arm.dof_adr
        self._elbow_body, self._elbow_point = elbow
        self._hand_body, self._hand_point = self.arm.task_body_id, self.arm.task_point_local
        self.dt_s = self.model.opt.timestep
        act = config.actuator
        self._timeout_s = act.command_timeout_s
        self._alpha = 1.0 - math.exp(-self.dt_s / act.time_constant_s)
        r = calibration.winch_radius_m  # (m,) [m]
        k_f = act.gear_efficiency * act.gear_ratio * act.torque_constant_nm_a / r  # [N/A]
        # f_cap = clip(cap_a + cap_b * lengthening speed, 0, cap_hi) [N]
        self._cap_a = k_f * act.supply_voltage_v / act.terminal_resistance_ohm
        self._cap_b = k_f * act.torque_constant_nm_a * act.gear_ratio / (
            act.terminal_resistance_ohm * r)
        self._cap_hi = k_f * act.current_limit_a
        self.max_tension_n: FloatArray = np.minimum(self._cap_a, self._cap_hi)  # at rest [N]
        # the motor's speed line as winch speeds: v_in <= v_per_volt (V - R I), I = f amp_per_n
        self._v_per_volt = r / (act.gear_ratio * act.torque_constant_nm_a)  # [m/s / V]
        self._amp_per_n = 1.0 / k_f  # [A/N]
        # capstan friction of the wire and its elasticity (mock_arm.yaml tendon)
        ten = config.tendon
        self._mu = ten.friction_coefficient
        self._bends = PathBends(self._tids, self.model) if self._mu > 0.0 else None
        self._routing = ten.routing_wrap_angle_rad
        self._band0 = ten.constant_friction_n
        self._creep = ten.creep_speed_m_s
        self._wrap = np.zeros(self.m)  # the wire's total turn this step [rad]
        self._band = np.zeros(self.m)  # half width of the friction band this step [N]
        self._mu_theta = np.zeros(self.m)  # scratch of the capstan
        self._speed = np.zeros(self.m)
        self._stiffness: FloatArray | None = None  # k per tendon [N/m]; None: inextensible
        self._kdt: tuple[FloatArray, FloatArray] | None = None  # (k, k dt) of the last step
        self._elastic_scratch = tuple(np.zeros(self.m) for _ in range(4))
        # sensors
        sens = config.sensors
        e = sens.potentiometer_offset_error_counts
        self._pot_offset_error = np.random.default_rng(offset_seq).uniform(-e, e, self.n)
        self._noise = np.random.default_rng(noise_seq)
        hidden = np.random.default_rng(hidden_seq)
        self._encoder_offset_error = hidden.uniform(-1.0, 1.0, self.m) \
            * sens.encoder_offset_error_counts  # (m,) [counts]
        self._loadcell_offset_error = hidden.uniform(-1.0, 1.0, self.m) \
            * sens.loadcell_offset_error_counts  # (m,) [counts]
        self._true_cal_length = self._lengths_at(calibration.calibration_pose_rad)
        if ten.axial_stiffness_n is not None:  # k = EA / free length, at the calibration pose
            self._stiffness = ten.axial_stiffness_n / (ten.routing_length_m
                                                      + self._true_cal_length)
        # tendon length the mock's encoders add to report the model's reference at the pose
        self._encoder_shift = calibration.reference_length_m - self._true_cal_length
        # ... and the length that moves the reading by the hidden offset error
        self._encoder_shift -= calibration.encoder_sign * self._encoder_offset_error \
            / calibration.encoder_counts_per_m
        # per-step scratch
        self._cmd = np.zeros(self.m)
        self._f = np.zeros(self.m)
        self._cap = np.zeros(self.m)
        self._tmp = np.zeros(self.m)
        self._qfrc = np.zeros(self.model.nv)
        self._gauge_on = False
        self._gauge_tip = np.zeros(3)
        self._gauge_axis = np.array([1.0, 0.0, 0.0])
        self._gauge_force = 0.0
        self.fault_hook: MockFaultHook | None = None  # injected faults; None: healthy
        #: the arm held still by hand (joints frozen, actuators working), as at start-up
        self.held = False
        self.stamp0_s = 0.0  # the clock at physics time 0 (:attr:`time_s`) [s]
        self._cmd_time_s = 0.0  # mock time of the last command [s]
        self.watchdog_fired = False  # the modules' watchdog holds timeout_tension_n
        self.reset(np.clip(np.zeros(self.n), robot.arm.lower_rad, robot.arm.upper_rad))

    def drawn(self) -> dict[str, object]:
        """What ``seed`` drew for this arm: the model error (a ``ModelError``), the
        potentiometer offset errors (n,), the hidden encoder and load-cell offset errors (m,)
        [counts] (the sensor noise is drawn per sample from a
        third stream of the same seed)."""
        return {"seed": self.seed, "model_error": self.arm.error,
                "potentiometer_offset_error_counts": self._pot_offset_error.copy(),
                "encoder_offset_error_counts": self._encoder_offset_error.copy(),
                "loadcell_offset_error_counts": self._loadcell_offset_error.copy()}

    # -- set-up -----------------------------------------------------------------------------------
    def _lengths_at(self, q: FloatArray) -> FloatArray:
        d = mujoco.MjData(self.model)
        self.arm.set_joints(d, q, np.zeros(self.n))
        mujoco.mj_fwdPosition(self.model, d)
        return np.array(d.ten_length[self._tids])

    def _tendon_lengths(self) -> FloatArray:
        """(m,) the muscles' tendon lengths, in muscle order [m]."""
        if self._tendons_in_order:
            return self._ten_length_all
        return self._ten_length_all[self._tids]

    def reset(self, q0_rad: npt.ArrayLike, tension_n: float | npt.ArrayLike = 0.0,
              qd0_rad_s: npt.ArrayLike | None = None) -> None:
        """Time 0 at ``q0_rad`` [rad] moving at ``qd0_rad_s`` (default rest) [rad/s], actuators
        delivering and commanded ``tension_n`` [N], gauge off."""
        q0 = self.robot.arm.check_q(q0_rad, "MockArm.reset q0_rad")
        qd0 = np.zeros(self.n) if qd0_rad_s is None else self.robot.arm.check_q(
            qd0_rad_s, "MockArm.reset qd0_rad_s")
        try:
            f0 = np.broadcast_to(np.asarray(tension_n, dtype=float), (self.m,))
        except ValueError as exc:
            raise InputError("MockArm.reset tension_n", f"a tension or {self.m} tensions",
                             np.shape(tension_n)) from exc
        if not np.all(np.isfinite(f0)):
            raise InputError("MockArm.reset tension_n", "finite tensions", f0.tolist())
        mujoco.mj_resetData(self.model, self.data)
        self.arm.set_joints(self.data, q0, qd0)
        self._f[:] = np.maximum(f0, 0.0)
        self._cmd[:] = self._f
        self.clear_gauge()
        self.data.ctrl[:] = self._f
        mujoco.mj_step1(self.model, self.data)  # positions and velocities of the new state
        if self._bends is not None:  # the friction band of the new state's tensions
            if not self._tendons_in_order:
                np.take(self._ten_velocity_all, self._tids, out=self._ten_velocity)
            self._capstan()
        self._steps = 0
        self._cmd_time_s = self.time_s
        self.watchdog_fired = False

    # -- commands and stepping ------------------------------------------------------------------
    def set_command(self, driver_units: npt.ArrayLike) -> None:
        """Target tensions in driver units (m,), as an actuator module receives them.

        A tendon cannot push: negative targets act as zero.
        """
        u = np.asarray(driver_units, dtype=float)
        if u.shape != (self.m,) or not finite(u):
            raise InputError("MockArm.set_command", f"{self.m} finite driver commands", u)
        np.maximum(self.calibration.driver_to_n(u), 0.0, out=self._cmd)
        self._cmd_time_s = self.time_s
        self.watchdog_fired = False

    def step(self) -> None:
        """Advance one physics step (``physics.timestep_s``).

        While :attr:`held`, the joints stay where they are (a hand holds the arm) and only the
        actuators follow their commands. Without a command for ``actuator.command_timeout_s``
        every module holds ``actuator.timeout_tension_n`` (its own watchdog).
        """
        if not self.watchdog_fired and self.time_s - self._cmd_time_s > self._timeout_s:
            self._cmd[:] = self.config.actuator.timeout_tension_n
            self.watchdog_fired = True
        if not self._tendons_in_order:
            np.take(self._ten_velocity_all, self._tids, out=self._ten_velocity)
        if self._stiffness is None:
            self._inextensible_tension()
        else:
            self._elastic_tension(self._stiffness)
        if self.fault_hook is not None:
            self.fault_hook.actuators(self._f, self.time_s)
        if self._bends is None:
            np.copyto(self._ctrl, self._f)
        else:
            self._capstan()
        if self.held:
            self._steps += 1
            return
        if self._gauge_on:
            self._apply_gauge()
        mujoco.mj_step2(self.model, self.data)  # forces, acceleration, integration
        mujoco.mj_step1(self.model, self.data)  # positions and velocities of the new state
        self._steps += 1

    def _inextensible_tension(self) -> None:
        """The lag towards the command, then the motor envelope at the winch speed, which is
        the tendon's shortening speed; never below 0 [N]."""
        # (np.minimum/np.maximum: np.clip costs twice as much on short arrays)
        np.multiply(self._ten_velocity, self._cap_b, out=self._cap)
        self._cap += self._cap_a
        np.minimum(self._cap, self._cap_hi, out=self._cap)
        np.subtract(self._cmd, self._f, out=self._tmp)
        self._tmp *= self._alpha
        self._f += self._tmp
        np.minimum(self._f, self._cap, out=self._f)
        np.maximum(self._f, 0.0, out=self._f)

    def _elastic_tension(self, k: FloatArray) -> None:
        """The lag's change, within what the winch's speed line lets the wire's stretch do this
        step: ``df = k dt (v_path + v_in)`` with ``-v_per_volt (V + R I) <= v_in <=
        v_per_volt (V - R I)`` at the present current; then the current limit (beyond it the
        load back-drives the winch) and a slack wire's 0 [N]."""
        act = self.config.actuator
        if self._kdt is None or self._kdt[0] is not k:
            self._kdt = (k, k * self.dt_s)
        kdt = self._kdt[1]
        f, v = self._f, self._ten_velocity
        change, drop, upper, lower = self._elastic_scratch
        # every step: into fixed buffers, in the same order of operations as the formula
        np.subtract(self._cmd, f, out=change)
        change *= self._alpha
        np.multiply(f, act.terminal_resistance_ohm, out=drop)
        drop *= self._amp_per_n  # R I [V]
        np.subtract(act.supply_voltage_v, drop, out=upper)
        upper *= self._v_per_volt
        upper += v
        upper *= kdt  # k dt (v + v_per_volt (V - R I))
        np.add(drop, act.supply_voltage_v, out=lower)
        lower *= self._v_per_volt
        np.subtract(v, lower, out=lower)
        lower *= kdt  # k dt (v - v_per_volt (V + R I))
        np.minimum(change, upper, out=change)
        np.maximum(change, lower, out=change)
        f += change
        np.minimum(f, self._cap_hi, out=f)
        np.maximum(f, 0.0, out=f)

    def _capstan(self) -> None:
        """Actuator force and tendon friction of this step from the measured tension (module
        docstring): ``f cosh(mu theta)`` and damping ``(f0 + f sinh(mu theta)) / max(|v|,
        v_s)``, ``f0`` the band's load-independent part."""
        assert self._bends is not None
        # every step: into fixed buffers, cached views of MjModel/MjData included
        np.add(self._bends(self.data), self._routing, out=self._wrap)
        mt, speed, band = self._mu_theta, self._speed, self._band
        np.multiply(self._wrap, self._mu, out=mt)
        np.cosh(mt, out=speed)
        np.multiply(self._f, speed, out=self._ctrl)
        np.sinh(mt, out=band)
        band *= self._f
        band += self._band0
        np.abs(self._ten_velocity, out=speed)
        np.maximum(speed, self._creep, out=speed)
        if self._tendons_in_order:
            np.divide(band, speed, out=self._damping)
        else:
            self._damping[self._tids] = band / speed

    @property
    def steps(self) -> int:
        """Physics steps since the reset."""
        return self._steps

    @property
    def time_s(self) -> float:
        """The clock of the mock: ``stamp0_s`` plus the physics time since the reset [s]."""
        return self.stamp0_s + self._steps * self.dt_s

    # -- the force gauge --------------------------------------------------------------------------
    def set_gauge(self, tip_m: npt.ArrayLike, axis: npt.ArrayLike) -> None:
        """Hold the gauge with its tip at ``tip_m`` (world) [m], pushing along ``axis``."""
        tip = np.asarray(tip_m, dtype=float)
        ax = np.asarray(axis, dtype=float)
        norm = float(np.linalg.norm(ax)) if ax.shape == (3,) else 0.0
        if tip.shape != (3,) or not np.all(np.isfinite(tip)) or not norm > 1e-9 \
                or not math.isfinite(norm):
            raise InputError("MockArm.set_gauge", "a finite tip (3,) and a non-zero axis (3,)",
                             (tip.tolist(), ax.tolist()))
        self._gauge_tip[:] = tip
        self._gauge_axis[:] = ax / norm
        self._gauge_on = True

    def clear_gauge(self) -> None:
        """Take the gauge away."""
        self._gauge_on = False
        self._gauge_force = 0.0
        self.data.qfrc_applied[:] = 0.0

    @property
    def gauge_force_n(self) -> float:
        """Force the gauge applied at the last step, along its axis (>= 0) [N]."""
        return self._gauge_force

    def _apply_gauge(self) -> None:
        p = self._elbow_world()
        pen = float((self._gauge_tip - p) @ self._gauge_axis) + self.config.gauge.contact_radius_m
        force = self.config.gauge.stiffness_n_m * pen if pen > 0.0 else 0.0
        self._gauge_force = force
        self._qfrc[:] = 0.0
        if force > 0.0:
            mujoco.mj_applyFT(self.model, self.data, force * self._gauge_axis, np.zeros(3), p,
                              self._elbow_body, self._qfrc)
        self.data.qfrc_applied[:] = self._qfrc

    def _elbow_world(self) -> FloatArray:
        return self.arm.point_world(self.data, self._elbow_body, self._elbow_point)

    # -- sensors (raw units) --------------------------------------------------------------------
    def read_potentiometers(self) -> FloatArray:
        """(n,) potentiometer ADC counts: offset, Gaussian noise, quantised, clipped to the ADC."""
        cal = self.calibration
        counts = cal.rad_to_counts(self._qpos[self._qadr]) + self._pot_offset_error
        noise = self.config.sensors.potentiometer_noise_counts
        if noise > 0.0:
            counts += noise * self._noise.standard_normal(self.n)
        counts = np.maximum(np.minimum(np.rint(counts), cal.pot_full_scale_counts), 0.0)
        if self.fault_hook is not None:
            counts = self.fault_hook.potentiometers(counts, self.time_s)
        return counts

    def read_tendons(self) -> tuple[FloatArray, FloatArray]:
        """(encoder counts (m,), load-cell counts (m,)), quantised, with noise."""
        cal = self.calibration
        enc = cal.length_to_encoder(self._tendon_lengths() + self._encoder_shift)
        cell = cal.n_to_loadcell(self._f) + self._loadcell_offset_error
        sens = self.config.sensors
        if sens.encoder_noise_counts > 0.0:
            enc += sens.encoder_noise_counts * self._noise.standard_normal(self.m)
        if sens.loadcell_noise_counts > 0.0:
            cell += sens.loadcell_noise_counts * self._noise.standard_normal(self.m)
        if self.fault_hook is not None:
            return self.fault_hook.tendons(np.rint(enc), np.rint(cell), self.time_s)
        return np.rint(enc), np.rint(cell)

    # -- true state (for evaluation, never for the controller) ----------------------------------
    @property
    def q_rad(self) -> FloatArray:
        return np.array(self.data.qpos[self._qadr])

    @property
    def qd_rad_s(self) -> FloatArray:
        return np.array(self.data.qvel[self._vadr])

    @property
    def hand_position_m(self) -> FloatArray:
        """World position of the task point (robot.yaml arm.task_frame, the hand) [m]."""
        return self.arm.point_world(self.data, self._hand_body, self._hand_point)

    @property
    def elbow_position_m(self) -> FloatArray:
        """World position of the elbow point [m]."""
        return self._elbow_world()

    @property
    def tendon_tension_n(self) -> FloatArray:
        """(m,) tensions the actuators deliver [N]."""
        return self._f.copy()

    @property
    def command_tension_n(self) -> FloatArray:
        """(m,) target tensions received [N]."""
        return self._cmd.copy()

    @property
    def tendon_length_m(self) -> FloatArray:
        """(m,) true tendon lengths (the mock's own geometry) [m]."""
        return np.array(self._tendon_lengths())

    @property
    def tendon_velocity_m_s(self) -> FloatArray:
        """(m,) true lengthening speeds [m/s]."""
        return np.array(self._ten_velocity_all[self._tids])

    @property
    def wrap_angle_rad(self) -> FloatArray:
        """(m,) each wire's total turn at the last step, routing included [rad] (0 without
        capstan friction)."""
        return self._wrap.copy()

    @property
    def friction_band_n(self) -> FloatArray:
        """(m,) half width of each tendon's capstan friction band at the last step [N]."""
        return self._band.copy()

    def tension_capacity_n(self) -> FloatArray:
        """(m,) deliverable tension of an inextensible wire at the current winch speeds (the
        motor envelope) [N]."""
        return np.clip(self._cap_a + self._cap_b * self._ten_velocity_all[self._tids], 0.0,
                       self._cap_hi)

    def warnings(self) -> dict[str, int]:
        """MuJoCo's warning counters that are not zero."""
        return warning_counts(self.data)


def load_mock_config(robot: Robot, path: Path) -> MockArmConfig:
    """Parse ``mock_arm.yaml`` and check its per-joint lists against ``robot``."""
    cfg = load(MockArmConfig, path)
    cfg.physics.check_robot(robot, str(path), "physics")
    return cfg


def load_mock_arm(robot: Robot, seed: int | None = None,
                  hardware_file: str = "hardware.yaml",
                  mock_file: str = "mock_arm.yaml") -> MockArm:
    """The mock arm of ``robot`` from the config folder's hardware and mock files."""
    folder = robot.config_dir
    calibration = load_calibration(robot, folder / hardware_file)
    config = load_mock_config(robot, folder / mock_file)
    return MockArm(robot, calibration, config, seed, str(folder / mock_file))
