"""Typed loading of YAML configuration into frozen dataclasses.

Every configurable part of the project is a frozen dataclass. :func:`parse` turns a mapping read
from YAML into one, rejecting unknown keys, missing keys, wrong types, non-finite numbers, values
out of range and vectors of the wrong length, each with a :class:`ConfigError` that names the
file, the dotted key, what was expected and what was received. Every such error of a mapping is
collected and raised together (:class:`ConfigErrors`, one line each), and the loaders add each
key's line and column in the file, so a file with several mistakes is fixed in one pass. A key
that was renamed or removed names its new home (:mod:`musculo_control.config.renamed`).

Field constraints live in the field's metadata (see :func:`spec`); a dataclass may also define
``check(self, file, key)`` for rules that span fields.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, Union

import yaml

from musculo_control.config.renamed import moved, moved_expectation
from musculo_control.errors import ConfigError, ConfigErrors, InputError, raise_collected

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


#: libyaml's parser where PyYAML has it: ten times faster, the same marks and documents
_SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):  # type: ignore[misc, valid-type]
    """PyYAML's safe loader with YAML 1.2's floats: ``1e-2`` is a number, not a string.

    PyYAML follows YAML 1.1, whose float pattern needs a dot, so ``k: 1e-2`` would load as the
    string '1e-2' and be refused as "not a number"; YAML 1.2 (and every other parser a user
    knows) reads it as 0.01.
    """


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


def yaml_text(text: str, file: str) -> Any:
    """Parse YAML text; a syntax error names the file, line and column (1-based)."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        context = exc.context or ""
        cm = exc.context_mark
        if context and cm is not None and mark is not None and cm.line != mark.line:
            context += f" (line {cm.line + 1}, column {cm.column + 1})"
        what = ": ".join(p for p in (context, exc.problem) if p)
        raise ConfigError(file, "<file>", "valid YAML", what, where=where) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(file, "<file>", "valid YAML", str(exc).splitlines()[0]) from exc


def parse_value(text: str, what: str) -> Any:
    """A command-line value (``--set K=V``) read as YAML, with the same rules as the files."""
    try:
        return yaml_text(text, what)
    except ConfigError as exc:
        raise ConfigError(what, exc.key, "a YAML value such as 0.01, 1e-2, true, [1, 2] or a "
                                         "name", text, where=exc.where) from exc


def parse_override(item: str, option: str = "--set") -> tuple[str, Any]:
    """``'controller.qp.k=1e-2'`` -> ``('controller.qp.k', 0.01)``: a dotted key and its value."""
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or "." not in key or not all(key.split(".")) or not text.strip():
        raise InputError(option, "FILE.KEY=VALUE, e.g. controller.qp.r=0.01", item)
    return key, parse_value(text, f"{option} {key}")


def overrides_by_file(items: list[str] | tuple[str, ...], files: tuple[str, ...],
                      option: str = "--set") -> dict[str, dict[str, Any]]:
    """``FILE.KEY=VALUE`` items grouped by file, e.g. ``["controller.qp.r=0.3"]`` ->
    ``{"controller": {"qp.r": 0.3}, ...}`` (every file of ``files`` present); an item naming
    another file is an :class:`InputError` listing ``files``. The one parser of ``--set``."""
    out: dict[str, dict[str, Any]] = {f: {} for f in files}
    for item in items:
        key, value = parse_override(item, option)
        prefix, _, rest = key.partition(".")
        if prefix not in out:
            raise InputError(option, f"a key starting with one of {list(files)}", item)
        out[prefix][rest] = value
    return out


def read_yaml(path: Path) -> Any:
    """Read one YAML file, turning I/O and syntax errors into :class:`ConfigError`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), "<file>", "a readable YAML file", exc.strerror) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), "<file>", "a UTF-8 text file", str(exc)) from exc
    return yaml_text(text, str(path))


def _compose(path: Path) -> yaml.Node | None:
    try:
        return yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


def _walk(root: yaml.Node | None, dotted: str) -> list[tuple[yaml.Node, yaml.Node]]:
    """(key node, value node) of each part of ``dotted`` (``a.b[2].c``) found in the composed
    file, as far as the path goes (a list item's key node is the item itself)."""
    found: list[tuple[yaml.Node, yaml.Node]] = []
    node = root
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", dotted):
        if isinstance(node, yaml.MappingNode) and not part.startswith("["):
            pairs = [(k, v) for k, v in node.value if getattr(k, "value", None) == part]
            if not pairs:
                break
            found.append(pairs[0])
        elif isinstance(node, yaml.SequenceNode) and part.startswith("["):
            i = int(part[1:-1])
            if i >= len(node.value):
                break
            found.append((node.value[i], node.value[i]))
        else:
            break
        node = found[-1][1]
    return found


def _mark(node: yaml.Node) -> str:
    return f"line {node.start_mark.line + 1}, column {node.start_mark.column + 1}"


def key_position(path: Path, dotted: str) -> tuple[int, int] | None:
    """(line, column), 1-based, of the value of ``dotted`` (``a.b[2].c``) in a YAML file."""
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", dotted)
    found = _walk(_compose(path), dotted)
    if not parts or len(found) != len(parts):
        return None
    mark = found[-1][1].start_mark
    return mark.line + 1, mark.column + 1


def _where(root: yaml.Node | None, exc: ConfigError) -> str:
    """Where ``exc``'s key is in the composed file: the value's line and column; the key's for
    a key that should not be there; the enclosing section's for a missing one."""
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", exc.key)
    found = _walk(root, exc.key)
    if parts and len(found) == len(parts):
        stale = exc.received == "unknown key" or moved(exc.file, exc.key) is not None
        return _mark(found[-1][0] if stale else found[-1][1])
    if found and len(found) == len(parts) - 1 and exc.received == "missing":
        return f"in the section at {_mark(found[-1][0])}"
    return ""


def located(exc: ConfigError, path: Path, overridden: set[str] | frozenset[str] = frozenset()
            ) -> ConfigError:
    """``exc`` (or each error of a :class:`ConfigErrors`) with its key's line and column in
    the YAML file ``path``, or 'set on the command line' for a key in ``overridden``."""
    errors = exc.errors if isinstance(exc, ConfigErrors) else (exc,)
    root: list[yaml.Node | None] = []  # composed once, on first need
    out = []
    for e in errors:
        if e.file != str(path) or not e.key or e.where or e.key.startswith("<"):
            out.append(e)
            continue
        key = e.key
        if any(key == o or key.startswith(o + ".") or key.startswith(o + "[") for o in overridden):
            where = "set on the command line"
        else:
            if not root:
                root.append(_compose(path))
            where = _where(root[0], e)
        out.append(ConfigError(e.file, key, e.expected, e.received, where=where) if where else e)
    if not isinstance(exc, ConfigErrors):
        return out[0]
    return ConfigErrors(sorted(out, key=_line_in(str(path))))  # the file's, in its order


def located_in(errors: list[ConfigError], files: Mapping[str, set[str]]) -> list[ConfigError]:
    """``errors`` (each a :class:`ConfigError` or :class:`ConfigErrors`), flattened, with the
    line and column of each key in its YAML file, one of ``files`` (path -> the dotted keys set
    on the command line there); each file's errors in its line order."""
    if not errors:
        return []
    exc: ConfigError = ConfigErrors(errors)
    for path, overridden in files.items():
        if Path(path).is_file():
            exc = located(exc, Path(path), overridden)
    return list(exc.errors) if isinstance(exc, ConfigErrors) else [exc]


def _line_in(file: str) -> Callable[[ConfigError], tuple[int, int]]:
    """Sort key: errors of ``file`` by their line (those without one after), others first in
    their given order."""
    def key(e: ConfigError) -> tuple[int, int]:
        if e.file != file:
            return (0, 0)
        found = re.search(r"line (\d+)", e.where)
        return (1, int(found.group(1)) if found else 1 << 30)
    return key


def load(cls: type[T], path: Path, key: str = "") -> T:
    """Read ``path`` and parse it (or its top-level ``key``) into ``cls``."""
    data = read_yaml(path)
    if key:
        if not isinstance(data, dict) or key not in data:
            raise ConfigError(str(path), key, f"a top-level mapping with key '{key}'", _short(data))
        data = data[key]
    try:
        return parse(cls, data, str(path), key)
    except ConfigError as exc:
        raise located(exc, path) from None


def load_with_overrides(cls: type[T], path: Path,
                        overrides: dict[str, Any] | None = None) -> T:
    """Read ``path`` whole, apply dotted-key overrides (see :func:`apply_overrides`), parse."""
    data = read_yaml(path)
    try:
        if overrides:
            if not isinstance(data, dict):
                raise ConfigError(str(path), "<top level>", "a mapping", type(data).__name__)
            data = apply_overrides(data, overrides, str(path))
        return parse(cls, data, str(path))
    except ConfigError as exc:
        raise located(exc, path, set(overrides or ())) from None


def load_section(cls: type[T], path: Path, section: str, sections: tuple[str, ...],
                 overrides: dict[str, Any] | None = None) -> T:
    """Parse top-level ``section`` of a file whose top level holds the independent
    ``sections`` (each parsed by its own reader) into ``cls``; ``overrides`` are dotted keys of
    the whole file (e.g. ``{"soak.duration_s": 60}``)."""
    data = read_yaml(path)
    try:
        if not isinstance(data, dict):
            raise ConfigError(str(path), "<top level>", f"a mapping with keys {list(sections)}",
                              type(data).__name__)
        check_known_keys(data, sections, str(path), "")
        if overrides:
            data = apply_overrides(data, overrides, str(path))
        if section not in data:
            raise ConfigError(str(path), section, "a section", "missing")
        return parse(cls, data[section], str(path), section)
    except ConfigError as exc:
        raise located(exc, path, set(overrides or ())) from None


def unknown_keys(data: dict[Any, Any], known: Any, file: str, key: str) -> list[ConfigError]:
    """One error per key of ``data`` (in file order) not in ``known``: a renamed or removed key
    names its new home, any other lists the known keys (and the closest, for a typo)."""
    names = sorted(map(str, known))
    errors = []
    for name, value in data.items():
        if str(name) in names:
            continue
        dotted = _join(key, str(name))
        entry = moved(file, dotted)
        if entry is not None:
            errors.append(ConfigError(file, dotted, moved_expectation(entry), _received(value)))
            continue
        import difflib  # only for a message (not loaded by every node)

        close = difflib.get_close_matches(str(name), names, n=1, cutoff=0.8)
        hint = f" (closest: '{close[0]}')" if close else ""
        errors.append(ConfigError(file, dotted, f"one of the known keys {names}{hint}",
                                  "unknown key"))
    return errors


def check_known_keys(data: dict[Any, Any], known: Any, file: str, key: str) -> None:
    """Reject every key of ``data`` not in ``known`` (:func:`unknown_keys`), together."""
    raise_collected(unknown_keys(data, known, file, key))


def parse(cls: type[T], data: Any, file: str, key: str = "") -> T:
    """Build the frozen dataclass ``cls`` from ``data`` (a mapping), validating every field."""
    where = key or "<top level>"
    if not isinstance(data, dict):
        raise ConfigError(file, where, f"a mapping with keys {_field_names(cls)}", _short(data))
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    errors = unknown_keys(data, fields, file, key)  # every mistake of the mapping, together
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, f in fields.items():
        sub = _join(key, name)
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                doc = f.metadata.get("doc", "")
                errors.append(ConfigError(file, sub, f"a value ({doc})" if doc else "a value",
                                          "missing"))
            continue
        try:
            value = _convert(hints[name], data[name], file, sub)
            _check_meta(f.metadata, value, file, sub)
        except ConfigError as exc:
            errors.append(exc)
            continue
        values[name] = value
    raise_collected(errors)
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
        items, errors = [], []
        for i, v in enumerate(value):
            try:
                items.append(_convert(item_tp, v, file, f"{key}[{i}]"))
            except ConfigError as exc:
                errors.append(exc)
        raise_collected(errors)
        return tuple(items)
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


def _received(value: Any) -> Any:
    """A value as an error reports it: a scalar itself, a collection shortened."""
    return value if isinstance(value, (str, int, float, bool)) else _short(value)


def _short(value: Any) -> Any:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
