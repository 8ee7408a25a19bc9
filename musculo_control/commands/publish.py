"""``musculo publish``: put a report's results into the repository (``make run`` calls it).

Copies ``<report>/results.json`` to ``doc/results.json`` and the figures it lists to
``doc/figures/``, and regenerates the results block (between the ``results:begin`` and
``results:end`` markers) of the documentation page ``doc/results/example_run.md`` from that
file, with the date of publication. Everything is checked before anything is written.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_dir, writable_file
from musculo_control.errors import InputError
from musculo_control.sim.results import dumps, load_results, replace_block, results_block

#: The documentation page that shows one seed's results (an example run)
DEFAULT_PAGE = Path("doc/results/example_run.md")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("publish", help="copy a report's results and figures into the repository "
                                       "and regenerate the example-run page's results table",
                       description="Run from the repository's root after `musculo report`.")
    p.add_argument("report", type=Path, nargs="?", default=Path("out"),
                   help="the folder musculo report wrote (default: out)")
    p.add_argument("--page", "--readme", dest="page", type=Path, default=DEFAULT_PAGE,
                   help=f"the Markdown page whose results block is rewritten (default: "
                        f"{DEFAULT_PAGE})")
    p.add_argument("--results", type=Path, default=Path("doc/results.json"))
    p.add_argument("--figures", type=Path, default=Path("doc/figures"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    doc = load_results(args.report / "results.json")
    missing = [f for f in doc["figures"] if not (args.report / f).is_file()]
    if missing:
        raise InputError(str(args.report), "the figures results.json lists", f"missing {missing}")
    try:
        page = args.page.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError("--page", "a readable Markdown page", f"{args.page}: {exc.strerror}") \
            from exc
    rel = Path(os.path.relpath(args.figures, args.page.parent or Path("."))).as_posix()
    today = datetime.date.today().isoformat()
    text = replace_block(page, results_block(doc, rel, today), str(args.page))
    writable_file(args.results, "--results")
    writable_dir(args.figures, "--figures")
    writable_file(args.page, "--page")
    args.results.write_text(dumps(doc))
    for name in doc["figures"]:
        shutil.copyfile(args.report / name, args.figures / name)
    args.page.write_text(text, encoding="utf-8")
    print(f"wrote {args.results}, {len(doc['figures'])} figures to {args.figures} and the results "
          f"block of {args.page}")
    return 0
