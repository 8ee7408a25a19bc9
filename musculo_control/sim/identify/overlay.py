"""The fit as a ``mock_arm.yaml`` overlay: the fitted values in the file's own structure, each
with its standard deviation and whether the data determined it in a comment.

Values fitted as factors are written as what they scale (a per-joint list scaled as a whole);
the link-mass factors as ``physics.link_mass_scale``, one per link (a global factor repeated),
and the moment-arm factors as ``physics.moment_arm_scale``, one per muscle, with each fitted
factor's deviation and verdict in the comment lines above the list. With
``nominal_geometry`` the overlay switches the model error off: the fit ran on the nominal masses
and via-points. Its keys are ``mock_arm.yaml``'s: ``musculo simulate --mock-overlay FILE``
merges them over that file (:func:`overlay_overrides`, as ``--set mock_arm.<key>=<value>``
items) to run the identified mock.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from musculo_control.config.parser import located, unknown_keys, yaml_text
from musculo_control.errors import ConfigError, ConfigErrors, InputError
from musculo_control.sim.identify.config import ITEM_SCALES
from musculo_control.sim.mock_arm import MockArmConfig

if TYPE_CHECKING:  # `musculo simulate --mock-overlay` reads overlays without the fit's scipy
    from musculo_control.sim.identify.fit import FitResult
    from musculo_control.sim.identify.windows import MockFamily


def _shown(value: Any) -> str:
    return "[" + ", ".join(f"{v:.4g}" for v in value) + "]" if isinstance(value, tuple) \
        else f"{value:.4g}"


def overlay_text(family: MockFamily, result: FitResult, *, nominal_geometry: bool,
                 source: str) -> str:
    """The overlay's YAML text."""
    cfg = family.config_for(result.x)
    sections: dict[str, list[str]] = {}
    item_notes: dict[str, list[str]] = {}  # per-item factors' comments, by identify.yaml key
    for key, x, std, ok, why, p, item in zip(result.keys, result.x, result.std,
                                             result.determined, result.reasons,
                                             family.parameters, family.items):
        state = "determined" if ok else f"NOT determined: {why}"
        unit = "x configured" if p.scale else ""
        comment = f"fitted {x:.4g} +- {std:.2g} {unit}".rstrip() + f" ({state})"
        if p.key in ITEM_SCALES:
            what = ITEM_SCALES[p.key][1]
            item_notes.setdefault(p.key, []).append(f"  # {item or 'every ' + what}: {comment}")
            continue
        section, name = key.split(".")
        value: Any = getattr(getattr(cfg, section), name)
        sections.setdefault(section, []).append(f"  {name}: {_shown(value)}    # {comment}")
    for key, notes in item_notes.items():
        section, name = ITEM_SCALES[key][0].split(".")
        names = ", ".join(family.names(key))
        sections.setdefault(section, []).extend([
            f"  # {name}, one factor per {ITEM_SCALES[key][1]} ({names}) [-]:", *notes,
            f"  {name}: {_shown(getattr(getattr(cfg, section), name))}"])
    if nominal_geometry:
        sections.setdefault("model_error", []).append(
            "  enabled: false    # fitted on the nominal masses and via-points")
    lines = ["# mock_arm.yaml overlay written by `musculo identify` (doc/identify.md): its keys",
             "# are mock_arm.yaml's; run the identified mock with",
             "# musculo simulate EXPERIMENT --mock-overlay <this file>",
             f"# from: {source}",
             f"# fit: {result.windows} windows, {result.evaluations} evaluations, "
             f"{result.wall_s:.0f} s; scaled residual rms {result.rms0:.3g} -> {result.rms:.3g}",
             "# +- : one standard deviation, windows as independent clusters (a lower bound: "
             "model errors the fit cannot represent bias the values beyond it)"]
    for section, rows in sections.items():
        lines.append(f"{section}:")
        lines.extend(rows)
    return "\n".join(lines) + "\n"


def json_path(overlay: Path) -> Path:
    """The JSON written beside an overlay."""
    return overlay.with_suffix(".json")


def overlay_overrides(path: Path) -> dict[str, Any]:
    """The leaves of a ``mock_arm.yaml`` overlay as the dotted keys of ``--set mock_arm.KEY=V``
    (``{"physics.joint_damping_nm_s_rad": [0.45, 0.3], ...}``): an unreadable file is an
    :class:`InputError`, a key ``mock_arm.yaml`` does not know a :class:`ConfigError` naming
    the overlay, the key and its line, as the loader names them in ``mock_arm.yaml``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError("--mock-overlay", "a readable mock_arm.yaml overlay (a YAML mapping "
                         "in mock_arm.yaml's structure, as `musculo identify --out` writes it)",
                         f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    data = yaml_text(text, str(path))
    if not isinstance(data, dict) or not data:
        raise ConfigError(str(path), "<top level>", "a mapping of mock_arm.yaml's sections "
                          f"and keys ({', '.join(_names(MockArmConfig))})", data)
    leaves: dict[str, Any] = {}
    errors: list[ConfigError] = []
    _leaves(MockArmConfig, data, "", str(path), leaves, errors)
    if errors:
        raise located(errors[0] if len(errors) == 1 else ConfigErrors(errors),
                      Path(path)) from None
    return leaves


def _names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]


def _section(tp: Any) -> type | None:
    """The dataclass a field of type ``tp`` holds (``X | None`` too), else None."""
    args = [a for a in typing.get_args(tp) if a is not type(None)] or [tp]
    one = args[0] if len(args) == 1 else None
    return one if isinstance(one, type) and dataclasses.is_dataclass(one) else None


def _leaves(cls: type, data: dict[Any, Any], key: str, file: str, out: dict[str, Any],
            errors: list[ConfigError]) -> None:
    # the loader's own check of unknown keys, so the overlay is refused in its words
    errors.extend(unknown_keys(data, _names(cls), file, key))
    hints = typing.get_type_hints(cls)
    for name, value in data.items():
        if str(name) not in hints:
            continue
        dotted = f"{key}.{name}" if key else str(name)
        section = _section(hints[str(name)])
        if section is not None and isinstance(value, dict):
            _leaves(section, value, dotted, file, out, errors)  # merged key by key
        else:
            out[dotted] = value  # a value, or a list, replaced whole


def from_overlay(exc: ConfigError, mock_file: Path, overlay: Path,
                 keys: Iterable[str]) -> ConfigError:
    """``exc`` with each error of ``mock_file`` about one of ``keys`` (the overlay's, which
    the loader saw as overrides) named in ``overlay`` at its line instead."""
    keys = set(keys)

    def ours(e: ConfigError) -> bool:
        return e.file == str(mock_file) and any(
            e.key == k or e.key.startswith((k + ".", k + "[")) for k in keys)

    errors = exc.errors if isinstance(exc, ConfigErrors) else (exc,)
    moved = [located(ConfigError(str(overlay), e.key, e.expected, e.received), overlay)
             if ours(e) else e for e in errors]
    return moved[0] if len(moved) == 1 else ConfigErrors(moved)
