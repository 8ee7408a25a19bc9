"""``musculo config upgrade FOLDER``: rewrite a config folder of an earlier release for this one.

Renamed keys move with their values and comments, removed ones go, and keys the current schema
needs that the folder lacks are added as the shipped folder writes them (marked for review).
The diff is shown; the folder is copied whole to a backup beside it before anything is written.
``--check`` writes nothing and exits 1 when the folder would change (for a lab's CI).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from musculo_control.config.upgrade import Upgrade, backup_path, plan
from musculo_control.errors import ConfigError, ConfigErrors, InputError
from musculo_control.paths import default_config_dir


def add_parser(sub: Any) -> None:
    p = sub.add_parser("config", help="upgrade a config folder written for an earlier release",
                       description=__doc__.split("\n\n")[0])
    verbs = p.add_subparsers(dest="verb", required=True)
    up = verbs.add_parser("upgrade", help="move renamed keys, add new ones, show the diff",
                          description=__doc__.split("\n\n", 1)[1])
    up.add_argument("folder", type=Path, help="the config folder to upgrade, in place")
    up.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if the folder would change")
    up.add_argument("--reference", type=Path, default=None,
                    help="the folder whose values new keys take (default: the shipped arm's)")
    up.add_argument("--no-backup", action="store_true", help="do not copy the folder first")
    up.set_defaults(func=run)


def _flat(exc: ConfigError) -> list[ConfigError]:
    return list(exc.errors) if isinstance(exc, ConfigErrors) else [exc]


def folder_errors(folder: Path) -> list[ConfigError]:
    """Every error the loaders find in ``folder``: the simulated run's files (schemas and the
    checks across files) and each node's section of ros_params.yaml."""
    from musculo_control.nodes.node_config import NODE_PARAMS, ROS_PARAMS_FILE, check_params_file
    from musculo_control.sim.setup import Overrides, load_setup

    errors: list[ConfigError] = []
    try:
        load_setup(folder, Overrides())
    except ConfigError as exc:
        errors += _flat(exc)
    params = folder / ROS_PARAMS_FILE
    if params.is_file():
        for node, cls in NODE_PARAMS.items():
            try:
                check_params_file(params, node, cls)
            except ConfigError as exc:
                errors += [e for e in _flat(exc) if str(e) not in {str(x) for x in errors}]
    return errors


def checker(folder: Path) -> Callable[[dict[str, str]], list[ConfigError]]:
    """:func:`folder_errors` of ``folder`` with some files' texts replaced, on a copy; the
    errors name the files of ``folder``."""
    def check(texts: dict[str, str]) -> list[ConfigError]:
        with tempfile.TemporaryDirectory(prefix="musculo_upgrade_") as tmp:
            copy = Path(tmp) / folder.name
            shutil.copytree(folder, copy)
            for name, text in texts.items():
                (copy / name).write_text(text)
            return [ConfigError(str(folder / Path(e.file).name), e.key, e.expected, e.received,
                                where=e.where) if Path(e.file).parent == copy else e
                    for e in folder_errors(copy)]
    return check


def upgrade(folder: Path, reference: Path | None = None) -> Upgrade:
    """The upgrade of ``folder`` (nothing written)."""
    if not folder.is_dir():
        raise InputError("FOLDER", "a config folder", str(folder))
    return plan(folder, reference or default_config_dir(), checker(folder))


def _report(up: Upgrade, out: Any) -> None:
    for change in up.changes:
        print(f"  {change}", file=out)
    if up.remaining:
        print(f"{len(up.remaining)} errors left for a hand edit:", file=out)
        for e in up.remaining:
            print(f"  {e}", file=out)


def run(args: argparse.Namespace) -> int:
    folder = args.folder.resolve()
    up = upgrade(folder, args.reference)
    if not up.changed:
        print(f"{folder}: nothing to upgrade" + (
            f"; {len(up.remaining)} errors no upgrade fixes:" if up.remaining else ""))
        _report(up, sys.stdout)
        return 1 if up.remaining else 0
    sys.stdout.write(up.diff())
    print(f"{len(up.changes)} changes in {', '.join(up.changed)}:")
    _report(up, sys.stdout)
    if args.check:
        print(f"{folder}: would change (musculo config upgrade {args.folder} writes it)")
        return 1
    backup = None if args.no_backup else backup_path(folder)
    up.write(backup)
    if backup is not None:
        print(f"backup of the folder as it was: {backup}")
    print(f"{folder}: upgraded" + (" and loads" if not up.remaining else
                                   f"; {len(up.remaining)} errors left (above)"))
    return 1 if up.remaining else 0
