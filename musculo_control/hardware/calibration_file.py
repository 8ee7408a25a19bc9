"""Writing a measured calibration back into ``hardware.yaml``'s text.

Only the ``potentiometers`` and ``tendons`` lists of the top-level ``calibration`` block are
rewritten; every other line, comments included, stays as it was. Each entry keeps every key it
had (gains, radii, reference lengths) and its line's comment, and gets the measured offsets and
zeros, and its sign where the file gave one or the measured one differs from the default.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import yaml

from musculo_control.errors import ConfigError
from musculo_control.hardware.calibration import Calibration
from musculo_control.hardware.calibrator import CalibrationResult

#: The comment line ``musculo calibrate`` puts after ``calibration:`` begins so.
HEADER = "measured by `musculo calibrate`"


def _flow(value: Any) -> str:
    """One YAML flow value on one line."""
    text: str = yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False)
    return text.strip().removesuffix("...").strip()


def _counts(x: float) -> float | int:
    """A measured count, to 0.1 count (an integer when it is one)."""
    r = round(float(x), 1)
    return int(r) if r == int(r) else r


def _comments(lines: list[str], key: str) -> dict[Any, str]:
    """The trailing comment of each one-line entry ``- {...}  # ...``, by its ``key`` value."""
    out: dict[Any, str] = {}
    for line in lines:
        body = line.strip()
        close = body.rfind("}")
        if not body.startswith("- {") or close < 0 or "#" not in body[close:]:
            continue
        try:
            entry = yaml.safe_load(body[2:close + 1])
        except yaml.YAMLError:
            continue
        if isinstance(entry, dict) and key in entry:
            out[entry[key]] = body[close + 1:].strip()
    return out


def _entries(section: dict[str, Any], calibration: Calibration, result: CalibrationResult,
             comments: dict[str, dict[Any, str]]) -> tuple[list[str], list[str]]:
    """The new ``potentiometers`` and ``tendons`` lists, one flow mapping per line, each with
    the comment its old line had (``comments``: list name -> key value -> comment)."""
    pot_defaults = dict(section.get("potentiometer_defaults") or {})
    ten_defaults = dict(section.get("tendon_defaults") or {})
    pots = []
    by_joint = {e.get("joint"): e for e in section.get("potentiometers") or ()
                if isinstance(e, dict)}
    for j, joint in enumerate(calibration.joint_names):
        entry = dict(by_joint.get(joint, {"joint": joint}))
        entry["offset_counts"] = _counts(result.pot_offset_counts[j])
        sign = int(result.pot_sign[j])
        if "sign" in entry or sign != pot_defaults.get("sign", 1):
            entry["sign"] = sign
        note = comments["potentiometers"].get(joint)
        pots.append(f"    - {_flow(entry)}" + (f"   {note}" if note else "") + "\n")
    tendons = []
    by_id = {e.get("actuator_id"): e for e in section.get("tendons") or ()
             if isinstance(e, dict)}
    for i, aid in enumerate(calibration.actuator_ids):
        entry = dict(by_id.get(aid, {"actuator_id": aid}))
        entry["encoder_offset_counts"] = _counts(result.encoder_offset_counts[i])
        entry["loadcell_offset_counts"] = _counts(result.loadcell_offset_counts[i])
        sign = int(result.encoder_sign[i])
        if "encoder_sign" in entry or sign != ten_defaults.get("encoder_sign", 1):
            entry["encoder_sign"] = sign
        note = comments["tendons"].get(aid)
        tendons.append(f"    - {_flow(entry)}" + (f"   {note}" if note else "") + "\n")
    return pots, tendons


def _span(lines: list[str], key: str, indent: int, lo: int, hi: int,
          file: str, where: str) -> tuple[int, int]:
    """Lines [start, end) of the block ``key:`` at ``indent`` spaces within lines [lo, hi):
    its own line and every line indented deeper (or a list item at its indentation) up to
    the last one before a line at ``indent`` or less; comments at ``indent`` or less just
    before the next key stay with that key."""
    pattern = re.compile(rf"^ {{{indent}}}{re.escape(key)}:\s*(#.*)?$")
    start = next((i for i in range(lo, hi) if pattern.match(lines[i])), None)
    if start is None:
        raise ConfigError(file, where, f"a block '{key}:' with its values on the lines below it "
                                       f"(indented), as written by hand", None)
    end = start + 1
    for i in range(start + 1, hi):
        body = lines[i].lstrip(" ")
        depth = len(lines[i]) - len(body)
        if not body.strip():
            continue
        if body.startswith("#"):
            if depth > indent:
                end = i + 1
            continue
        if depth < indent or (depth == indent and not body.startswith("- ")):
            break
        end = i + 1
    return start, end


def calibration_text(text: str, section: dict[str, Any], calibration: Calibration,
                     result: CalibrationResult, header: str, file: str) -> str:
    """``text`` (the hardware file) with the measured values in its top-level ``calibration``
    block: the ``potentiometers`` and ``tendons`` lists rewritten (every key they had kept,
    offsets, zeros and signs measured), a comment :data:`HEADER` + ``header`` after
    ``calibration:`` (replacing an earlier one); every other line unchanged. ``section`` is
    the block as read, ``calibration`` the same parsed."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    top, top_end = _span(lines, "calibration", 0, 0, len(lines), file, "calibration")
    where = {k: _span(lines, k, 2, top + 1, top_end, file, f"calibration.{k}")
             for k in ("potentiometers", "tendons")}
    comments = {k: _comments(lines[a + 1:b], ident) for (k, (a, b)), ident in
                zip(where.items(), ("joint", "actuator_id"))}
    pots, tendons = _entries(section, calibration, result, comments)
    # the later block first, so that the earlier one's line numbers still hold
    spans = sorted(((*where[k], new) for k, new in (("potentiometers", pots),
                                                    ("tendons", tendons))), reverse=True)
    for start, end, new in spans:
        lines[start + 1:end] = new
    mark = f"  # {HEADER}"
    if top + 1 < len(lines) and lines[top + 1].startswith(mark):
        del lines[top + 1]
    lines.insert(top + 1, f"{mark} {header}\n")
    return "".join(lines)


def describe_result(calibration: Calibration, result: CalibrationResult) -> list[str]:
    """Lines of the report printed to the user: what changed and what was measured."""
    out = ["joint         offset [counts]  (was)    change   sign  noise [counts]"]
    for j, name in enumerate(calibration.joint_names):
        was = calibration.pot_offset_counts[j]
        new = result.pot_offset_counts[j]
        checked = "" if result.pot_sign_checked[j] else " (not checked)"
        sign = int(result.pot_sign[j])
        out.append(f"{name:<13} {new:15.1f} {was:8.1f} {new - was:+8.1f} {sign:+5d}"
                   f"{result.pot_noise_counts[j]:8.2f}{checked}")
    out.append("actuator  muscle                 encoder offset (change)  load-cell zero "
               "(change)  counts/N  shortening [mm]")
    for i, aid in enumerate(calibration.actuator_ids):
        enc, cell = result.encoder_offset_counts[i], result.loadcell_offset_counts[i]
        d_enc = enc - calibration.encoder_offset_counts[i]
        d_cell = cell - calibration.loadcell_offset_counts[i]
        short = result.shortening_m[i] * 1e3
        out.append(f"{aid:>8}  {calibration.muscle_names[i]:<22} {enc:12.1f} ({d_enc:+8.1f}) "
                   f"{cell:10.1f} ({d_cell:+7.1f}) {result.loadcell_counts_per_n[i]:9.2f} "
                   f"{short:+10.2f}")
    if np.any(~result.pot_sign_checked) or np.any(~result.encoder_sign_checked):
        out.append("signs not checked keep the configured value (see the warnings)")
    return out
