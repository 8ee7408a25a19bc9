"""``musculo sweep``: one experiment over a grid of config values (such as the weights k and r)."""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
from pathlib import Path
from typing import Any

from musculo_control.commands.checks import writable_dir
from musculo_control.commands.options import add_common, override_items
from musculo_control.config.parser import parse_value
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.errors import InputError
from musculo_control.paths import default_config_dir
from musculo_control.sim.experiments import metrics_json, run_experiment
from musculo_control.sim.setup import EXPERIMENT_NAMES, Overrides, load_setup


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "sweep", help="run an experiment over a grid of config values",
        description="Example: musculo sweep nullspace --param controller.qp.r=0.01,0.1,1 "
                    "--param controller.qp.k=0.003,0.01,0.03 --controller osc")
    p.add_argument("experiment", choices=EXPERIMENT_NAMES)
    p.add_argument("--param", action="append", required=True, metavar="FILE.KEY=V1,V2,...",
                   help="a config key and its values (repeat for a grid)")
    p.add_argument("--controller", choices=CONTROLLER_NAMES, default="osc")
    p.add_argument("--out", type=Path, default=Path("out/sweep"))
    add_common(p)
    p.set_defaults(func=run)


def parse_params(items: list[str], option: str = "--param") -> list[tuple[str, list[Any]]]:
    """'controller.qp.r=0.01,0.1' -> [('controller.qp.r', [0.01, 0.1])]."""
    out = []
    for item in items:
        key, sep, values = item.partition("=")
        parsed = [parse_value(v, f"{option} {key.strip()}") for v in _split_values(values)
                  if v.strip()]
        if not sep or not key or not parsed:
            raise InputError(option, "FILE.KEY=V1,V2,... e.g. controller.qp.r=0.01,0.1", item)
        out.append((key.strip(), parsed))
    return out


def _split_values(text: str) -> list[str]:
    """'0.1,[1, 2],3' -> ['0.1', '[1, 2]', '3']: commas inside brackets belong to a list."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "[{"
        depth -= ch in "]}"
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def _text(value: Any) -> str:
    """A parsed value back as YAML text for an override (a list keeps its brackets)."""
    import json

    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def _scalar_metrics(m: dict[str, Any]) -> dict[str, float]:
    flat: dict[str, float] = {}
    for key, value in m.items():
        if isinstance(value, dict):
            for sub, v in value.items():
                flat[f"{key}.{sub}"] = float(v)
        elif isinstance(value, (int, float)):
            flat[key] = float(value)
    return flat


def run(args: argparse.Namespace) -> int:
    params = parse_params(args.param)
    base = override_items(args)
    out: Path = writable_dir(args.out, "--out")
    rows: list[dict[str, Any]] = []
    grid = list(itertools.product(*[values for _, values in params]))
    # every combination's config is loaded and checked before the first run
    setups = [load_setup(args.config or default_config_dir(), Overrides.parse(
        base + [f"{key}={_text(value)}" for (key, _), value in zip(params, combo)]))
        for combo in grid]
    for i, (combo, setup) in enumerate(zip(grid, setups), 1):
        label = ", ".join(f"{key}={value}" for (key, _), value in zip(params, combo))
        print(f"[{i}/{len(grid)}] {args.experiment} / {args.controller}: {label}", flush=True)
        runs = run_experiment(setup, args.experiment, args.controller, progress=False)
        metrics = _scalar_metrics(metrics_json(args.experiment, runs))
        row = {key: value for (key, _), value in zip(params, combo)} | metrics
        rows.append(row)
        print("    " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()), flush=True)
    stem = f"sweep_{args.experiment}_{args.controller}"
    with open(out / f"{stem}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / f"{stem}.json").write_text(json.dumps(rows, indent=2) + "\n")
    png = plot_sweep(rows, [key for key, _ in params], out / f"{stem}.png",
                     f"{args.experiment} / {args.controller}")
    print(f"wrote {out / stem}.csv, .json and {png}")
    return 0


def plot_sweep(rows: list[dict[str, Any]], keys: list[str], path: Path, title: str) -> Path:
    """One panel per metric against the first key; one line per value of the second key."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [k for k in rows[0] if k not in keys and k != "unsafe_ticks"]
    x_key = keys[0]
    series_key = keys[1] if len(keys) > 1 else None
    cols = 2
    nrows = math.ceil(len(metrics) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(10, 3 * nrows), squeeze=False)
    groups = sorted({r[series_key] for r in rows}) if series_key else [None]
    positive = all(isinstance(r[x_key], (int, float)) and r[x_key] > 0 for r in rows)
    for ax, metric in zip(axes.flat, metrics):
        for g in groups:
            sel = [r for r in rows if series_key is None or r[series_key] == g]
            ax.plot([r[x_key] for r in sel], [r[metric] for r in sel], "o-",
                    label=f"{series_key}={g}" if series_key else None)
        ax.set_xlabel(x_key)
        ax.set_ylabel(metric)
        if positive:
            ax.set_xscale("log")
        if series_key:
            ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
