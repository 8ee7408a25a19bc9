"""Raw sensor and driver units <-> SI, per joint and per actuator (``hardware.yaml``, key
``calibration``).

- Potentiometer (one per joint): ``q = sign (counts - offset_counts) / counts_per_rad`` [rad];
  an ``adc_bits`` converter reads 0 .. 2^bits - 1 counts.
- Winch encoder (one per tendon actuator): ``counts_per_m = encoder_counts_per_rev /
  (2 pi winch_radius_m)``; the encoder reads ``encoder_offset_counts`` at the calibration pose,
  where the muscle length is ``reference_length_m`` (the model's length there unless measured);
  with ``encoder_sign = +1`` counts grow as the winch winds the tendon in (the muscle shortens):
  ``l = reference_length_m - encoder_sign (counts - encoder_offset_counts) / counts_per_m`` [m].
- Load cell: ``f = (counts - loadcell_offset_counts) / loadcell_counts_per_n`` [N].
- Driver command: ``units = driver_units_per_n f``.

The YAML may give ``potentiometer_defaults`` and ``tendon_defaults`` that every entry inherits
(an entry's own keys win), so a file lists only what differs per part. :class:`Calibration`
checks the file against the robot (a calibration for every joint and every muscle's actuator,
no unknown ones) and offers vectorised conversions in robot order: joints as in ``robot.yaml``,
tendons as in the muscles file.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import check_known_keys, parse, read_yaml, spec
from musculo_control.errors import ConfigError

if TYPE_CHECKING:  # only a type here: the driver nodes load no rigid-body model
    from musculo_control.model.arm import Arm
    from musculo_control.model.robot import Robot

FloatArray = npt.NDArray[np.float64]
ArrayLike = npt.ArrayLike


def _check_sign(value: int, file: str, key: str) -> None:
    if value not in (-1, 1):
        raise ConfigError(file, key, "+1 or -1", value)


@dataclass(frozen=True, kw_only=True)
class PotentiometerCalibration:
    """One joint's potentiometer and its ADC."""

    joint: str = spec(doc="joint name (robot.yaml arm.joints)")
    adc_bits: int = spec(12, ge=1, le=32, doc="ADC resolution [bit]; counts run 0 .. 2^bits - 1")
    counts_per_rad: float = spec(gt=0.0, doc="ADC counts per radian of joint angle [counts/rad]")
    offset_counts: float = spec(doc="ADC reading at q = 0 [counts]")
    sign: int = spec(1, doc="+1 if counts grow with q, -1 if they fall")

    def check(self, file: str, key: str) -> None:
        _check_sign(self.sign, file, f"{key}.sign")

    @property
    def full_scale_counts(self) -> int:
        return 2**self.adc_bits - 1


@dataclass(frozen=True, kw_only=True)
class TendonCalibration:
    """One tendon actuator module: winch encoder, load cell and driver command scale."""

    actuator_id: int = spec(ge=0, doc="actuator id (muscles file actuator_id)")
    encoder_counts_per_rev: float = spec(gt=0.0, doc="encoder counts per winch revolution "
                                                     "(motor counts x gear ratio) [counts/rev]")
    winch_radius_m: float = spec(gt=0.0, doc="radius the tendon winds on [m]")
    encoder_sign: int = spec(1, doc="+1 if counts grow as the tendon is wound in (shortens)")
    encoder_offset_counts: float = spec(0.0, doc="encoder reading at the calibration pose [counts]")
    reference_length_m: float | None = spec(
        None, gt=0.0, doc="muscle length at the calibration pose [m]; absent = the model's")
    loadcell_counts_per_n: float = spec(gt=0.0, doc="load-cell counts per newton [counts/N]")
    loadcell_offset_counts: float = spec(0.0, doc="load-cell reading at zero tension [counts]")
    driver_units_per_n: float = spec(gt=0.0, doc="driver command units per newton [units/N]")

    def check(self, file: str, key: str) -> None:
        _check_sign(self.encoder_sign, file, f"{key}.encoder_sign")

    @property
    def encoder_counts_per_m(self) -> float:
        return self.encoder_counts_per_rev / (2.0 * math.pi * self.winch_radius_m)


@dataclass(frozen=True, kw_only=True)
class CalibrationConfig:
    """The ``calibration`` section of ``hardware.yaml`` after defaults are merged."""

    calibration_pose_rad: tuple[float, ...] = spec(
        doc="joint angles at which the winch encoders were zeroed [rad]")
    potentiometers: tuple[PotentiometerCalibration, ...] = spec(min_length=1,
                                                                doc="one per joint")
    tendons: tuple[TendonCalibration, ...] = spec(min_length=1, doc="one per tendon actuator")


def _merge_defaults(data: Any, list_key: str, defaults_key: str, cls: type,
                    file: str, key: str) -> Any:
    """Copy ``data[defaults_key]`` into every entry of ``data[list_key]`` (entries win)."""
    defaults = data.pop(defaults_key, None)
    if defaults is None:
        return data
    where = f"{key}.{defaults_key}"
    if not isinstance(defaults, dict):
        raise ConfigError(file, where, "a mapping of default values", defaults)
    check_known_keys(defaults, {f.name for f in dataclasses.fields(cls)}, file, where)
    entries = data.get(list_key)
    if isinstance(entries, list):
        data[list_key] = [{**defaults, **e} if isinstance(e, dict) else e for e in entries]
    return data


def load_calibration_config(path: Path, key: str = "calibration") -> CalibrationConfig:
    """Read ``key`` of the hardware file, merge per-part defaults and parse."""
    file = str(path)
    raw = read_yaml(Path(path))
    if not isinstance(raw, dict) or key not in raw:
        raise ConfigError(file, key, f"a top-level mapping with key '{key}'", None)
    data = raw[key]
    if not isinstance(data, dict):
        raise ConfigError(file, key, "a mapping", data)
    data = dict(data)
    data = _merge_defaults(data, "potentiometers", "potentiometer_defaults",
                           PotentiometerCalibration, file, key)
    data = _merge_defaults(data, "tendons", "tendon_defaults", TendonCalibration, file, key)
    return parse(CalibrationConfig, data, file, key)


class Calibration:
    """Every part's calibration checked against the robot; vectorised conversions.

    Arrays are (n,) per joint in ``robot.arm.joint_names`` order and (m,) per tendon in
    ``robot.muscle_names`` order. Inputs may be any array-like of that shape; conversions do not
    validate values (the reader and the driver do).
    """

    def __init__(self, robot: Robot, config: CalibrationConfig, file: str,
                 key: str = "calibration") -> None:
        self.config = config
        self.file = file
        self.joint_names = robot.arm.joint_names
        self.actuator_ids: tuple[int, ...] = tuple(robot.actuator_ids)
        self.muscle_names = robot.muscle_names
        self._potentiometers(robot.arm, config, file, key)
        self._tendons(robot, config, file, key)

    def _potentiometers(self, arm: Arm, config: CalibrationConfig, file: str, key: str) -> None:
        """One potentiometer calibration per joint of ``arm``, its joint range inside the
        ADC's counts; their (n,) arrays in joint order."""
        by_joint: dict[str, PotentiometerCalibration] = {}
        for i, p in enumerate(config.potentiometers):
            where = f"{key}.potentiometers[{i}].joint"
            if p.joint not in arm.joint_names:
                raise ConfigError(file, where, f"a joint of the robot {list(arm.joint_names)}",
                                  p.joint)
            if p.joint in by_joint:
                raise ConfigError(file, where, "one calibration per joint", p.joint)
            by_joint[p.joint] = p
        missing = [j for j in arm.joint_names if j not in by_joint]
        if missing:
            raise ConfigError(file, f"{key}.potentiometers",
                              f"a calibration for every joint; missing {missing}", None)
        self.potentiometers: Mapping[str, PotentiometerCalibration] = by_joint
        pots = [by_joint[j] for j in arm.joint_names]
        for j, p in enumerate(pots):
            lo, hi = sorted((p.offset_counts + p.sign * p.counts_per_rad * arm.lower_rad[j],
                             p.offset_counts + p.sign * p.counts_per_rad * arm.upper_rad[j]))
            if lo < 0.0 or hi > p.full_scale_counts:
                idx = config.potentiometers.index(p)
                raise ConfigError(file, f"{key}.potentiometers[{idx}]",
                                  f"joint '{p.joint}' range [{arm.lower_rad[j]:.3f}, "
                                  f"{arm.upper_rad[j]:.3f}] rad inside the ADC's 0..."
                                  f"{p.full_scale_counts} counts", f"{lo:.0f}...{hi:.0f} counts")
        self.pot_counts_per_rad: FloatArray = np.array([p.counts_per_rad for p in pots])
        self.pot_offset_counts: FloatArray = np.array([p.offset_counts for p in pots])
        self.pot_sign: FloatArray = np.array([float(p.sign) for p in pots])
        self.pot_full_scale_counts: FloatArray = np.array([float(p.full_scale_counts)
                                                           for p in pots])

    def _tendons(self, robot: Robot, config: CalibrationConfig, file: str, key: str) -> None:
        """One tendon calibration per actuator of the muscles file; the calibration pose
        inside the joint limits, where a tendon without a ``reference_length_m`` takes the
        model's length; their (m,) arrays in muscle order."""
        arm, ids = robot.arm, list(robot.actuator_ids)
        by_id: dict[int, TendonCalibration] = {}
        for i, t in enumerate(config.tendons):
            where = f"{key}.tendons[{i}].actuator_id"
            if t.actuator_id not in ids:
                raise ConfigError(file, where, f"an actuator_id of the muscles file {ids}",
                                  t.actuator_id)
            if t.actuator_id in by_id:
                raise ConfigError(file, where, "one calibration per actuator", t.actuator_id)
            by_id[t.actuator_id] = t
        missing_ids = [a for a in ids if a not in by_id]
        if missing_ids:
            raise ConfigError(file, f"{key}.tendons",
                              f"a calibration for every muscle's actuator; missing {missing_ids}",
                              None)
        self.tendons: Mapping[int, TendonCalibration] = by_id
        tens = [by_id[a] for a in ids]
        n = arm.n_joints
        pose = config.calibration_pose_rad
        if len(pose) != n:
            raise ConfigError(file, f"{key}.calibration_pose_rad", f"{n} joint angles",
                              f"{len(pose)} values")
        self.calibration_pose_rad: FloatArray = np.array(pose)
        if np.any(self.calibration_pose_rad < arm.lower_rad) or np.any(
                self.calibration_pose_rad > arm.upper_rad):
            raise ConfigError(file, f"{key}.calibration_pose_rad", "a pose inside the joint limits",
                              list(pose))
        model_lengths = robot.geometry.lengths_at(self.calibration_pose_rad)
        self.reference_length_m: FloatArray = np.array([
            t.reference_length_m if t.reference_length_m is not None else model_lengths[i]
            for i, t in enumerate(tens)])
        self.winch_radius_m: FloatArray = np.array([t.winch_radius_m for t in tens])
        self.encoder_counts_per_m: FloatArray = np.array([t.encoder_counts_per_m for t in tens])
        self.encoder_sign: FloatArray = np.array([float(t.encoder_sign) for t in tens])
        self.encoder_offset_counts: FloatArray = np.array([t.encoder_offset_counts for t in tens])
        self.loadcell_counts_per_n: FloatArray = np.array([t.loadcell_counts_per_n for t in tens])
        self.loadcell_offset_counts: FloatArray = np.array([t.loadcell_offset_counts
                                                            for t in tens])
        self.driver_units_per_n: FloatArray = np.array([t.driver_units_per_n for t in tens])

    # -- potentiometers ---------------------------------------------------------------------------
    def counts_to_rad(self, counts: ArrayLike) -> FloatArray:
        """(n,) potentiometer counts -> joint angles [rad]."""
        return self.pot_sign * (np.asarray(counts, float) - self.pot_offset_counts) \
            / self.pot_counts_per_rad

    def rad_to_counts(self, q_rad: ArrayLike) -> FloatArray:
        """(n,) joint angles [rad] -> ideal (unquantised) potentiometer counts."""
        return self.pot_offset_counts + self.pot_sign * self.pot_counts_per_rad \
            * np.asarray(q_rad, float)

    # -- winch encoders ---------------------------------------------------------------------------
    def encoder_to_length(self, counts: ArrayLike) -> FloatArray:
        """(m,) encoder counts -> muscle lengths [m]."""
        return self.reference_length_m - self.encoder_sign * (
            np.asarray(counts, float) - self.encoder_offset_counts) / self.encoder_counts_per_m

    def length_to_encoder(self, length_m: ArrayLike) -> FloatArray:
        """(m,) muscle lengths [m] -> ideal encoder counts."""
        return self.encoder_offset_counts + self.encoder_sign * self.encoder_counts_per_m * (
            self.reference_length_m - np.asarray(length_m, float))

    def encoder_rate_to_velocity(self, counts_per_s: ArrayLike) -> FloatArray:
        """(m,) encoder count rates [counts/s] -> muscle lengthening speeds [m/s]."""
        return -self.encoder_sign * np.asarray(counts_per_s, float) / self.encoder_counts_per_m

    # -- load cells -------------------------------------------------------------------------------
    def loadcell_to_n(self, counts: ArrayLike) -> FloatArray:
        """(m,) load-cell counts -> tensions [N]."""
        return (np.asarray(counts, float) - self.loadcell_offset_counts) \
            / self.loadcell_counts_per_n

    def n_to_loadcell(self, tension_n: ArrayLike) -> FloatArray:
        """(m,) tensions [N] -> ideal load-cell counts."""
        return self.loadcell_offset_counts + self.loadcell_counts_per_n \
            * np.asarray(tension_n, float)

    # -- driver commands --------------------------------------------------------------------------
    def n_to_driver(self, tension_n: ArrayLike) -> FloatArray:
        """(m,) tensions [N] -> driver command units."""
        return self.driver_units_per_n * np.asarray(tension_n, float)

    def driver_to_n(self, units: ArrayLike) -> FloatArray:
        """(m,) driver command units -> tensions [N]."""
        return np.asarray(units, float) / self.driver_units_per_n


def load_calibration(robot: Robot, path: Path, key: str = "calibration") -> Calibration:
    """Load ``key`` of the hardware file and check it against ``robot``."""
    return Calibration(robot, load_calibration_config(path, key), str(path), key)
