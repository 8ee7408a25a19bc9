"""Config dataclasses written back as YAML, every key with its documentation as a comment.

The inverse of :func:`musculo_control.config.parser.parse`: :func:`dump` writes a frozen config
dataclass as a block of YAML that ``parse`` reads back to an equal object, one line per key,
each followed by the field's ``doc`` (the text :func:`~musculo_control.config.parser.spec`
carries, units included). ``notes`` add a line of explanation to chosen keys (``musculo init``
says there why it chose a value). In lists of sections (muscles, poses, calibration entries)
later items give only values that differ from their default, and the documentation is given once,
on the first item, which shows every key.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Mapping
from typing import Any

import yaml

#: Comments start in this column when the line leaves room.
_COMMENT_COLUMN = 40
#: Lines are kept below this width; a longer comment goes on its own line above the key.
_WIDTH = 100


def scalar(value: Any) -> str:
    """One YAML scalar, as the parser reads it back (floats in their shortest exact form)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a finite number: {value}")
        text = repr(value)
        if "e" in text or "E" in text:
            mantissa, exp = text.lower().split("e")
            if "." not in mantissa:
                mantissa += ".0"
            text = f"{mantissa}e{int(exp)}"
        return text
    if isinstance(value, str):
        text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
        return text[:-4].strip() if text.endswith("\n...") or text.endswith(" ...") else text
    raise TypeError(f"no YAML scalar for {type(value).__name__}")


def _flow(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return scalar(value)


def _is_section(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _line(text: str, comment: str) -> list[str]:
    if not comment:
        return [text]
    if len(text) + 3 + len(comment) <= _WIDTH:
        pad = max(_COMMENT_COLUMN - len(text), 2)
        return [f"{text}{' ' * pad}# {comment}"]
    indent = text[: len(text) - len(text.lstrip())]
    wrapped = textwrap.wrap(comment, _WIDTH - len(indent) - 2, break_on_hyphens=False)
    return [*(f"{indent}# {part}" for part in wrapped), text]


def _doc(field: dataclasses.Field[Any], note: str | None) -> str:
    doc = str(field.metadata.get("doc", ""))
    return f"{doc}; {note}" if note and doc else (note or doc)


def _differs(field: dataclasses.Field[Any], value: Any) -> bool:
    if field.default is not dataclasses.MISSING:
        return bool(value != field.default)
    return True


def _block(obj: Any, indent: int, notes: Mapping[str, str], prefix: str, documented: bool,
           only_changed: bool) -> list[str]:
    lines: list[str] = []
    pad = " " * indent
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        key = f"{prefix}{f.name}"
        if only_changed and not _differs(f, value):
            continue
        comment = _doc(f, notes.get(key)) if documented else notes.get(key, "")
        if _is_section(value):
            lines += _line(f"{pad}{f.name}:", comment)
            lines += _block(value, indent + 2, notes, f"{key}.", documented, False)
        elif isinstance(value, tuple) and value and _is_section(value[0]):
            lines += _line(f"{pad}{f.name}:", comment)
            for i, item in enumerate(value):
                # the first item shows every key with its documentation, the others what
                # differs from the defaults
                body = _block(item, indent + 4, notes, f"{key}[{i}].", documented and i == 0,
                              i > 0)
                if not body:
                    lines.append(f"{pad}  - {{}}")
                    continue
                first = next(k for k, text in enumerate(body) if not text.lstrip().startswith("#"))
                body[first] = f"{pad}  - {body[first][indent + 4:]}"
                lines += body
        elif isinstance(value, tuple) and value and isinstance(value[0], tuple):
            lines += _line(f"{pad}{f.name}:", comment)
            lines += [f"{pad}  - {_flow(row)}" for row in value]
        else:
            lines += _line(f"{pad}{f.name}: {_flow(value)}", comment)
    return lines


def dump(obj: Any, notes: Mapping[str, str] | None = None, *, indent: int = 0,
         prefix: str = "") -> str:
    """``obj`` (a config dataclass) as documented YAML; ``notes``: dotted key -> extra comment.

    ``prefix``: the dotted key of ``obj`` in its file (for ``notes``), e.g. ``"calibration."``.
    """
    return "\n".join(_block(obj, indent, notes or {}, prefix, True, False)) + "\n"


def dump_sections(sections: Mapping[str, Any], notes: Mapping[str, str] | None = None,
                  docs: Mapping[str, str] | None = None) -> str:
    """A file of several top-level sections, each a config dataclass (or, for a mapping of
    node names, ``{"ros__parameters": dataclass}``); ``docs``: a comment per section."""
    out: list[str] = []
    for name, obj in sections.items():
        out += _line(f"{name}:", (docs or {}).get(name, ""))
        if isinstance(obj, Mapping):
            for sub, inner in obj.items():
                out.append(f"  {sub}:")
                out.append(dump(inner, notes, indent=4, prefix=f"{name}.{sub}.").rstrip("\n"))
        else:
            out.append(dump(obj, notes, indent=2, prefix=f"{name}.").rstrip("\n"))
    return "\n".join(out) + "\n"
