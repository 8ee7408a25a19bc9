"""``musculo study``: experiments x controllers x seeds x config grids, in parallel and cached.

``musculo study NAME`` runs a study of ``experiments.yaml`` ``studies`` (its conditions are the
table's columns); without a name, ``--seeds`` and ``--grid`` make the conditions. Finished runs
are cached under ``--cache`` by a hash of their full parameters (see
:mod:`musculo_control.sim.study_runs`): a study that is interrupted, or run again after a change
to one condition, runs only what is missing. Writes into ``--out``: ``study.md`` (the robustness
table against the targets and min / median / max of every metric per condition), ``study.json``
(every run's record), ``runs.csv`` (one line per run and metric) and one figure per experiment;
``--page`` regenerates that study's block on a documentation page (the results page,
``doc/results/index.md``, holds the shipped studies' blocks).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import names, writable_dir, writable_file
from musculo_control.commands.sweep import parse_params
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.errors import InputError
from musculo_control.paths import default_config_dir
from musculo_control.sim.results import replace_block
from musculo_control.sim.setup import Overrides, load_setup
from musculo_control.sim.study_config import ConditionConfig
from musculo_control.sim.study_runs import (
    Cache,
    DaskEngine,
    Engine,
    LocalEngine,
    ProgressBar,
    SerialEngine,
    expand,
    grid_conditions,
    run_study,
)
from musculo_control.sim.study_summary import (
    plot_study,
    robustness_table,
    summarise,
    summary_table,
    throughput,
    throughput_table,
)

ENGINES = ("local", "dask")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "study", help="experiments x controllers x seeds x config grids, in parallel, cached",
        description="Examples: musculo study robustness  (the results page's robustness "
                    "table; --page doc/results/index.md rewrites it) | musculo study "
                    "--experiments nullspace --seeds 0-2 --grid controller.qp.r=0.03,0.1 "
                    "--workers 2 | musculo study robustness --engine dask --scheduler tcp://host:8786")
    p.add_argument("study", nargs="?", default=None,
                   help="a study of experiments.yaml 'studies' (default: one from the options)")
    p.add_argument("--experiments", default=None, help="comma-separated (default: the study's, "
                                                       "or all the robot sets up)")
    p.add_argument("--controllers", default=None, help="comma-separated (default: the study's, "
                                                       "or osc)")
    p.add_argument("--seeds", default="0", help="without a study: seeds, e.g. 0-5 or 0,2,4")
    p.add_argument("--grid", action="append", default=[], metavar="FILE.KEY=V1,V2,...",
                   help="without a study: a config key and its values; repeat for a grid")
    p.add_argument("--workers", type=int, default=None,
                   help="parallel runs (default: every core; 1: in this process)")
    p.add_argument("--engine", choices=ENGINES, default="local",
                   help="local processes (default) or a Dask cluster (extra 'cluster')")
    p.add_argument("--scheduler", default=None,
                   help="with --engine dask: the scheduler's address (default: a local "
                        "cluster of --workers processes)")
    p.add_argument("--out", type=Path, default=None,
                   help="output folder (default: out/study/<study name or 'grid'>)")
    p.add_argument("--cache", type=Path, default=Path("out/study/cache"),
                   help="finished runs, by the hash of their parameters "
                        "(default: out/study/cache)")
    p.add_argument("--page", "--readme", dest="page", type=Path, default=None,
                   help="rewrite this Markdown page's block of the study (between "
                        "'<!-- study:NAME:begin' and '<!-- study:NAME:end -->')")
    p.add_argument("--figures", type=Path, default=Path("doc/figures"),
                   help="with --page: where the study's figures are copied (default: "
                        "doc/figures)")
    p.add_argument("--config", type=Path, default=None,
                   help="config folder (default: shipped arm)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="FILE.KEY=V",
                   help="an override every run gets (e.g. experiments.nullspace.duration_s=4 "
                        "while exploring); repeatable")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def parse_seeds(text: str) -> list[int]:
    """'0-5' -> [0..5]; '0,2,4' -> [0, 2, 4]."""
    out: list[int] = []
    try:
        for part in text.split(","):
            lo, sep, hi = part.strip().partition("-")
            out += list(range(int(lo), int(hi) + 1)) if sep else [int(lo)]
    except ValueError:
        raise InputError("--seeds", "seeds like 0-5 or 0,2,4", text) from None
    if not out or any(s < 0 for s in out) or len(set(out)) != len(out):
        raise InputError("--seeds", "distinct seeds >= 0, like 0-5 or 0,2,4", text)
    return out


def make_engine(args: argparse.Namespace) -> Engine:
    if args.workers is not None and args.workers < 1:
        raise InputError("--workers", "a number of parallel runs >= 1", args.workers)
    if args.engine == "dask":
        return DaskEngine(args.scheduler, args.workers)
    if args.scheduler:
        raise InputError("--scheduler", "--engine dask with it", args.scheduler)
    if args.workers == 1:
        return SerialEngine()
    return LocalEngine(args.workers)


def run(args: argparse.Namespace) -> int:
    config_dir = (args.config or default_config_dir()).resolve()
    base = load_setup(config_dir, Overrides.parse(args.overrides))  # checks the overrides
    configured = base.experiments.configured()
    study = None
    if args.study is not None:
        studies = {s.name: s for s in base.experiments.studies}
        if args.study not in studies:
            raise InputError("study", f"one of {sorted(studies)} (experiments.yaml 'studies')",
                             args.study)
        study = studies[args.study]
        if args.grid:
            raise InputError("--grid", "no grid with a named study (its conditions are set)",
                             args.grid)
    experiments = (names(args.experiments, configured, "--experiments") if args.experiments
                   else [e for e in (study.experiments if study else configured)
                         if e in configured])
    controllers = (names(args.controllers, CONTROLLER_NAMES, "--controllers")
                   if args.controllers else list(study.controllers if study else ["osc"]))
    conditions: list[ConditionConfig] = (list(study.conditions) if study else grid_conditions(
        parse_params(args.grid, "--grid"), parse_seeds(args.seeds)))
    for cond in conditions:  # every condition's config loads before the first run
        load_setup(config_dir, Overrides.parse([*cond.set, *args.overrides]))
    name = study.name if study else "grid"
    out = writable_dir(args.out or Path("out/study") / name, "--out")
    writable_file(args.page, "--page")
    engine = make_engine(args)
    specs = expand(config_dir, experiments, controllers, conditions, args.overrides)
    workers = args.workers or os.cpu_count()
    print(f"study '{name}': {len(specs)} runs ({len(conditions)} conditions x "
          f"{len(experiments)} experiments x {len(controllers)} controllers x seeds), "
          f"engine {args.engine}" + ("" if args.scheduler else f", {workers} workers"),
          flush=True)
    result = run_study(specs, Cache(args.cache), engine,
                       progress=ProgressBar(name, enabled=not args.quiet))
    records = result.records
    labels = [c.name for c in conditions]
    targets = [t for t in base.experiments.targets
               if t.experiment in experiments and t.controller in controllers]
    rows = summarise(records)
    speed = throughput(records)
    robust = robustness_table(records, labels, targets)
    figures = plot_study(records, labels, targets, out, f"study_{name}")
    extra = f" (every run with {', '.join(f'`--set {o}`' for o in args.overrides)})" \
        if args.overrides else ""
    lines = [f"# Study '{name}'", "", *([study.doc, ""] if study and study.doc else []),
             f"Config `{config_dir.name}`{extra}; {len(records)} runs, {result.executed} "
             f"simulated now, the rest from the cache; {result.wall_s:.0f} s wall.", "",
             "## Against the targets", "", *robust, "",
             "## Runs per hour per core", "",
             "From each run's measured CPU time, its set-up included (runs cached before it was "
             "measured are left out).", "", *throughput_table(speed), "",
             "## Every metric: min / median / max per condition", "", *summary_table(rows), "",
             *[f"![{p.stem}]({p.name})" for p in figures], ""]
    (out / "study.md").write_text("\n".join(lines))
    (out / "study.json").write_text(json.dumps(
        {"study": name, "config": config_dir.name, "overrides": list(args.overrides),
         "conditions": [{"name": c.name, "seeds": list(c.seeds), "set": list(c.set)}
                        for c in conditions],
         "summary": rows, "throughput": speed, "runs": records}, indent=1))
    with open(out / "runs.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["condition", "experiment", "controller", "seed", "pose", "metric",
                         "value", "verdict"])
        for r in records:
            for metric, value in r["metrics"].items():
                items = value.items() if isinstance(value, dict) else [("", value)]
                for pose, v in items:
                    writer.writerow([r["condition"], r["experiment"], r["controller"],
                                     r["seed"], pose, metric, v, r["verdict"]["status"]])
    if args.page is not None:
        publish_block(args.page, name, study.doc if study else "", robust, figures,
                      config_dir.name, args.overrides, args.figures, len(records))
    missed = sum(1 for r in records if r["verdict"]["status"] == "missed")
    print(f"{len(records)} runs ({result.executed} simulated now): "
          f"{sum(1 for r in records if r['verdict']['status'] == 'met')} met every target, "
          f"{missed} missed one")
    for r in speed:
        print(f"{r['experiment']}: {r['runs_per_hour_per_core']:.0f} runs per hour per core "
              f"({r['cpu_s_per_run']:.2f} s CPU per run, median of {r['runs']}; "
              f"{r['simulated_s_per_cpu_s']:.1f}x real time per core)")
    print(f"wrote {out / 'study.md'}, study.json, runs.csv and {len(figures)} figures")
    return 0


def publish_block(page: Path, name: str, doc: str, table: list[str], figures: list[Path],
                  config: str, overrides: list[str], folder: Path, runs: int) -> None:
    """Rewrite the generated block of study ``name`` on a Markdown page (its first line, the
    marker, is kept), with the command, the date and the table; figures copied to ``folder``
    and linked relative to the page."""
    import datetime
    import shutil

    begin = f"<!-- study:{name}:begin: generated by `musculo study {name} --"
    end = f"<!-- study:{name}:end -->"
    text = page.read_text(encoding="utf-8")
    start = text.find(begin)
    if start < 0:
        raise InputError("--page", f"a line starting with {begin!r} and one {end!r}",
                         f"no block in {page}")
    marker = text[start:text.index("\n", start)]
    folder.mkdir(parents=True, exist_ok=True)
    for p in figures:
        shutil.copyfile(p, folder / p.name)
    rel = Path(os.path.relpath(folder, page.parent)).as_posix()
    over = f" with {', '.join(f'`--set {o}`' for o in overrides)}" if overrides else ""
    block = "\n".join([
        marker, f"Run on {datetime.date.today().isoformat()} by `musculo study {name} --page "
                f"{page.as_posix()}` (config `{config}`{over}, {runs} runs): {doc}".rstrip(), "",
        "Each cell: min / median / max over the condition's runs (seeds, and start poses for the "
        "trajectory), then how many runs met the row's target; **bold** where a run missed it "
        "or did not count (start pose not held, gauge contact lost, minimum tension).", "",
        *table, "", *[f"![{p.stem}]({rel}/{p.name})" for p in figures], end])
    page.write_text(replace_block(text, block, str(page), begin=marker, end=end),
                    encoding="utf-8")
