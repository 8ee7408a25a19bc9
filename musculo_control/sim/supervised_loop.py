"""Helpers of the fault matrix and the soak: ``reliability.yaml`` sections, start poses.

``reliability.yaml`` holds the fault matrix (``faults``) and the soak (``soak``);
:func:`load_reliability_section` reads one. The loop itself is the experiments' one
(:class:`~musculo_control.sim.rig.Rig`): every run is supervised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from musculo_control.errors import ConfigError
from musculo_control.model.config import apply_overrides, parse, parse_override, read_yaml
from musculo_control.model.robot import Robot

T = TypeVar("T")

#: Top-level sections of reliability.yaml.
RELIABILITY_SECTIONS = ("faults", "soak")


def load_reliability_section(config_dir: Path, key: str, cls: type[T],
                             overrides: dict[str, Any] | None = None) -> T:
    """Parse section ``key`` of ``reliability.yaml`` into ``cls`` (dotted overrides allowed,
    e.g. ``{"soak.duration_s": 60}``)."""
    path = Path(config_dir) / "reliability.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(str(path), "<top level>",
                          f"a mapping with keys {list(RELIABILITY_SECTIONS)}", type(data).__name__)
    for name in data:
        if name not in RELIABILITY_SECTIONS:
            raise ConfigError(str(path), str(name),
                              f"one of the known keys {list(RELIABILITY_SECTIONS)}", "unknown key")
    if overrides:
        data = apply_overrides(data, overrides, str(path))
    if key not in data:
        raise ConfigError(str(path), key, "a section", "missing")
    return parse(cls, data[key], str(path), key)


def check_start_pose(robot: Robot, name: str, file: str, key: str) -> None:
    """A start pose must be 'home' or a named pose of robot.yaml."""
    names = [p.name for p in robot.poses.config.named] if robot.poses is not None else []
    if name != "home" and name not in names:
        raise ConfigError(file, key, f"'home' or a named pose of {robot.robot_file} 'poses' "
                                     f"{names}", name)


def split_overrides(items: list[str], prefixes: tuple[str, ...]) -> tuple[dict[str, Any],
                                                                          list[str]]:
    """``--set`` items whose file is one of ``prefixes`` (as {"file.key": value}), and the
    rest untouched (for :meth:`Overrides.parse`)."""
    mine: dict[str, Any] = {}
    rest: list[str] = []
    for item in items:
        key, sep, text = item.partition("=")
        prefix = key.strip().partition(".")[0]
        if sep and prefix in prefixes:
            mine.update([parse_override(item)])
        else:
            rest.append(item)
    return mine, rest
