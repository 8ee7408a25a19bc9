"""``safety.yaml``: the thresholds of the safety rules (see :mod:`musculo_control.safety.rules`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from musculo_control.config.parser import load_with_overrides, spec
from musculo_control.errors import ConfigError
from musculo_control.hardware.tendon_driver import TendonDriverConfig
from musculo_control.safety.authority import AuthorityConfig
from musculo_control.safety.follow import FollowConfig
from musculo_control.safety.stops import StopConfig
from musculo_control.streams import LateInputsConfig


@dataclass(frozen=True, kw_only=True)
class TendonMonitorConfig:
    """Per-tendon checks on the measured muscle state (``safety.yaml`` key ``tendons``)."""

    slack_tension_n: float = spec(gt=0.0, doc="measured tension below this is a slack or "
                                              "snapped tendon [N]")
    slack_samples: int = spec(3, ge=1, doc="consecutive slack samples before a fault (a joint "
                                           "hitting its stop unloads a tendon for one)")
    tracking_tolerance_n: float = spec(gt=0.0, doc="largest expected - measured tension: an "
                                                   "actuator short of its command [N]")
    tracking_excess_tolerance_n: float = spec(
        gt=0.0, doc="largest measured - expected tension: a tendon that the arm's load pulls "
                    "out reads above its command (the winch back-driven, the wire's friction "
                    "band) [N]")
    tracking_samples: int = spec(2, ge=1, doc="consecutive samples off by more before a fault")
    tracking_max_rate_m_s: float = spec(gt=0.0, doc="check tracking only on tendons slower "
                                                    "than this: faster, the winch motor's "
                                                    "back-EMF limits the tension by design "
                                                    "[m/s]")
    actuator_time_constant_s: float = spec(gt=0.0, doc="first-order lag of the actuators' "
                                                       "tension loop, for the expectation [s]")
    command_delay_s: float = spec(0.0, ge=0.0, doc="time from the controller's command to the "
                                                   "actuator, for the expectation [s]")
    command_jitter_s: float = spec(0.0, ge=0.0, doc="how much later than command_delay_s a "
                                                    "command may reach the actuators: the "
                                                    "expectation is a band over that window "
                                                    "[s]")
    rise_rate_n_s: float | None = spec(None, gt=0.0, doc="a healthy tension step rises at "
                                                          "least this fast (an elastic wire: "
                                                          "its stiffness times the winch's "
                                                          "speed); the expectation's lower edge "
                                                          "rises no faster; null: the lag alone "
                                                          "[N/s]")
    tracking_resync_gap_s: float = spec(
        gt=0.0, doc="a gap longer than this between two driver outputs or two tendon samples "
                    "seen by the monitor (lost or late messages): the expectation restarts "
                    "from the load cells [s]")
    tracking_confirm_window_s: float = spec(
        2.0, gt=0.0, doc="a tracking miss is actuator_lagging (not latched: the commands may "
                         "have reached the modules late) unless it comes within this of an "
                         "earlier one, after every tendon tracked again: then "
                         "actuator_tracking, latched [s]")
    tracking_clean_s: float = spec(
        0.05, gt=0.0, doc="every tendon tracking this long after a miss: the actuators work "
                          "(the next miss confirms a weak one) [s]")
    watchdog_tension_n: float | None = spec(
        None, ge=0.0, doc="the tension an actuator module holds when the driver's commands stop "
                          "reaching it (its own watchdog); every loaded tendon falling towards "
                          "it together, by one factor at the actuators' lag, is the rule "
                          "actuator_watchdog (a lost link, not latched) rather than "
                          "actuator_tracking; null: modules without a watchdog [N]")
    watchdog_tolerance_n: float = spec(
        10.0, gt=0.0, doc="how far each loaded tendon may read from the common fall of "
                          "actuator_watchdog (load-cell noise; a cap on the tensions leaves the "
                          "tendons under it unmoved, further than this from the fall) [N]")
    max_length_rate_m_s: float = spec(gt=0.0, doc="largest plausible |muscle length rate| [m/s]")
    length_margin_m: float = spec(0.01, ge=0.0, doc="muscle lengths beyond [l_min, l_max] by "
                                                    "more are faults [m]")


@dataclass(frozen=True, kw_only=True)
class ConsistencyConfig:
    """Measured muscle lengths against the model's at the measured joint angles."""

    enabled: bool = spec(True, doc="check it")
    tolerance_m: float = spec(gt=0.0, doc="largest change of (measured - model) muscle length "
                                          "from its baseline [m]")
    baseline_time_constant_s: float = spec(gt=0.0, doc="the baseline follows the mismatch with "
                                                       "this lag (model error drifts slowly "
                                                       "with the pose) [s]")
    relative_tolerance: float = spec(ge=0.0, lt=1.0, doc="more tolerance per muscle: this "
                                                         "fraction of its recent travel (the "
                                                         "model's moment arms are this far "
                                                         "off) [-]")
    moment_arm_error_m: float = spec(0.0, ge=0.0, doc="more tolerance per muscle: this times "
                                                      "the recent rotation of the joints it "
                                                      "spans (the model's moment arms may be "
                                                      "this far off in absolute terms, as a "
                                                      "via-point this far off displaces a "
                                                      "lever) [m/rad]")
    max_stamp_skew_s: float = spec(0.001, ge=0.0, doc="compare only joint and tendon samples "
                                                      "this close in time [s]")
    pair_history_s: float = spec(0.02, ge=0.0, doc="look this far back among the joint samples "
                                                   "for the one taken with the newest tendon "
                                                   "sample (joints and tendons reach a node by "
                                                   "different hops) [s]")
    snap_margin_m: float = spec(gt=0.0, doc="a slack tendon whose winch has wound in this much "
                                            "past its path (plus the travel allowance) has "
                                            "snapped [m]")


@dataclass(frozen=True, kw_only=True)
class SafetyConfig:
    """The whole ``safety.yaml``."""

    inputs: LateInputsConfig = spec(doc="how old each input may be: late, then stale")
    stops: StopConfig = spec(StopConfig(), doc="the stop each fault calls: hold, descend or cut")
    recovery_hold_s: float = spec(ge=0.0, doc="a fault must be absent this long before "
                                              "control resumes [s]")
    resume_ramp_s: float = spec(gt=0.0, doc="on resuming, the goal starts at the hand's pose "
                                            "and velocity and joins the real goal over this "
                                            "[s]")
    resume_speed_m_s: float = spec(0.25, gt=0.0, doc="a resume from far away lasts longer "
                                                     "than resume_ramp_s, so that its goal "
                                                     "moves at most this fast (an arm lowered "
                                                     "by a stop is taken back up, not yanked) "
                                                     "[m/s]")
    saturation_timeout_s: float = spec(gt=0.0, doc="a tension above the limit longer: "
                                                   "warning saturation_persistent [s]")
    tendons: TendonMonitorConfig = spec(doc="per-tendon checks")
    consistency: ConsistencyConfig = spec(doc="joint angles against muscle lengths")
    log_length: int = spec(256, ge=1, doc="state transitions kept in memory")
    authority: AuthorityConfig = spec(AuthorityConfig(), doc="who may write the command "
                                                            "streams (node graph only)")
    follow: FollowConfig = spec(FollowConfig(), doc="whether the tendon driver applies the "
                                                    "controller's commands")


def load_safety_config(config_dir: str | Path, driver: TendonDriverConfig,
                       overrides: dict[str, Any] | None = None,
                       hardware_file: str = "hardware.yaml") -> SafetyConfig:
    """Parse ``safety.yaml`` of a config folder (with optional dotted-key overrides) and check
    it against the tendon driver."""
    path = Path(config_dir) / "safety.yaml"
    cfg = load_with_overrides(SafetyConfig, path, overrides)
    if not cfg.tendons.slack_tension_n < driver.min_tension_n:
        raise ConfigError(str(path), "tendons.slack_tension_n",
                          f"less than the minimum tension {driver.min_tension_n} N (robot.yaml "
                          f"hill.f_min_n), or every taut tendon reads as slack",
                          cfg.tendons.slack_tension_n)
    span = driver.max_tension_n - driver.min_tension_n
    if not cfg.tendons.tracking_tolerance_n < span:
        raise ConfigError(str(path), "tendons.tracking_tolerance_n",
                          f"less than the driver's tension span {span} N",
                          cfg.tendons.tracking_tolerance_n)
    return cfg
