"""What a study found: min / median / max of every metric per condition
(:func:`summarise`), the robustness table of the results page, and the plot (the records come from
:func:`musculo_control.sim.study_runs.run_study`)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from musculo_control.sim.results import fmt


#: The package's own folder: its source files make the code fingerprint.
def _values(record: dict[str, Any], metric: str) -> list[float]:
    """A record's value(s) of ``metric`` (one per start pose for the trajectory)."""
    value = record["metrics"].get(metric)
    items = value.values() if isinstance(value, dict) else [value]
    return [float(v) for v in items if isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(float(v))]


def throughput(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs per hour per core, per experiment: from each run's measured CPU time (``cpu_s``,
    set-up included; records cached before it was measured are left out). A row: experiment,
    runs, median CPU seconds per run, runs per hour per core (3600 s over the mean CPU time per
    run) and simulated seconds per CPU second."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if isinstance(r.get("cpu_s"), (int, float)) and r["cpu_s"] > 0.0:
            groups.setdefault(r["experiment"], []).append(r)
    rows = []
    for exp, recs in groups.items():
        cpu = [float(r["cpu_s"]) for r in recs]
        rows.append({"experiment": exp, "runs": len(recs),
                     "cpu_s_per_run": statistics.median(cpu),
                     "runs_per_hour_per_core": 3600.0 * len(cpu) / sum(cpu),
                     "simulated_s_per_cpu_s": sum(float(r["simulated_s"]) for r in recs)
                     / sum(cpu)})
    return rows


def throughput_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """:func:`throughput` as a Markdown table."""
    out = ["| experiment | runs measured | CPU s per run (median) | runs per hour per core | "
           "x real time per core |", "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['experiment']} | {r['runs']} | {r['cpu_s_per_run']:.2f} | "
                   f"{r['runs_per_hour_per_core']:.0f} | {r['simulated_s_per_cpu_s']:.1f} |")
    return out


def summarise(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (experiment, controller, condition, metric): n, min, median, max over the
    seeds (and start poses), and how many runs met their row's targets."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["experiment"], r["controller"], r["condition"]), []).append(r)
    rows = []
    for (exp, ctrl, cond), recs in groups.items():
        metrics = sorted({m for r in recs for m in r["metrics"]})
        met = sum(1 for r in recs if r["verdict"]["status"] == "met")
        targeted = sum(1 for r in recs if r["verdict"]["status"] != "no target")
        for metric in metrics:
            vals = [v for r in recs for v in _values(r, metric)]
            if not vals:
                continue
            rows.append({"experiment": exp, "controller": ctrl, "condition": cond,
                         "metric": metric, "n": len(vals), "min": min(vals),
                         "median": statistics.median(vals), "max": max(vals),
                         "runs": len(recs), "runs_met": met, "runs_targeted": targeted})
    return rows


def _cell(values: list[float], metric: str) -> str:
    """min / median / max of ``values`` in the metric's unit, the unit written once."""
    if not values:
        return "n/a"
    shown = [fmt(metric, v) for v in (min(values), statistics.median(values), max(values))]
    unit = shown[0].rpartition(" ")[2] if " " in shown[0] else ""
    if unit and all(s.endswith(" " + unit) for s in shown):
        return " / ".join(s[:-len(unit) - 1] for s in shown) + f" {unit}"
    return " / ".join(shown)


def robustness_table(records: Sequence[dict[str, Any]], conditions: Sequence[str],
                     targets: Sequence[Any]) -> list[str]:
    """The robustness table: one row per target (experiment, controller, metric), one column per
    condition, each cell min / median / max over its runs (seeds and start poses) and how many
    runs met the target; **bold** where a run missed that target or did not count (start pose
    not held, contact lost, minimum tension)."""
    header = ["experiment (controller): metric", *conditions, "target"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for t in targets:
        recs = [r for r in records if r["experiment"] == t.experiment
                and r["controller"] == t.controller]
        if not recs:
            continue
        cells = []
        for cond in conditions:
            mine = [r for r in recs if r["condition"] == cond]
            if not mine:
                cells.append("")
                continue
            values = [v for r in mine for v in _values(r, t.metric)]
            missed = sum(1 for r in mine if r["verdict"]["problems"] or not all(
                c["met"] for c in r["verdict"]["checks"] if c["metric"] == t.metric))
            text = _cell(values, t.metric)
            met = f"({len(mine) - missed}/{len(mine)} met)"
            cells.append(f"**{text}** {met}" if missed else f"{text} {met}")
        label = f"{t.experiment} (`{t.controller}`): {t.metric}"
        bound = f"{'<' if t.below is not None else '>'} " + fmt(
            t.metric, t.below if t.below is not None else t.above)
        source = t.source.replace("|", "\\|")  # a norm ||a|| would split the cell
        lines.append("| " + " | ".join([label, *cells, f"{bound} ({source})"]) + " |")
    return lines


def summary_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Every metric: min / median / max per condition (Markdown)."""
    lines = ["| experiment | controller | condition | metric | runs met | min | median | max |",
             "|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["experiment"], r["controller"], r["metric"],
                                         r["condition"])):
        met = f"{r['runs_met']}/{r['runs']}" if r["runs_targeted"] else "-"
        lines.append(f"| {r['experiment']} | `{r['controller']}` | {r['condition']} | "
                     f"{r['metric']} | {met} | {fmt(r['metric'], r['min'])} | "
                     f"{fmt(r['metric'], r['median'])} | {fmt(r['metric'], r['max'])} |")
    return lines


def plot_study(records: Sequence[dict[str, Any]], conditions: Sequence[str],
               targets: Sequence[Any], folder: Path, stem: str) -> list[Path]:
    """One figure per experiment: a panel per targeted metric, every run a dot per condition
    (start poses side by side), the target dotted. Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    for exp in sorted({r["experiment"] for r in records}):
        mine = [t for t in targets if t.experiment == exp
                and any(r["experiment"] == exp and r["controller"] == t.controller
                        for r in records)]
        if not mine:
            continue
        fig, axes = plt.subplots(1, len(mine), figsize=(4.2 * len(mine), 3.6), squeeze=False)
        for ax, t in zip(axes[0], mine):
            scale, unit = (100.0, "cm") if t.metric.endswith("_m") else (
                (100.0, "%") if "fraction" in t.metric else (1.0, ""))
            for x, cond in enumerate(conditions):
                recs = [r for r in records if r["experiment"] == exp and r["condition"] == cond
                        and r["controller"] == t.controller]
                for r in recs:
                    value = r["metrics"].get(t.metric)
                    items = list(value.items()) if isinstance(value, dict) else [("", value)]
                    for k, (_pose, v) in enumerate(items):
                        if isinstance(v, (int, float)) and math.isfinite(float(v)):
                            bad = bool(r["verdict"]["problems"]) or not all(
                                c["met"] for c in r["verdict"]["checks"]
                                if c["metric"] == t.metric)
                            ax.plot(x + 0.12 * (k - (len(items) - 1) / 2), scale * float(v),
                                    "x" if bad else "o", color="tab:red" if bad else "tab:blue",
                                    alpha=0.7)
            bound = t.below if t.below is not None else t.above
            ax.axhline(scale * bound, ls=":", color="k", label=f"target {t.bound}")
            ax.set_xticks(range(len(conditions)))
            ax.set_xticklabels(conditions, rotation=20, ha="right", fontsize=7)
            ax.set_ylabel(f"{t.metric} [{unit}]" if unit else t.metric, fontsize=8)
            ax.set_title(f"{exp} / {t.controller}", fontsize=9)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = folder / f"{stem}_{exp}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        out.append(path)
    return out
