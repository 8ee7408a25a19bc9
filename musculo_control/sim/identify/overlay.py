"""The fit as a ``mock_arm.yaml`` overlay: the fitted values in the file's own structure, each
with its standard deviation and whether the data determined it in a comment.

Values fitted as factors are written as what they scale (a per-joint list scaled as a whole);
the link-mass factors as ``physics.link_mass_scale``, one per link (a global factor repeated),
with each fitted factor's deviation and verdict in the comment lines above it. With
``nominal_geometry`` the overlay switches the model error off: the fit ran on the nominal masses
and via-points. Its keys are ``mock_arm.yaml``'s: copied into that file (or given as
``--set mock_arm.<key>=<value>``) they make the identified mock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    mass_notes: list[str] = []
    for key, x, std, ok, why, p, link in zip(result.keys, result.x, result.std,
                                             result.determined, result.reasons,
                                             family.parameters, family.links):
        state = "determined" if ok else f"NOT determined: {why}"
        unit = "x configured" if p.scale else ""
        comment = f"fitted {x:.4g} +- {std:.2g} {unit}".rstrip() + f" ({state})"
        if key == "link_mass_scale" or link is not None:
            mass_notes.append(f"  # {link or 'every link'}: {comment}")
            continue
        section, name = key.split(".")
        value: Any = getattr(getattr(cfg, section), name)
        sections.setdefault(section, []).append(f"  {name}: {_shown(value)}    # {comment}")
    if mass_notes:
        names = ", ".join(family.link_names)
        sections.setdefault("physics", []).extend([
            f"  # link_mass_scale, one factor per link ({names}) [-]:", *mass_notes,
            f"  link_mass_scale: {_shown(cfg.physics.link_mass_scale)}"])
    if nominal_geometry:
        sections.setdefault("model_error", []).append(
            "  enabled: false    # fitted on the nominal masses and via-points")
    lines = ["# mock_arm.yaml overlay written by `musculo identify` (doc/identify.md): its keys",
             "# are mock_arm.yaml's; copy them into that file, or pass each as",
             "# --set mock_arm.<section>.<key>=<value>, to run the identified mock",
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
