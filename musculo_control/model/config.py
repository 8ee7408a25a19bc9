"""Typed loading of YAML configuration into frozen dataclasses.

Every configurable part of the project is a frozen dataclass. :func:`parse` turns a mapping read
from YAML into one, rejecting unknown keys, missing keys, wrong types, non-finite numbers, values
out of range and vectors of the wrong length, each with a :class:`ConfigError` that names the
file, the dotted key, what was expected and what was received.

Field constraints live in the field's metadata (see :func:`spec`); a dataclass may also define
``check(self, file, key)`` for rules that span fields.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from typing import Any, TypeVar, Union

import yaml

from musculo_control.errors import ConfigError

T = TypeVar("T")

_NUMBER_TYPES = (int, float)


def spec(
    default: Any = dataclasses.MISSING,
    *,
    gt: float | None = None,
    ge: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    length: int | None = None,
    min_length: int | None = None,
    choices: tuple[str, ...] | None = None,
    doc: str = "",
) -> Any:
    """A dataclass field with validation rules and a one-line description (units included)."""
    meta = {
        "gt": gt,
        "ge": ge,
        "le": le,
        "lt": lt,
        "length": length,
        "min_length": min_length,
        "choices": choices,
        "doc": doc,
    }
    if isinstance(default, (list, dict)):
        raise TypeError("mutable defaults are not allowed; use a tuple")
    return dataclasses.field(default=default, metadata=meta)


def read_yaml(path: Path) -> Any:
    """Read one YAML file, turning I/O and syntax errors into :class:`ConfigError`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), "<file>", "a readable YAML file", exc.strerror) from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "<file>", "valid YAML", str(exc).splitlines()[0]) from exc


def load(cls: type[T], path: Path, key: str = "") -> T:
    """Read ``path`` and parse it (or its top-level ``key``) into ``cls``."""
    data = read_yaml(path)
    if key:
        if not isinstance(data, dict) or key not in data:
            raise ConfigError(str(path), key, f"a top-level mapping with key '{key}'", _short(data))
        data = data[key]
    return parse(cls, data, str(path), key)


def load_with_overrides(cls: type[T], path: Path,
                        overrides: dict[str, Any] | None = None) -> T:
    """Read ``path`` whole, apply dotted-key overrides (see :func:`apply_overrides`), parse."""
    data = read_yaml(path)
    if overrides:
        if not isinstance(data, dict):
            raise ConfigError(str(path), "<top level>", "a mapping", type(data).__name__)
        data = apply_overrides(data, overrides, str(path))
    return parse(cls, data, str(path))


def parse(cls: type[T], data: Any, file: str, key: str = "") -> T:
    """Build the frozen dataclass ``cls`` from ``data`` (a mapping), validating every field."""
    where = key or "<top level>"
    if not isinstance(data, dict):
        raise ConfigError(file, where, f"a mapping with keys {_field_names(cls)}", _short(data))
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(map(str, data)) - set(fields))
    if unknown:
        raise ConfigError(
            file, _join(key, unknown[0]), f"one of the known keys {sorted(fields)}", "unknown key"
        )
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, f in fields.items():
        sub = _join(key, name)
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                doc = f.metadata.get("doc", "")
                raise ConfigError(file, sub, f"a value ({doc})" if doc else "a value", "missing")
            continue
        value = _convert(hints[name], data[name], file, sub)
        _check_meta(f.metadata, value, file, sub)
        values[name] = value
    obj = cls(**values)
    check = getattr(obj, "check", None)
    if callable(check):
        check(file, key)
    return obj


def _convert(tp: Any, value: Any, file: str, key: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _convert(args[0], value, file, key)
    if dataclasses.is_dataclass(tp):
        return parse(tp, value, file, key)  # type: ignore[arg-type]
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, _NUMBER_TYPES):
            raise ConfigError(file, key, "a number", value)
        if not math.isfinite(value):
            raise ConfigError(file, key, "a finite number", value)
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(file, key, "an integer", value)
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(file, key, "true or false", value)
        return value
    if tp is str:
        if not isinstance(value, str) or not value:
            raise ConfigError(file, key, "a non-empty string", value)
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(file, key, "a list", _short(value))
        item_tp = typing.get_args(tp)[0]
        return tuple(_convert(item_tp, v, file, f"{key}[{i}]") for i, v in enumerate(value))
    raise TypeError(f"unsupported config field type {tp!r} at {key}")


def _check_meta(meta: Any, value: Any, file: str, key: str) -> None:
    if value is None:
        return
    if isinstance(value, tuple):
        if meta.get("length") is not None and len(value) != meta["length"]:
            raise ConfigError(file, key, f"a list of {meta['length']} items", f"{len(value)} items")
        if meta.get("min_length") is not None and len(value) < meta["min_length"]:
            raise ConfigError(
                file, key, f"a list of at least {meta['min_length']} items", f"{len(value)} items"
            )
        for i, v in enumerate(value):
            if isinstance(v, float):
                _check_range(meta, v, file, f"{key}[{i}]")
        return
    if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
        _check_range(meta, float(value), file, key)
    if isinstance(value, str) and meta.get("choices") and value not in meta["choices"]:
        raise ConfigError(file, key, f"one of {list(meta['choices'])}", value)


def _check_range(meta: Any, v: float, file: str, key: str) -> None:
    for name, ok, word in (
        ("gt", lambda b: v > b, ">"),
        ("ge", lambda b: v >= b, ">="),
        ("lt", lambda b: v < b, "<"),
        ("le", lambda b: v <= b, "<="),
    ):
        bound = meta.get(name)
        if bound is not None and not ok(bound):
            raise ConfigError(file, key, f"a number {word} {bound}", v)


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any], file: str) -> dict[str, Any]:
    """Return a copy of ``data`` with dotted keys (``qp.r=0.01``) replaced; keys must exist."""
    import copy

    out = copy.deepcopy(data)
    for dotted, value in overrides.items():
        node: Any = out
        parts = dotted.split(".")
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                idx: Any = int(part)
            elif isinstance(node, dict) and part in node:
                idx = part
            else:
                known = sorted(node) if isinstance(node, dict) else f"indices 0..{len(node) - 1}"
                raise ConfigError(file, dotted, f"an existing key; at '{part}' there are {known}")
            if last:
                node[idx] = value
            else:
                node = node[idx]
    return out


def describe(cls: type) -> list[tuple[str, str, Any]]:
    """(name, doc, default) for each field of a config dataclass, for docs and ROS parameters."""
    rows = []
    for f in dataclasses.fields(cls):
        default = None if f.default is dataclasses.MISSING else f.default
        rows.append((f.name, f.metadata.get("doc", ""), default))
    return rows


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _join(key: str, name: str) -> str:
    return f"{key}.{name}" if key else name


def _short(value: Any) -> Any:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
