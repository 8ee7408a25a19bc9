"""What the potentiometer and tendon-driver nodes take from a config folder, without the model.

The two driver nodes convert units and apply the actuators' rules; they compute nothing with
the rigid-body model. But loading a config folder does: the calibration's reference muscle
lengths are the model's at the calibration pose, the joint limits come from the URDF or MJCF
(Pinocchio, MuJoCo), and every file is checked against the robot. A process that imported
those libraries keeps them mapped (about 120 MB of RSS of a 200 MB node). So a process whose
nodes need no model loads the folder in a helper process, with the same code as every other
user (:func:`musculo_control.loop.parts.load_parts`), and takes back only the parts the driver
nodes use (:class:`DriverParts`: names, the drivers with their calibration, safety.yaml, the
lockstep leads), pickled: plain data and numpy arrays of classes that load no model. A process
that has the model's libraries loaded already (one that runs the dynamics or the QP node too)
loads here.

    python -m musculo_control.loop.driver_parts CONFIG_DIR OUT_FILE   (the helper process)
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from musculo_control.errors import MusculoError
from musculo_control.hardware.drivers import Drivers
from musculo_control.loop.lockstep import lockstep_leads
from musculo_control.loop.potentiometer_stage import PotentiometerStage
from musculo_control.loop.tendon_stage import TendonStage
from musculo_control.safety.config import SafetyConfig
from musculo_control.streams import OwnPause

if TYPE_CHECKING:
    from musculo_control.loop.parts import LoopParts

#: Modules whose presence says this process has the model's libraries loaded already.
_MODEL_MODULES = ("musculo_control.loop.parts", "pinocchio")


@dataclass(frozen=True)
class DriverParts:
    """The parts of a loaded config folder that the driver nodes use."""

    config_dir: Path
    joint_names: tuple[str, ...]
    muscle_names: tuple[str, ...]
    actuator_ids: tuple[int, ...]
    drivers: Drivers  # calibration, potentiometer reader, tendon driver, rates
    safety: SafetyConfig
    #: per stream, how far behind the clock it may be in lockstep [s] (loop/lockstep.py)
    lockstep_leads: dict[str, float]


class _HasDrivers(Protocol):
    """:class:`DriverParts` or :class:`~musculo_control.loop.parts.LoopParts`."""

    @property
    def drivers(self) -> Drivers: ...

    @property
    def safety(self) -> SafetyConfig: ...


def driver_parts(parts: LoopParts) -> DriverParts:
    """The driver nodes' parts of a loaded config folder."""
    robot = parts.robot
    return DriverParts(Path(parts.config_dir), tuple(robot.arm.joint_names),
                       tuple(robot.muscle_names), tuple(int(a) for a in robot.actuator_ids),
                       parts.drivers, parts.safety, lockstep_leads(parts))


def load_driver_parts(config_dir: str | Path) -> DriverParts:
    """:func:`driver_parts` of ``config_dir``'s :func:`~musculo_control.loop.parts.load_parts`:
    here when this process has the model's libraries loaded already, else in a helper process
    (see the module docstring). A bad folder raises :class:`MusculoError` with the loader's
    message (file and key)."""
    if any(name in sys.modules for name in _MODEL_MODULES):
        from musculo_control.loop.parts import load_parts

        return driver_parts(load_parts(config_dir))
    with tempfile.TemporaryDirectory(prefix="musculo_driver_parts_") as tmp:
        out = Path(tmp) / "parts.pickle"
        # the helper's warnings and errors go to this process's stderr (the node's log)
        done = subprocess.run([sys.executable, "-m", __name__, str(config_dir), str(out)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=False)
        if not out.is_file():
            raise MusculoError(f"loading the config folder {config_dir} in a helper process "
                               f"failed (exit code {done.returncode})")
        kind, value = pickle.loads(out.read_bytes())
    if kind == "error":
        raise MusculoError(value)
    return value  # type: ignore[no-any-return]


def potentiometer_stage(parts: _HasDrivers, warn_throttle_s: float = 1.0) -> PotentiometerStage:
    return PotentiometerStage(parts.drivers.potentiometers, parts.safety.inputs.joint_state,
                              warn_throttle_s)


def tendon_stage(parts: _HasDrivers, warn_throttle_s: float = 1.0) -> TendonStage:
    driver = parts.drivers.tendons
    safety = parts.safety
    driver.states = safety.inputs.tendon_state  # the arm's tendon states stop: its stop too
    driver.use_stops(safety.stops.sequence(driver.config.min_tension_n),
                     silent=safety.stops.stop_of("command_watchdog"),
                     bad=safety.stops.stop_of("command_invalid"))
    driver.pause = OwnPause(safety.inputs.own_pause_s)
    return TendonStage(driver, warn_throttle_s)


def _helper(config_dir: str, out_file: str) -> int:
    """The helper process: load, and write ``("parts", DriverParts)`` or ``("error", text)``."""
    from musculo_control.loop.parts import load_parts

    try:
        result: tuple[str, object] = ("parts", driver_parts(load_parts(config_dir)))
        code = 0
    except MusculoError as exc:
        result, code = ("error", str(exc)), 1
    Path(out_file).write_bytes(pickle.dumps(result))
    return code


if __name__ == "__main__":
    # by its package name, so that what is pickled is of the importable class, not __main__'s
    from musculo_control.loop.driver_parts import _helper as helper

    raise SystemExit(helper(sys.argv[1], sys.argv[2]))
