"""Benchmark of the 125 Hz control tick; the same as ``musculo bench`` (see its help)."""

from __future__ import annotations

import sys

from musculo_control.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
