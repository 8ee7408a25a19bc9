"""The ``musculo`` command: model report, simulated experiments, benchmarks.

Each subcommand lives in its own module under :mod:`musculo_control.commands` and registers
itself through an ``add_parser(subparsers)`` function listed in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from musculo_control.errors import ConfigWarning, MusculoError

#: Modules that each provide ``add_parser(subparsers)``; the parser's ``func`` runs the command.
COMMANDS = (
    "musculo_control.commands.init",
    "musculo_control.commands.config",
    "musculo_control.commands.model_report",
    "musculo_control.commands.bench",
    "musculo_control.commands.simulate",
    "musculo_control.commands.score",
    "musculo_control.commands.experiment",
    "musculo_control.commands.report",
    "musculo_control.commands.publish",
    "musculo_control.commands.sweep",
    "musculo_control.commands.study",
    "musculo_control.commands.operating_point",
    "musculo_control.commands.reliability",
    "musculo_control.commands.graph",
    "musculo_control.commands.calibrate",
    "musculo_control.commands.record_mapping",
    "musculo_control.commands.learn_mapping",
    "musculo_control.commands.mapping_from_bag",
    "musculo_control.commands.mapping_accuracy",
    "musculo_control.commands.identify",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="musculo",
        description="Biomimetic operational space control for tendon-driven arms (ROS-free tools).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(name).add_parser(sub)
    return parser


#: A value that starts with a minus sign: a negative number or a list of numbers.
_NEGATIVE_VALUE = re.compile(r"^-\.?\d[\d.eE+-]*(,\s*[-+]?\.?\d[\d.eE+-]*)*$")


def join_negative_values(argv: Sequence[str]) -> list[str]:
    """``['--q', '-0.43,0.48']`` -> ``['--q=-0.43,0.48']``: argparse takes a list that starts
    with a minus sign for an option; joined with '=' it is the option's value."""
    out: list[str] = []
    for token in argv:
        if (out and out[-1].startswith("--") and "=" not in out[-1]
                and _NEGATIVE_VALUE.match(token)):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def _show_config_warnings(command: str) -> None:
    """Print a :class:`ConfigWarning` as ``musculo CMD: warning: file: key: ...``, without the
    Python source line the default warning format adds (the file and key say where)."""
    default = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if isinstance(message, ConfigWarning):
            print(f"musculo {command}: warning: {message}", file=file or sys.stderr)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(join_negative_values(sys.argv[1:] if argv is None else argv))
    _show_config_warnings(args.command)
    try:
        return int(args.func(args) or 0)
    except MusculoError as exc:
        print(f"musculo {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file the command needed could not be read or written
        where = f" {exc.filename}" if exc.filename else ""
        print(f"musculo {args.command}: error:{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"musculo {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
