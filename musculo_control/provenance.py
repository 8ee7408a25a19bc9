"""Which code produced a result: the git commit of the source and the versions it ran with."""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

#: Distributions whose versions every run records (the run-time dependencies).
DISTRIBUTIONS = ("musculo_control", "numpy", "pin", "osqp", "mujoco", "scipy", "PyYAML",
                 "matplotlib", "rosbags")


def _git(source: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(source), *args], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_commit(source: Path | None = None) -> str:
    """``<sha>`` of the checkout this package was loaded from, ``<sha>+dirty`` with
    uncommitted changes to tracked files, or why there is none (an installed copy)."""
    source = source or Path(__file__).resolve().parent.parent
    top = _git(source, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != source.resolve():
        return "unknown (not run from a git checkout)"
    sha = _git(source, "rev-parse", "HEAD") or "unknown"
    dirty = _git(source, "status", "--porcelain", "--untracked-files=no")
    return f"{sha}+dirty" if dirty else sha


@functools.lru_cache(maxsize=1)
def provenance() -> dict[str, Any]:
    """Commit, Python, platform and the versions of :data:`DISTRIBUTIONS`."""
    versions = {}
    for name in DISTRIBUTIONS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {"git_commit": git_commit(), "python": sys.version.split()[0],
            "platform": platform.platform(), "packages": versions}
