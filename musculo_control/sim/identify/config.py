"""``identify.yaml``: what ``musculo identify`` fits and how (doc/identify.md).

Each parameter names a ``mock_arm.yaml`` key and is fitted either as its value
(``scale: false``, bounds in the key's units) or as a factor on the configured value
(``scale: true``, bounds as factors [-]; a per-joint list is scaled as a whole).
``link_mass_scale`` (``mock_arm.yaml`` ``physics.link_mass_scale``) is one factor on every
link's mass and inertia, or with ``per_link: true`` one factor per link (``links``, or every
link with mass that a joint moves). ``moment_arm_scale`` (``physics.moment_arm_scale``) is
likewise one factor on every muscle's moment arms, or with ``per_muscle: true`` one per muscle
(``muscles``, or every muscle): what stands for the via-points' errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from musculo_control.config.parser import load, spec
from musculo_control.errors import ConfigError

#: The keys a parameter may name: the mock_arm.yaml keys the fit can change, and the mass scale.
#: value: (fitted as a scale only, what it is)
PARAMETER_KEYS: dict[str, tuple[bool, str]] = {
    "actuator.time_constant_s": (False, "tension-loop lag [s]"),
    "tendon.friction_coefficient": (False, "capstan friction coefficient of the wires [-]"),
    "tendon.constant_friction_n": (False, "load-independent friction band of the wires [N]"),
    "physics.tendon_frictionloss_n": (False, "MuJoCo dry friction of every tendon [N]"),
    "physics.joint_damping_nm_s_rad": (True, "joint viscous damping, per joint [Nm s/rad]"),
    "physics.joint_frictionloss_nm": (True, "joint dry friction, per joint [Nm]"),
    "link_mass_scale": (True, "link masses and inertias, physics.link_mass_scale [-]"),
    "moment_arm_scale": (True, "muscle moment arms, physics.moment_arm_scale [-]"),
}

#: The factors fitted one per item (a link, a muscle) or one for all: identify.yaml key ->
#: (the mock_arm.yaml list it sets, what an item is)
ITEM_SCALES: dict[str, tuple[str, str]] = {
    "link_mass_scale": ("physics.link_mass_scale", "link"),
    "moment_arm_scale": ("physics.moment_arm_scale", "muscle"),
}


@dataclass(frozen=True, kw_only=True)
class ParameterConfig:
    """One fitted parameter."""

    key: str = spec(choices=tuple(PARAMETER_KEYS),
                    doc="mock_arm.yaml key, or link_mass_scale, or moment_arm_scale")
    scale: bool = spec(False, doc="fit a factor on the configured value (bounds as factors [-]) "
                                  "instead of the value itself (bounds in the key's units)")
    lower: float = spec(ge=0.0, doc="lower bound: the physical range's [key's units or -]")
    upper: float = spec(gt=0.0, doc="upper bound [key's units or -]")
    prior_std: float | None = spec(
        None, gt=0.0, doc="how far from the configured value the parameter is expected to be, "
                          "one standard deviation [key's units or -]: adds the residual "
                          "(x - configured) / prior_std, so that what the data do not tell "
                          "apart stays near the configured value instead of drifting to a "
                          "bound; absent: no prior (the determination judges the data alone)")
    per_link: bool = spec(False, doc="link_mass_scale only: one factor per link instead of "
                                     "one for all links")
    links: tuple[str, ...] = spec((), doc="link_mass_scale with per_link: the links fitted, "
                                          "URDF links or MJCF bodies (the others keep their "
                                          "configured mass); empty: every link with mass that "
                                          "a joint moves")
    per_muscle: bool = spec(False, doc="moment_arm_scale only: one factor per muscle instead "
                                       "of one for all muscles")
    muscles: tuple[str, ...] = spec((), doc="moment_arm_scale with per_muscle: the muscles "
                                            "fitted (the others keep their configured "
                                            "factor); empty: every muscle")


@dataclass(frozen=True, kw_only=True)
class WindowConfig:
    """The short prediction windows the fit compares."""

    length_s: float = spec(0.3, gt=0.0, doc="length of one window [s]")
    stride_s: float = spec(0.1, gt=0.0, doc="windows start this far apart [s]")
    max_windows: int = spec(60, ge=1, doc="at most this many windows, evenly subsampled "
                                          "(the fit's cost grows with them)")
    skip_start_s: float = spec(0.05, ge=0.0, doc="no window starts in the first [s] of a bag")
    velocity_fit_half_width_s: float = spec(
        0.024, gt=0.0, doc="a window's initial joint rates: slope of a quadratic fitted to the "
                           "recorded angles within this much either side [s]")
    lost_command_periods: float = spec(
        1.5, gt=1.0, doc="a gap between two recorded commands longer than this many of their "
                         "median period is a command the bag lost (the next came at least half "
                         "a period late); no window spans one [-]")
    command_delay_s: float = spec(
        0.003, ge=0.0, doc="recorded command to the actuator module: the hops controller -> "
                           "driver -> module and half a driver period [s] (not fitted)")


@dataclass(frozen=True, kw_only=True)
class ResidualConfig:
    """What one unit of residual is: the recording's own noise and the model's."""

    joint_angle_rad: float = spec(0.002, gt=0.0, doc="joint angle error worth one unit [rad]")
    tension_n: float = spec(2.0, gt=0.0, doc="tension error worth one unit [N]")
    loss: str = spec("soft_l1", choices=("linear", "soft_l1", "huber", "cauchy"),
                     doc="robust loss of scipy.optimize.least_squares")
    loss_scale: float = spec(3.0, gt=0.0, doc="residual (in units) where the loss turns robust")


@dataclass(frozen=True, kw_only=True)
class SolverConfig:
    """scipy.optimize.least_squares settings."""

    max_evaluations: int = spec(40, ge=1, doc="largest number of residual evaluations")
    relative_step: float = spec(0.02, gt=0.0, lt=1.0,
                                doc="finite-difference step, relative to each parameter's range "
                                    "[-] (the simulation's friction is not smooth below it)")
    tolerance: float = spec(1e-4, gt=0.0, doc="ftol and xtol [-]")


@dataclass(frozen=True, kw_only=True)
class DeterminedConfig:
    """When the data determined a parameter."""

    max_relative_std: float = spec(0.15, gt=0.0,
                                   doc="its standard deviation at most this share of its bound "
                                       "range [-]")
    max_correlation: float = spec(0.9, gt=0.0, le=1.0,
                                  doc="and no correlation with another parameter above this [-]")


@dataclass(frozen=True, kw_only=True)
class IdentifyConfig:
    """``identify.yaml``."""

    parameters: tuple[ParameterConfig, ...] = spec(min_length=1, doc="the fitted parameters")
    windows: WindowConfig = spec(WindowConfig(), doc="the prediction windows")
    residuals: ResidualConfig = spec(ResidualConfig(), doc="residual scales and loss")
    solver: SolverConfig = spec(SolverConfig(), doc="least-squares settings")
    determined: DeterminedConfig = spec(DeterminedConfig(), doc="what counts as determined")
    horizons_s: tuple[float, ...] = spec((0.1, 0.5, 1.0), min_length=1,
                                         doc="prediction horizons of the report [s]")
    report_stride_s: float = spec(0.2, gt=0.0, doc="the report's windows start this far "
                                                   "apart [s]")
    nominal_geometry: bool = spec(
        True, doc="fit on the robot's nominal masses and via-points (mock_arm.yaml model_error "
                  "off): the best guess of an unknown random error is none")


def load_identify_config(path: Path) -> IdentifyConfig:
    """Parse ``identify.yaml`` and check each parameter's bounds."""
    cfg = load(IdentifyConfig, path)
    seen: set[str] = set()
    for i, p in enumerate(cfg.parameters):
        where = f"parameters[{i}]"
        if p.key in seen:
            raise ConfigError(str(path), f"{where}.key", "each key once", p.key)
        seen.add(p.key)
        if not p.lower < p.upper:
            raise ConfigError(str(path), f"{where}.upper", f"above lower ({p.lower})", p.upper)
        for key, each, items, what in (("link_mass_scale", p.per_link, p.links, "link"),
                                       ("moment_arm_scale", p.per_muscle, p.muscles, "muscle")):
            flag, names = f"{where}.per_{what}", f"{where}.{what}s"
            if p.key != key and (each or items):
                raise ConfigError(str(path), flag if each else names, f"only with key {key}",
                                  p.key)
            if items and not each:
                raise ConfigError(str(path), flag, f"true: {what}s are fitted one factor each",
                                  each)
            if len(set(items)) != len(items):
                raise ConfigError(str(path), names, f"each {what} once", list(items))
        if PARAMETER_KEYS[p.key][0] and not p.scale:
            raise ConfigError(str(path), f"{where}.scale",
                              f"true: {p.key} is fitted as a factor", p.scale)
    return cfg
