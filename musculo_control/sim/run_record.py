"""What a run records about itself (run.yaml): parameters, initial state, what the seed drew,
provenance."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.model.robot import Robot
from musculo_control.provenance import provenance
from musculo_control.sim.mock_arm import MockArm
from musculo_control.sim.setup import Setup

FloatArray = npt.NDArray[np.float64]


def run_record(setup: Setup, mock: MockArm, experiment: str, controller: str, q0: FloatArray,
              started_unix_ns: int, extra: dict[str, Any]) -> dict[str, Any]:
    """run.yaml: parameters, initial state, what the seed drew, provenance (metrics follow)."""
    return {
        "experiment": experiment,
        "controller": controller,
        "config_dir": str(setup.robot.config_dir),
        "overrides": {"controller": setup.overrides.controller,
                      "experiments": setup.overrides.experiments,
                      "mock_arm": setup.overrides.mock_arm, "robot": setup.overrides.robot},
        "parameters": {"controller": dataclasses.asdict(setup.controller_config),
                       "experiments": dataclasses.asdict(setup.experiments),
                       "mock_arm": dataclasses.asdict(setup.mock_config)},
        "initial_state": {"q_rad": q0, "qd_rad_s": np.zeros_like(q0)},
        "random": drawn_record(setup, mock),
        "provenance": provenance(),
        "log": {"stamp_origin_unix_ns": started_unix_ns,
                "stamps": "bag stamps = stamp_origin_unix_ns + simulated time"},
        **extra,
    }


def drawn_record(setup: Setup, mock: MockArm) -> dict[str, Any]:
    """What ``mock_arm.seed`` drew for this run, by name (for run.yaml)."""
    robot = setup.robot
    drawn = mock.drawn()
    error: Any = drawn["model_error"]
    record: dict[str, Any] = {}
    for f in dataclasses.fields(error):  # every part of the model error, by name
        value = getattr(error, f.name)
        if f.name == "mass_scale":
            record["link_mass_scale"] = {k: round(float(v), 6) for k, v in value.items()}
        elif f.name == "via_point_offset_m":
            record["via_point_offset_mm"] = _per_muscle(robot, 1e3 * np.asarray(value))
        else:
            record[f.name] = np.round(np.asarray(value, dtype=float), 9).tolist()
    sensors = setup.mock_config.sensors
    pot = np.asarray(drawn["potentiometer_offset_error_counts"])
    return {
        "mock_arm.seed": drawn["seed"],
        "model_error_enabled": setup.mock_config.model_error.enabled,
        **record,
        "potentiometer_offset_error_counts": dict(zip(robot.arm.joint_names,
                                                      np.round(pot, 4).tolist())),
        "sensor_noise": {
            "potentiometer_std_counts": sensors.potentiometer_noise_counts,
            "encoder_std_counts": sensors.encoder_noise_counts,
            "loadcell_std_counts": sensors.loadcell_noise_counts,
            "drawn": "per sample, Gaussian, from the seed's third stream "
                     "(numpy SeedSequence(seed).spawn(3)[2])",
        },
    }


def _per_muscle(robot: Robot, offsets_mm: FloatArray) -> Any:
    """Via-point offsets by muscle name (in the muscles file's point order), or the plain list
    when the counts do not match that order."""
    muscles = robot.muscles_config.muscles
    paths = [m.path for m in muscles]
    if any(path is None for path in paths):  # an MJCF's sites: no via-point list per muscle
        return np.round(offsets_mm, 4).tolist()
    sizes = [len(path) for path in paths if path is not None]
    if offsets_mm.shape[0] != sum(sizes):
        return np.round(offsets_mm, 4).tolist()
    out, k = {}, 0
    for muscle, n in zip(muscles, sizes):
        out[muscle.name] = np.round(offsets_mm[k:k + n], 4).tolist()
        k += n
    return out
