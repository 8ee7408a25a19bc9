"""The ``musculo`` command: model report, simulated experiments, benchmarks.

Each subcommand lives in its own module under :mod:`musculo_control.commands` and registers
itself through an ``add_parser(subparsers)`` function listed in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from musculo_control.errors import MusculoError

#: Modules that each provide ``add_parser(subparsers)``; the parser's ``func`` runs the command.
COMMANDS = (
    "musculo_control.commands.model_report",
    "musculo_control.commands.bench",
    "musculo_control.commands.simulate",
    "musculo_control.commands.report",
    "musculo_control.commands.sweep",
    "musculo_control.commands.operating_point",
    "musculo_control.commands.reliability",
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except MusculoError as exc:
        print(f"musculo {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
