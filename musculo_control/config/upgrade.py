"""Bring a config folder written for an earlier release up to the current schema, as text.

Two sources of truth, both shared with the loaders: the table of renamed and removed keys
(:data:`~musculo_control.config.renamed.MOVED`, which also words the loaders' errors) and the
schema's own "missing" errors. An upgrade

1. moves every key the table lists to its new file and key, with its value as written and its
   comment, or removes it when the table says it went without a successor;
2. asks ``check`` (the loaders) which keys are still missing, and adds each from the shipped
   reference folder, as written there (comments included), marked as added;
3. repeats 2 until nothing more can be added, and keeps what ``check`` still reports.

Edits are made on the text, located by the YAML parser's marks, so that every line the upgrade
does not concern stays as the lab wrote it (order, comments, flow style, ``null``). A key is
moved only from block style (``key: value`` on its own line); one inside a flow mapping is
reported for a hand edit.
"""

from __future__ import annotations

import difflib
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import yaml

from musculo_control.config.renamed import MOVED, Moved
from musculo_control.errors import ConfigError

#: The files of a config folder the upgrade edits (the files of :data:`MOVED` and the loaders').
FOLDER_FILES = ("robot.yaml", "muscles.yaml", "controller.yaml", "hardware.yaml",
                "safety.yaml", "mock_arm.yaml", "experiments.yaml", "ros_params.yaml")
#: The comment an added key carries.
ADDED_NOTE = "added by musculo config upgrade: the shipped default, check it for this robot"


@dataclass(frozen=True)
class Change:
    """One edit: ``kind`` is "moved", "removed", "added" or "dropped" (an old key whose new
    home was already set: the new one is kept)."""

    kind: str
    file: str
    key: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind:8s} {self.file}: {self.key} {self.detail}".rstrip()


@dataclass
class Upgrade:
    """What an upgrade of ``folder`` changes: each file's text before and after, the edits and
    the errors the loaders still report afterwards (for the lab to fix by hand)."""

    folder: Path
    before: dict[str, str]
    after: dict[str, str]
    changes: list[Change] = field(default_factory=list)
    remaining: list[ConfigError] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        """The files whose text changes (folder order)."""
        return [name for name in self.after if self.after[name] != self.before.get(name)]

    def diff(self) -> str:
        """A unified diff of every changed file, as ``git diff`` shows it."""
        out: list[str] = []
        for name in self.changed:
            old = self.before.get(name, "")
            out += difflib.unified_diff(old.splitlines(keepends=True),
                                        self.after[name].splitlines(keepends=True),
                                        f"a/{name}" if name in self.before else "/dev/null",
                                        f"b/{name}")
        return "".join(line if line.endswith("\n") else line + "\n" for line in out)

    def write(self, backup: Path | None) -> None:
        """Write the changed files; first copy the folder whole to ``backup`` (unless None)."""
        if backup is not None:
            shutil.copytree(self.folder, backup)
        for name in self.changed:
            (self.folder / name).write_text(self.after[name])


def backup_path(folder: Path, now: datetime | None = None) -> Path:
    """A free sibling of ``folder`` for its backup: ``<folder>.backup-YYYYmmdd-HHMMSS``."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    path = folder.with_name(f"{folder.name}.backup-{stamp}")
    n = 1
    while path.exists():
        n += 1
        path = folder.with_name(f"{folder.name}.backup-{stamp}-{n}")
    return path


# --- locating keys in the text ------------------------------------------------------------

@dataclass(frozen=True)
class _Found:
    key: yaml.Node
    value: yaml.Node
    first: int  # the key's line (0-based)
    last: int  # the value's last line, and the comment lines that continue it
    flow: bool  # inside a flow mapping: shares its line with others


def _compose(text: str) -> yaml.Node | None:
    return yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _last_line(node: yaml.Node) -> int:
    """The last line that holds part of ``node``'s value."""
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        end = node.end_mark
        return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line
    children: list[yaml.Node] = []
    for item in node.value:
        children += list(item) if isinstance(item, tuple) else [item]
    return max((_last_line(c) for c in children), default=node.start_mark.line)


def _continuation(lines: list[str], last: int, key_column: int) -> int:
    """``last`` extended over the comment lines indented deeper than the key that follow it
    (the rest of the key's own comment: a comment at the key's indent belongs to the next)."""
    i = last + 1
    while i < len(lines):
        stripped = lines[i].lstrip()
        if not stripped.startswith("#") or len(lines[i]) - len(stripped) <= key_column:
            break
        i += 1
    return i - 1


def _find(text: str, path: tuple[str, ...]) -> _Found | None:
    node = _compose(text)
    found = None
    flow = False
    for part in path:
        if not isinstance(node, yaml.MappingNode):
            return None
        flow = flow or bool(node.flow_style)
        pair = next(((k, v) for k, v in node.value if k.value == part), None)
        if pair is None:
            return None
        found, node = pair, pair[1]
    if found is None:
        return None
    key, value = found
    lines = text.splitlines()
    last = _continuation(lines, _last_line(value), key.start_mark.column)
    return _Found(key, value, key.start_mark.line, last, flow)


# --- the edits ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Taken:
    """A key cut from its file: its value as written and its comment lines."""

    value: list[str]  # the value's text: one line, or a block's lines (dedented)
    comments: list[str]  # without the '#'


def _take(text: str, path: tuple[str, ...]) -> tuple[str, _Taken] | None:
    """``text`` without the block-style key ``path``, and what it held; None if absent or in
    flow style."""
    found = _find(text, path)
    if found is None or found.flow:
        return None
    lines = text.splitlines(keepends=True)
    block = lines[found.first:found.last + 1]
    value = found.value
    comments: list[str] = []
    if isinstance(value, yaml.ScalarNode) or value.flow_style:
        body = [text[value.start_mark.index:value.end_mark.index]]
        tail = lines[value.end_mark.line][value.end_mark.column:]
        comments = [c.strip()[1:].strip() for c in [tail, *block[1 + value.end_mark.line
                                                                  - found.first:]]
                    if c.strip().startswith("#")]
    else:
        first = block[1:]
        indent = min((len(b) - len(b.lstrip()) for b in first if b.strip()), default=0)
        body = [b[indent:].rstrip("\n") for b in first]
    rest = lines[:found.first] + lines[found.last + 1:]
    return "".join(rest), _Taken(body, comments)


def _format(leaf: str, taken: _Taken, indent: int, comment_column: int = 34) -> list[str]:
    """The lines of ``leaf: value  # comment`` at ``indent``."""
    pad = " " * indent
    if len(taken.value) > 1 or not taken.value:
        head = [f"{pad}{leaf}:"] + [f"{pad}  {v}" for v in taken.value]
        return [h + "\n" for h in head]
    line = f"{pad}{leaf}: {taken.value[0]}"
    if not taken.comments:
        return [line + "\n"]
    col = max(comment_column, len(line) + 2)
    out = [f"{line.ljust(col)}# {taken.comments[0]}\n"]
    out += [f"{' ' * col}# {c}\n" for c in taken.comments[1:]]
    return out


def _mapping_node(text: str, path: tuple[str, ...]) -> yaml.Node | None:
    """The value node at ``path`` (the document at ())."""
    if not path:
        return _compose(text)
    found = _find(text, path)
    return found.value if found is not None else None


def _keys(text: str, path: tuple[str, ...]) -> list[str]:
    """The keys of the mapping at ``path``, in order ([] when it is not a mapping)."""
    node = _mapping_node(text, path)
    return [k.value for k, _ in node.value] if isinstance(node, yaml.MappingNode) else []


def _insert_line(text: str, parent: tuple[str, ...], leaf: str, order: list[str]) -> int:
    """The line index where ``leaf`` goes in the block mapping ``parent``: after the last of
    its earlier siblings by ``order`` (the reference's) that the mapping has; else before the
    first later one, above the comment lines that introduce it (but below a file's header);
    else after the mapping's last key (or its own line, when it has none)."""
    lines = text.splitlines()
    keys = _keys(text, parent)
    if not keys:
        return _find(text, parent).last + 1 if parent else len(lines)  # type: ignore[union-attr]
    rank = order.index(leaf) if leaf in order else len(order)
    earlier = [k for k in keys if k in order[:rank]]
    later = [k for k in keys if k in order[rank + 1:]]
    if earlier or not later:
        anchor = _find(text, (*parent, (earlier or keys)[-1]))
        return anchor.last + 1  # type: ignore[union-attr]
    first = _find(text, (*parent, later[0]))
    at = first.first  # type: ignore[union-attr]
    column = first.key.start_mark.column  # type: ignore[union-attr]
    i = at
    while i > 0 and lines[i - 1].lstrip().startswith("#") \
            and len(lines[i - 1]) - len(lines[i - 1].lstrip()) == column:
        i -= 1
    return at if i == 0 else i


def _child_indent(text: str, parent: tuple[str, ...]) -> int:
    """The column of the keys of the mapping at ``parent``: its first key's, else two more than
    the parent key's."""
    node = _mapping_node(text, parent)
    if isinstance(node, yaml.MappingNode) and node.value:
        return node.value[0][0].start_mark.column
    return _find(text, parent).key.start_mark.column + 2 if parent else 0  # type: ignore


def _put(text: str, path: tuple[str, ...], lines_of: Callable[[int], list[str]],
         order: Callable[[tuple[str, ...]], list[str]]) -> str:
    """``text`` with the new block-style key ``path``, whose lines ``lines_of(indent)`` gives,
    its missing parents created; each key placed by the reference's ``order`` of its mapping."""
    if text and not text.endswith("\n"):
        text += "\n"
    parent, leaf = path[:-1], path[-1]
    if parent and _find(text, parent) is None:
        text = _put(text, parent, lambda ind: [" " * ind + f"{parent[-1]}:\n"], order)
    at = _insert_line(text, parent, leaf, order(parent))
    lines = text.splitlines(keepends=True)
    return "".join(lines[:at] + lines_of(_child_indent(text, parent)) + lines[at:])


def _set_in_flow(text: str, parent: _Found, leaf: str, value: str) -> str:
    """``text`` with ``leaf: value`` added at the end of the flow mapping ``parent``."""
    node = parent.value
    close = node.end_mark.index - 1  # the '}'
    sep = ", " if node.value else ""
    return text[:close].rstrip() + f"{sep}{leaf}: {value}" + text[close:]


# --- the upgrade --------------------------------------------------------------------------

def key_path(file: str, key: str) -> tuple[str, ...]:
    """The mapping keys of a table key: a node parameter ``node.name`` of ros_params.yaml is
    ``node.ros__parameters.name`` in the file."""
    parts = tuple(key.split("."))
    if file == "ros_params.yaml" and "ros__parameters" not in parts:
        return (parts[0], "ros__parameters", *parts[1:])
    return parts


class _Folder:
    """The texts being upgraded, the reference's texts and the list of edits."""

    def __init__(self, before: dict[str, str], reference: dict[str, str]) -> None:
        self.texts = dict(before)
        self.reference = reference
        self.changes: list[Change] = []

    def order(self, file: str) -> Callable[[tuple[str, ...]], list[str]]:
        ref = self.reference.get(file, "")
        return lambda parent: _keys(ref, parent) if ref else []

    def add(self, file: str, path: tuple[str, ...], lines_of: Callable[[int], list[str]],
            flow_value: str) -> None:
        """Add the key ``path`` (absent): block lines, or ``flow_value`` into a flow parent."""
        text = self.texts.get(file, "")
        parent = _find(text, path[:-1]) if len(path) > 1 else None
        if parent is not None and isinstance(parent.value, yaml.MappingNode) \
                and parent.value.flow_style:
            self.texts[file] = _set_in_flow(text, parent, path[-1], flow_value)
        else:
            self.texts[file] = _put(text, path, lines_of, self.order(file))

    def move(self, entry: Moved) -> None:
        """Apply one entry of the table, if its key is in the folder."""
        if entry.file not in self.texts:
            return
        old = key_path(entry.file, entry.key)
        taken = _take(self.texts[entry.file], old)
        if taken is None:
            if _find(self.texts[entry.file], old) is not None:
                self.changes.append(Change("manual", entry.file, entry.key,
                                           "inside a flow mapping: move it by hand"))
            return
        self.texts[entry.file], cut = taken
        written = " ".join(cut.value).strip()
        if not entry.new_key:
            self.changes.append(Change("removed", entry.file, entry.key, entry.why))
            return
        new = key_path(entry.new_file, entry.new_key)
        there = _find(self.texts.get(entry.new_file, ""), new)
        if there is not None:
            kept = " ".join(self.texts[entry.new_file][there.value.start_mark.index:
                                                       there.value.end_mark.index].split())
            self.changes.append(Change(
                "dropped", entry.file, entry.key,
                f"{written} dropped: {entry.new_file} {entry.new_key} is already set ({kept})"))
            return
        self.add(entry.new_file, new, lambda ind: _format(new[-1], cut, ind), written)
        self.changes.append(Change("moved", entry.file, entry.key,
                                   f"-> {entry.new_file} {entry.new_key} = {written}"))

    def default(self, error: ConfigError) -> bool:
        """Add a key the loaders found missing, as the reference writes it; False if the
        reference has none (or the key is a list item)."""
        file = Path(error.file).name
        if "[" in error.key or file not in self.reference:
            return False
        path = tuple(error.key.split("."))
        ref = self.reference[file]
        found = _find(ref, path)
        if found is None or _find(self.texts.get(file, ""), path) is not None:
            return False
        value = ref[found.value.start_mark.index:found.value.end_mark.index]
        if found.flow:
            taken = _Taken([value], [ADDED_NOTE])
            self.add(file, path, lambda ind: _format(path[-1], taken, ind, 0), value)
        else:
            block = ref.splitlines(keepends=True)[found.first:found.last + 1]
            self.add(file, path, lambda ind: _reindented(block, found.key.start_mark.column,
                                                         ind), value)
        self.changes.append(Change("added", file, error.key,
                                   f"the shipped default ({' '.join(value.split())[:60]})"))
        return True


def _reindented(block: list[str], column: int, indent: int) -> list[str]:
    """The reference's lines of a key moved from ``column`` to ``indent``, under a note."""
    shift = indent - column
    out = [" " * indent + f"# {ADDED_NOTE}\n"]
    for line in block:
        if not line.strip():
            out.append(line)
        elif shift >= 0:
            out.append(" " * shift + line)
        else:
            out.append(line[min(-shift, len(line) - len(line.lstrip())):])
    return out


def read_folder(folder: Path, files: Iterable[str] = FOLDER_FILES) -> dict[str, str]:
    """The texts of the config files a folder has."""
    return {name: (folder / name).read_text() for name in files if (folder / name).is_file()}


def plan(folder: Path, reference: Path,
         check: Callable[[dict[str, str]], list[ConfigError]],
         moved: tuple[Moved, ...] = MOVED, rounds: int = 8) -> Upgrade:
    """The upgrade of ``folder`` (nothing written): :data:`MOVED` applied, then each key
    ``check`` finds missing added from ``reference``'s files, until none can be.
    ``check(texts)`` returns the loaders' errors for the folder with those file texts."""
    before = read_folder(folder)
    work = _Folder(before, read_folder(reference))
    for entry in moved:
        work.move(entry)
    remaining = check(work.texts)
    for _ in range(rounds):
        missing = [e for e in remaining if str(e.received) == "missing"]
        if not any([work.default(e) for e in missing]):
            break
        remaining = check(work.texts)
    return Upgrade(folder, before, work.texts, work.changes, remaining)
