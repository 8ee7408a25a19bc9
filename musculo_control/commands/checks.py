"""Checks of command-line paths and names, run before any simulation starts.

A user's mistake must stop the command at once with a sentence that names the option, not after
minutes of simulation with a traceback.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from musculo_control.errors import InputError


def writable_dir(path: Path, option: str) -> Path:
    """Create ``path`` (and its parents) if needed and prove a file can be written in it."""
    path = Path(path)
    for parent in (path, *path.parents):
        if parent.exists() and not parent.is_dir():
            raise InputError(option, "a folder that can be created",
                             f"{path} ({parent} is a file)")
        if parent.exists():
            break
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".musculo-write-check-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(option, "a writable folder", f"{path}: {exc.strerror or exc}") from None
    return path


def writable_file(path: Path | None, option: str) -> Path | None:
    """``path``'s folder must be writable and ``path`` itself not a folder (None passes)."""
    if path is None:
        return None
    path = Path(path)
    if path.is_dir():
        raise InputError(option, "a file path", f"{path} is a folder")
    writable_dir(path.parent if str(path.parent) else Path("."), option)
    return path


def names(text: str, known: Sequence[str], option: str) -> list[str]:
    """A comma-separated list of known names, at least one, no repeats."""
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise InputError(option, f"a comma-separated list of {list(known)}", text)
    unknown = [x for x in items if x not in known]
    if unknown:
        raise InputError(option, f"names from {list(known)}", ", ".join(unknown))
    if len(set(items)) != len(items):
        raise InputError(option, "each name once", text)
    return items
