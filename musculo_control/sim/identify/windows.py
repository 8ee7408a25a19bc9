"""The mock arm as a predictor: a parameter vector, started from a recorded state and driven by
the recorded commands over short windows.

:class:`MockFamily` builds the mock for a parameter vector (``identify.yaml`` parameters on top
of ``mock_arm.yaml``). :func:`simulate_window` resets it to the recorded joint angles, joint
rates and measured tensions at a window's first sample, feeds the recorded commands as an
actuator module takes them (the newest command at least ``command_delay_s`` old, in driver
units) and returns the true joint angles and tensions it reaches at the window's samples: a
short-horizon prediction, which stays meaningful on a gravity-loaded arm that open-loop
commands alone would let fall over longer spans.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from musculo_control.errors import ConfigError, InputError
from musculo_control.hardware.calibration import Calibration
from musculo_control.model.robot import Robot
from musculo_control.sim.identify.config import ITEM_SCALES, PARAMETER_KEYS, ParameterConfig
from musculo_control.sim.identify.recording import Recording, joint_rates
from musculo_control.sim.mock_arm import MockArm, MockArmConfig
from musculo_control.sim.mujoco_arm import MujocoArm, build_mujoco_arm

FloatArray = npt.NDArray[np.float64]


def configured_value(config: MockArmConfig, key: str) -> float | tuple[float, ...]:
    """The value ``mock_arm.yaml`` gives ``key``."""
    section, name = (ITEM_SCALES[key][0] if key in ITEM_SCALES else key).split(".")
    return getattr(getattr(config, section), name)  # type: ignore[no-any-return]


def base_key(label: str) -> str:
    """The identify.yaml key of a parameter's label (``link_mass_scale[forearm]``: the
    ``link_mass_scale``)."""
    return label.split("[", 1)[0]


def moving_massive_links(arm: MujocoArm, links: Sequence[str]) -> list[str]:
    """The links of ``links`` that have mass and hang on a joint (not welded to the world)."""
    model = arm.model
    return [link for link in links if link in arm.body_id
            and model.body_mass[arm.body_id[link]] > 0.0
            and model.body_weldid[arm.body_id[link]] != 0]


class MockFamily:
    """The mocks of one robot that differ in the fitted parameters only.

    ``x`` holds one number per fitted value: the value itself, or the factor on the configured
    value (``scale``). A per-link ``link_mass_scale`` is one value per link, labelled
    ``link_mass_scale[<link>]`` in :attr:`keys`, a per-muscle ``moment_arm_scale`` one per
    muscle (``moment_arm_scale[<muscle>]``); :attr:`items` holds that link or muscle (None for
    a parameter of its own). ``nominal_geometry``: the model error off (the robot's nominal
    masses and via-points) whatever ``mock_arm.yaml`` says.
    """

    def __init__(self, robot: Robot, calibration: Calibration, config: MockArmConfig,
                 parameters: Sequence[ParameterConfig], *, nominal_geometry: bool,
                 file: str = "mock_arm.yaml", identify_file: str = "identify.yaml") -> None:
        self.robot, self.calibration, self.file = robot, calibration, file
        self.identify_file = identify_file
        for p in parameters:
            if p.key not in PARAMETER_KEYS:
                raise InputError("MockFamily parameters", f"keys among {sorted(PARAMETER_KEYS)}",
                                 p.key)
        if nominal_geometry:
            config = dataclasses.replace(
                config, model_error=dataclasses.replace(config.model_error, enabled=False))
        # the predictor reads the true state: no sensor noise to draw
        self.config = config
        #: every link of the robot, in physics.link_mass_scale's order
        self.link_names = tuple(robot.arm.link_names())
        #: every muscle, in physics.moment_arm_scale's order
        self.muscle_names = tuple(robot.muscle_names)
        config.physics.check_robot(robot, file, "physics")
        params: list[ParameterConfig] = []
        labels: list[str] = []
        items: list[str | None] = []  # the link or muscle of a per-item factor, else None
        for i, p in enumerate(parameters):
            chosen = self._items(p, i)
            for item in chosen or (None,):
                params.append(p)
                labels.append(p.key if item is None else f"{p.key}[{item}]")
                items.append(item)
        self.parameters = tuple(params)
        self.keys = tuple(labels)
        self.items = tuple(items)
        self.lower = np.array([p.lower for p in self.parameters])
        self.upper = np.array([p.upper for p in self.parameters])
        #: (p,) each parameter's prior_std, 0 where it has none
        self.prior_std = np.array([p.prior_std or 0.0 for p in self.parameters])

    def names(self, key: str) -> tuple[str, ...]:
        """Every item of an :data:`ITEM_SCALES` key, in its mock_arm.yaml list's order."""
        return self.link_names if ITEM_SCALES[key][1] == "link" else self.muscle_names

    def _items(self, p: ParameterConfig, i: int) -> tuple[str, ...]:
        """The links or muscles ``p`` fits one factor each (none: ``p`` is one value)."""
        where = f"parameters[{i}]"
        if p.key == "link_mass_scale" and p.per_link:
            for j, link in enumerate(p.links):
                if link not in self.link_names:
                    raise ConfigError(self.identify_file, f"{where}.links[{j}]",
                                      f"a link of the robot {list(self.link_names)}", link)
            arm = build_mujoco_arm(self.robot, self.config.physics, None, self.file)
            massive = moving_massive_links(arm, self.link_names)
            for j, link in enumerate(p.links):
                if link not in massive:
                    raise ConfigError(self.identify_file, f"{where}.links[{j}]",
                                      f"a link with mass that a joint moves {massive}", link)
            return p.links or tuple(massive)
        if p.key == "moment_arm_scale" and p.per_muscle:
            for j, muscle in enumerate(p.muscles):
                if muscle not in self.muscle_names:
                    raise ConfigError(self.identify_file, f"{where}.muscles[{j}]",
                                      f"a muscle of the robot {list(self.muscle_names)}", muscle)
            return p.muscles or self.muscle_names
        return ()

    def configured(self) -> FloatArray:
        """(p,) the parameters as ``mock_arm.yaml`` sets them (factors: 1)."""
        return np.array([1.0 if p.scale else float(configured_value(self.config, p.key))  # type: ignore[arg-type]
                         for p in self.parameters])

    def config_for(self, x: npt.ArrayLike) -> MockArmConfig:
        """The mock_arm.yaml of ``x`` (link-mass and moment-arm factors in their
        ``physics`` lists, times those configured)."""
        x = np.asarray(x, dtype=float)
        if x.shape != (len(self.parameters),) or not np.all(np.isfinite(x)):
            raise InputError("MockFamily x", f"{len(self.parameters)} finite values", x)
        cfg = self.config
        lists: dict[str, FloatArray] = {}  # the per-item lists fitted, by identify.yaml key
        for p, item, v in zip(self.parameters, self.items, x):
            if p.key in ITEM_SCALES:
                names = self.names(p.key)
                now = lists.setdefault(p.key, np.array(
                    configured_value(cfg, p.key) or [1.0] * len(names), dtype=float))
                if item is None:
                    now *= float(v)
                else:
                    now[names.index(item)] *= float(v)
                continue
            section, name = p.key.split(".")
            old = getattr(getattr(cfg, section), name)
            if p.scale:
                new = tuple(float(v) * e for e in old) if isinstance(old, tuple) \
                    else float(v) * float(old)
            else:
                new = float(v)
            cfg = dataclasses.replace(
                cfg, **{section: dataclasses.replace(getattr(cfg, section), **{name: new})})
        for key, values in lists.items():
            name = ITEM_SCALES[key][0].split(".")[1]
            new_list: dict[str, Any] = {name: tuple(float(m) for m in values)}
            cfg = dataclasses.replace(cfg, physics=dataclasses.replace(cfg.physics, **new_list))
        return cfg

    def build(self, x: npt.ArrayLike) -> MockArm:
        """The mock arm of ``x``."""
        return MockArm(self.robot, self.calibration, self.config_for(x), file=self.file)


@dataclass(frozen=True)
class Window:
    """Samples ``start`` .. ``stop - 1`` of recording ``rec`` (an index into a list)."""

    rec: int
    start: int
    stop: int


def commands_complete(rec: Recording, t0_s: float, t1_s: float, lost_periods: float) -> bool:
    """Whether the recording holds every command in force over ``[t0_s, t1_s]``: one before
    ``t0_s``, none lost since (no gap longer than ``lost_periods`` of the commands' median
    period, ``identify.yaml`` ``windows.lost_command_periods``), and commands up to ``t1_s``.
    A recorder that fell behind (a loaded computer) drops messages; replayed without them, the
    mock would hold an old command and the fit would blame the parameters."""
    tc = rec.command_t_s
    if len(tc) < 2:
        return len(tc) == 1 and tc[0] <= t0_s
    gap = lost_periods * float(np.median(np.diff(tc)))
    i0 = int(np.searchsorted(tc, t0_s, side="right")) - 1
    if i0 < 0 or tc[-1] < t1_s - gap:
        return False
    i1 = int(np.searchsorted(tc, t1_s, side="right"))
    return bool(np.all(np.diff(tc[i0:i1 + 1]) <= gap))


def make_windows(recordings: Sequence[Recording], length_s: float, stride_s: float,
                 skip_start_s: float, *, lost_periods: float,
                 max_windows: int | None = None) -> list[Window]:
    """Windows of ``length_s`` every ``stride_s`` in each recording (not in its first
    ``skip_start_s``; none where the bag lost commands, :func:`commands_complete`), evenly
    subsampled to at most ``max_windows``."""
    out: list[Window] = []
    for r, rec in enumerate(recordings):
        t = rec.t_s
        start_t = t[0] + skip_start_s
        while start_t + length_s <= t[-1] + 1e-9:
            k0 = int(np.searchsorted(t, start_t - 1e-9))
            k1 = int(np.searchsorted(t, t[k0] + length_s + 1e-9))
            if k1 - k0 >= 2 and commands_complete(rec, t[k0], t[k1 - 1], lost_periods):
                out.append(Window(r, k0, k1))
            start_t += stride_s
    if max_windows is not None and len(out) > max_windows:
        pick = np.unique(np.round(np.linspace(0, len(out) - 1, max_windows)).astype(int))
        out = [out[i] for i in pick]
    return out


def simulate_window(mock: MockArm, rec: Recording, window: Window, *, delay_s: float,
                    rate_half_width_s: float | None) -> tuple[FloatArray, FloatArray]:
    """(joint angles (k, n) [rad], tensions (k, m) [N]) the mock predicts at the window's
    samples after its first (k = stop - start - 1), from the recorded state at its first; the
    joint rates there from the angles (:func:`joint_rates`), or with ``rate_half_width_s``
    None the recorded ones."""
    k0, k1 = window.start, window.stop
    t = rec.t_s
    qd0 = rec.qd_rad_s[k0] if rate_half_width_s is None else joint_rates(
        t, rec.q_rad, k0, rate_half_width_s)
    lo, hi = mock.robot.arm.lower_rad, mock.robot.arm.upper_rad
    mock.reset(np.clip(rec.q_rad[k0], lo, hi), rec.tension_n[k0], qd0)
    dt = mock.dt_s
    steps = np.rint((t[k0 + 1:k1] - t[k0]) / dt).astype(int)
    n_steps = int(steps[-1])
    # the command each step acts on: the newest at least delay_s old
    when = t[k0] + np.arange(n_steps) * dt - delay_s
    idx = np.searchsorted(rec.command_t_s, when + 1e-9, side="right") - 1
    driver = mock.calibration.n_to_driver(rec.command_n)
    q_out = np.empty((len(steps), mock.n))
    f_out = np.empty((len(steps), mock.m))
    j_out = 0
    last = -2
    for j in range(n_steps):
        i = int(idx[j])
        if i != last and i >= 0:
            mock.set_command(driver[i])
            last = i
        mock.step()
        while j_out < len(steps) and steps[j_out] == j + 1:
            q_out[j_out] = mock.q_rad
            f_out[j_out] = mock.tendon_tension_n
            j_out += 1
    return q_out, f_out


def predict(mock: MockArm, recordings: Sequence[Recording], windows: Sequence[Window], *,
            delay_s: float, rate_half_width_s: float) -> list[tuple[FloatArray, FloatArray]]:
    """:func:`simulate_window` of each window."""
    return [simulate_window(mock, recordings[w.rec], w, delay_s=delay_s,
                            rate_half_width_s=rate_half_width_s) for w in windows]
