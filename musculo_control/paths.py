"""Where the shipped config folders are, in a source checkout, a pip install or a ROS install."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULT_ROBOT = "musashi_left_arm"


def config_root() -> Path:
    """The folder that holds one config folder per robot.

    Order: ``$MUSCULO_CONFIG_ROOT``; the source tree next to this package; the install prefix's
    ``share/musculo_control/config`` (pip and colcon both put data files there).
    """
    env = os.environ.get("MUSCULO_CONFIG_ROOT")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent / "config"
    if (here / DEFAULT_ROBOT).is_dir():
        return here
    for prefix in (sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        candidate = Path(prefix) / "share" / "musculo_control" / "config"
        if prefix and (candidate / DEFAULT_ROBOT).is_dir():
            return candidate
    return here


def default_config_dir() -> Path:
    """The shipped stand-in arm's config folder."""
    return config_root() / DEFAULT_ROBOT
