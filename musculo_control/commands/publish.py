"""``musculo publish``: put a report's results into the repository (``make run`` calls it).

Copies ``<report>/results.json`` to ``doc/results.json`` and the figures it lists to
``doc/figures/``, and regenerates the README's results block (between the ``results:begin`` and
``results:end`` markers) from that file. Everything is checked before anything is written.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_dir, writable_file
from musculo_control.errors import InputError
from musculo_control.sim.results import dumps, load_results, readme_block, replace_block


def add_parser(sub: Any) -> None:
    p = sub.add_parser("publish", help="copy a report's results and figures into the repository "
                                       "and regenerate the README's results table",
                       description="Run from the repository's root after `musculo report`.")
    p.add_argument("report", type=Path, nargs="?", default=Path("out"),
                   help="the folder musculo report wrote (default: out)")
    p.add_argument("--readme", type=Path, default=Path("README.md"))
    p.add_argument("--results", type=Path, default=Path("doc/results.json"))
    p.add_argument("--figures", type=Path, default=Path("doc/figures"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    doc = load_results(args.report / "results.json")
    missing = [f for f in doc["figures"] if not (args.report / f).is_file()]
    if missing:
        raise InputError(str(args.report), "the figures results.json lists", f"missing {missing}")
    try:
        readme = args.readme.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError("--readme", "a readable README", f"{args.readme}: {exc.strerror}") from exc
    rel = Path(os.path.relpath(args.figures, args.readme.parent or Path("."))).as_posix()
    text = replace_block(readme, readme_block(doc, rel), str(args.readme))
    writable_file(args.results, "--results")
    writable_dir(args.figures, "--figures")
    writable_file(args.readme, "--readme")
    args.results.write_text(dumps(doc))
    for name in doc["figures"]:
        shutil.copyfile(args.report / name, args.figures / name)
    args.readme.write_text(text, encoding="utf-8")
    print(f"wrote {args.results}, {len(doc['figures'])} figures to {args.figures} and the results "
          f"block of {args.readme}")
    return 0
