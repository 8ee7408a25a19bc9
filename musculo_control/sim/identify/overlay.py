"""The fit as a ``mock_arm.yaml`` overlay: the fitted values in the file's own structure, each
with its standard deviation and whether the data determined it in a comment.

Values fitted as factors are written as what they scale (a per-joint list scaled as a whole).
``link_mass_scale`` has no key in ``mock_arm.yaml``: it is written as a comment and in the JSON
beside the overlay, which ``musculo identify --report`` reads. With ``nominal_geometry`` the
overlay switches the model error off: the fit ran on the nominal masses and via-points.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from musculo_control.sim.identify.fit import FitResult
from musculo_control.sim.identify.windows import MockFamily


def overlay_text(family: MockFamily, result: FitResult, *, nominal_geometry: bool,
                 source: str) -> str:
    """The overlay's YAML text."""
    cfg, mass = family.config_for(result.x)
    sections: dict[str, list[str]] = {}
    notes = []
    for key, x, std, ok, why, p in zip(result.keys, result.x, result.std, result.determined,
                                       result.reasons, family.parameters):
        state = "determined" if ok else f"NOT determined: {why}"
        unit = "x configured" if p.scale else ""
        comment = f"fitted {x:.4g} +- {std:.2g} {unit}".rstrip() + f" ({state})"
        if key == "link_mass_scale":
            notes.append(f"# link_mass_scale: {mass:.4g} +- {std:.2g} ({state}); mock_arm.yaml "
                         f"has no key for it: in the JSON beside this file")
            continue
        section, name = key.split(".")
        value: Any = getattr(getattr(cfg, section), name)
        shown = "[" + ", ".join(f"{v:.4g}" for v in value) + "]" if isinstance(value, tuple) \
            else f"{value:.4g}"
        sections.setdefault(section, []).append(f"  {name}: {shown}    # {comment}")
    if nominal_geometry:
        sections.setdefault("model_error", []).append(
            "  enabled: false    # fitted on the nominal masses and via-points")
    lines = ["# mock_arm.yaml overlay written by `musculo identify` (doc/identify.md)",
             f"# from: {source}",
             f"# fit: {result.windows} windows, {result.evaluations} evaluations, "
             f"{result.wall_s:.0f} s; scaled residual rms {result.rms0:.3g} -> {result.rms:.3g}",
             "# +- : one standard deviation, windows as independent clusters (a lower bound: "
             "model errors the fit cannot represent bias the values beyond it)", *notes]
    for section, rows in sections.items():
        lines.append(f"{section}:")
        lines.extend(rows)
    return "\n".join(lines) + "\n"


def json_path(overlay: Path) -> Path:
    """The JSON written beside an overlay."""
    return overlay.with_suffix(".json")
