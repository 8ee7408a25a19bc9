"""Every file of a config folder checked against its schema in one pass.

The loaders read a folder file by file, and each stops at the first file that is wrong. So
that an old or hand-written folder is fixed in one run, the loaders of a whole folder
(:func:`~musculo_control.model.robot.load_robot`, :func:`~musculo_control.sim.setup.load_setup`)
first call :func:`check_folder`: every file present is parsed against its dataclasses (unknown,
renamed and missing keys, types, ranges, lengths: all that needs no other file), and every error
of every file is raised together as one :class:`~musculo_control.errors.ConfigErrors`, one line
each with file, line, key, expected and received. The checks across files (a joint name against
the URDF, a tension against the actuator) follow in the loaders, which keep each of their errors
too; :func:`load_checked` runs them also when a file's schema failed, so that one run reports
both kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from musculo_control.config.parser import load, load_with_overrides
from musculo_control.errors import ConfigError, ConfigErrors, ErrorCollector, raise_collected

T = TypeVar("T")

#: The files the control loop reads (robot, its muscles file, controller, hardware, safety):
#: what :func:`~musculo_control.loop.build.load_parts` loads.
LOOP_FILES = ("robot", "muscles", "controller", "hardware", "safety")
#: The files of a simulated run: the loop's, the mock arm's and the experiments'.
RUN_FILES = (*LOOP_FILES, "mock_arm", "experiments")


def _robot(folder: Path, overrides: dict[str, Any]) -> Any:
    from musculo_control.model.robot import RobotConfig

    return load_with_overrides(RobotConfig, folder / "robot.yaml", overrides)


def _schema(module: str, name: str) -> Callable[[], Any]:
    def cls() -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)
    return cls


#: file stem -> the dataclass that parses it whole (robot, muscles and hardware: below)
_WHOLE_FILES: dict[str, Callable[[], Any]] = {
    "controller": _schema("musculo_control.control.controller_config", "ControllerConfig"),
    "safety": _schema("musculo_control.safety.config", "SafetyConfig"),
    "mock_arm": _schema("musculo_control.hardware.mock_arm", "MockArmConfig"),
    "experiments": _schema("musculo_control.sim.setup", "ExperimentsConfig"),
}


def check_folder(config_dir: str | Path, files: tuple[str, ...] = LOOP_FILES,
                 overrides: Mapping[str, dict[str, Any]] | None = None) -> None:
    """Parse each of ``files`` (stems of :data:`RUN_FILES`) present in ``config_dir`` with the
    dotted-key ``overrides`` of its stem, and raise every error found, together. A missing
    file is left to its loader (which names it)."""
    from musculo_control.hardware.drivers import read_hardware
    from musculo_control.model.hill import HillParams
    from musculo_control.model.muscles import MusclesConfig

    folder = Path(config_dir)
    overrides = overrides or {}
    unknown = set(files) - set(RUN_FILES)
    if unknown:
        raise ValueError(f"check_folder: unknown files {sorted(unknown)}; known: {RUN_FILES}")
    found = ErrorCollector()
    robot = None
    if "robot" in files and (folder / "robot.yaml").is_file():
        with found.checking():
            robot = _robot(folder, dict(overrides.get("robot", {})))
    if "muscles" in files:
        muscles = folder / (robot.muscles_file if robot is not None else "muscles.yaml")
        if muscles.is_file():
            with found.checking():
                load(MusclesConfig, muscles)
    if "hardware" in files and (folder / "hardware.yaml").is_file():
        f_min = (robot.hill if robot is not None else HillParams()).f_min_n
        with found.checking():
            read_hardware(folder / "hardware.yaml", f_min, str(folder / "robot.yaml"))
    for stem, schema in _WHOLE_FILES.items():
        path = folder / f"{stem}.yaml"
        if stem in files and path.is_file():
            with found.checking():
                load_with_overrides(schema(), path, dict(overrides.get(stem, {})))
    found.raise_any()


def load_checked(config_dir: str | Path, build: Callable[[], T],
                 files: tuple[str, ...] = LOOP_FILES,
                 overrides: Mapping[str, dict[str, Any]] | None = None) -> T:
    """:func:`check_folder`, then ``build()`` (a loader and its checks across files). When the
    schemas fail, ``build`` runs anyway: its own errors are raised with theirs (each once), and
    a failure that only follows from theirs (a file it cannot read) adds nothing."""
    try:
        check_folder(config_dir, files, overrides)
    except ConfigError as exc:
        first = list(exc.errors) if isinstance(exc, ConfigErrors) else [exc]
        try:
            build()
        except ConfigError as more:
            seen = {str(e) for e in first}
            extra = more.errors if isinstance(more, ConfigErrors) else (more,)
            raise_collected(first + [e for e in extra if str(e) not in seen])
        except Exception:  # noqa: BLE001 - a consequence of the schema errors: report those
            pass
        raise exc
    return build()
