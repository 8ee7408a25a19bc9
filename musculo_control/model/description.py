"""The ``robot_description`` of a config folder: the text robot_state_publisher and RViz read.

A URDF robot's description is its URDF file as written. An MJCF robot's is a URDF generated
from the MJCF (:mod:`musculo_control.model.urdf_from_mjcf`), so that robot_state_publisher,
TF and RViz's RobotModel work for either kind of robot without a second hand-kept file.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from musculo_control.config.parser import load
from musculo_control.errors import ConfigError
from musculo_control.model.robot import RobotConfig


def robot_description(config_dir: str | Path) -> str:
    """The URDF text of the robot of ``config_dir`` (its robot.yaml names a URDF or an MJCF)."""
    folder = Path(config_dir)
    arm = load(RobotConfig, folder / "robot.yaml").arm
    path = folder / arm.description
    if not path.is_file():
        raise ConfigError(str(folder / "robot.yaml"), arm.description_key,
                          f"an existing {'URDF' if arm.urdf else 'MJCF'} file", str(path))
    if arm.urdf is not None:
        return path.read_text(encoding="utf-8")
    from musculo_control.model.urdf_from_mjcf import urdf_from_mjcf  # MuJoCo: MJCF robots only

    return urdf_from_mjcf(path)


def root_link(description: str) -> str:
    """The root link of a URDF text: the one link that is no joint's child."""
    root = ET.fromstring(description)
    children = {c.get("link") for c in root.iter("child")}
    roots = [str(link.get("name")) for link in root.iter("link")
             if link.get("name") not in children]
    if len(roots) != 1:
        raise ConfigError("<robot_description>", "<links>", "one root link", roots)
    return roots[0]


def base_frame(config_dir: str | Path, description: str | None = None) -> str:
    """The frame hand goals, markers and RViz's fixed frame use: robot.yaml ``arm.base_frame``
    or the description's root link (as :class:`~musculo_control.model.arm.Arm` decides)."""
    arm = load(RobotConfig, Path(config_dir) / "robot.yaml").arm
    if arm.base_frame:
        return arm.base_frame
    return root_link(description if description is not None else robot_description(config_dir))
