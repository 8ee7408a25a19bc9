"""Options every simulation command shares (``--config``, ``--set``, ``--seed``), and the
:class:`~musculo_control.sim.setup.Setup` they give."""

from __future__ import annotations

import argparse
from pathlib import Path

from musculo_control.paths import default_config_dir
from musculo_control.sim.setup import SIMULATION_FILES, Overrides, Setup, load_setup


def add_common(p: argparse.ArgumentParser) -> None:
    """Options shared by the simulation commands."""
    p.add_argument("--config", type=Path, default=None, help="config folder (default: shipped arm)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="FILE.KEY=V",
                   help="override a config value, e.g. controller.qp.r=0.01 or "
                        "experiments.nullspace.duration_s=5 or mock_arm.seed=3 or "
                        "robot.muscle_geometry.learned_model=out/mapping.npz (repeatable)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the mock arm's model error and sensor noise: the same as "
                        "--set mock_arm.seed=N")


def override_items(args: argparse.Namespace) -> list[str]:
    """The ``--set`` items, with ``--seed`` as the ``mock_arm.seed`` it stands for."""
    items = list(args.overrides)
    if getattr(args, "seed", None) is not None:
        items.append(f"mock_arm.seed={args.seed}")
    return items


def setup_from_args(args: argparse.Namespace,
                    files: tuple[str, ...] = SIMULATION_FILES) -> Setup:
    """The run's setup (``files``: the files ``--set`` may address; the overrides are kept in
    :attr:`Setup.overrides`)."""
    return load_setup(args.config or default_config_dir(),
                      Overrides.parse(override_items(args), files))
