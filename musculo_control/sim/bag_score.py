"""A bag's experiment scored as ``musculo simulate`` scores a run, and the same run again on
the runner: what ``musculo score``, ``musculo identify --report`` and ``musculo simulate
--mock-overlay`` share (the setup of a run, an overlay's mock included).

The bag's signals at its control ticks (:mod:`musculo_control.sim.bag_signals`) are scored by
:func:`~musculo_control.sim.experiments.score_signals`; :func:`rerun` runs the experiment,
controller and start pose the bag's metadata names
(:class:`~musculo_control.sim.rosbag_log.BagRun`) on the runner with another setup (another
mock), so that a recording and a mock's run of it are scored by one code.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from musculo_control.config.parser import read_yaml
from musculo_control.errors import ConfigError, InputError
from musculo_control.sim.bag_signals import BagSignals, read_bag_signals
from musculo_control.sim.experiments import (
    SCORED_SIGNALS,
    actuator_limit_n,
    experiment_duration_s,
    run_disturbance,
    run_nullspace,
    run_trajectory,
    score_signals,
)
from musculo_control.sim.identify.overlay import from_overlay, overlay_overrides
from musculo_control.sim.rosbag_log import BagRun
from musculo_control.sim.setup import EXPERIMENT_NAMES, Overrides, Setup, load_setup


def setup_of_run(folder: Path, recorded: BagRun | None, items: Sequence[str],
                 overlay: Path | None = None) -> Setup:
    """The config folder with the bag's recorded settings (``recorded``; None: none), then
    ``items`` (``--set``), over it. ``overlay``: a ``mock_arm.yaml`` overlay (as
    ``musculo identify --out`` writes it) merged over ``mock_arm.yaml`` under ``items``, as
    ``--set mock_arm.*`` items; an error about one of its keys names the overlay."""
    run_items: list[str] = []
    if recorded is not None and recorded.settings:
        # a section the folder's experiments.yaml leaves out ran on the loader's defaults,
        # which loading the folder gives again; an override of a key not in the file would be
        # refused
        written = read_yaml(Path(folder) / "experiments.yaml")
        sections = set(written) if isinstance(written, dict) else set()
        run_items = [f"experiments.{k}={json.dumps(v)}" for k, v in recorded.settings.items()
                     if k.split(".", 1)[0] in sections]
    overrides = Overrides.parse([*run_items, *items])
    if overlay is None:
        return load_setup(folder, overrides)
    leaves = overlay_overrides(overlay)
    merged = dataclasses.replace(overrides, mock_arm={**leaves, **overrides.mock_arm})
    try:
        return load_setup(folder, merged)
    except ConfigError as exc:
        raise from_overlay(exc, Path(folder) / "mock_arm.yaml", overlay,
                           set(leaves) - set(overrides.mock_arm)) from None


def score_bag(setup: Setup, experiment: str, bag: Path, *, hand_topic: str | None = None,
              force_topic: str | None = None,
              origin_ns: int | None = None) -> tuple[BagSignals, dict[str, Any]]:
    """The signals ``experiment`` is scored on, read from ``bag``, and its metrics."""
    signals = read_bag_signals(bag, setup.robot, SCORED_SIGNALS[experiment],
                               hand_topic=hand_topic, force_topic=force_topic,
                               origin_ns=origin_ns,
                               until_s=experiment_duration_s(setup, experiment))
    limit = (actuator_limit_n(setup, mock=signals.mock) if experiment == "trajectory"
             else math.nan)
    metrics = score_signals(setup, experiment, signals, unsafe_ticks=signals.unsafe_ticks,
                            tension_limit_n=limit).metrics
    if signals.episodes:
        metrics["unsafe_episodes"] = [e.describe() for e in signals.episodes]
    return signals, metrics


def rerun(setup: Setup, run: BagRun) -> dict[str, Any]:
    """The metrics of the runner's run of ``run`` (its experiment, controller and start pose)
    on ``setup``."""
    if run.experiment not in EXPERIMENT_NAMES:
        raise InputError("rerun experiment", f"one of {list(EXPERIMENT_NAMES)}", run.experiment)
    controller = run.controller or "osc"
    if run.experiment == "disturbance":
        return run_disturbance(setup, controller).metrics
    if run.experiment == "nullspace":
        return run_nullspace(setup, controller).metrics
    return run_trajectory(setup, controller, run.start_pose).metrics
