"""How far ``musculo report``'s metrics move when only the floating-point kernels change.

The closed loop is deterministic on one machine, but the experiments are sensitive at machine
precision (the nullspace run and trajectory C move by tens of percent when every activation is
scaled by 1 + 1e-14): another CPU, BLAS kernel or thread count gives other figures from the same
seed. This script measures that spread, so that the results test can allow what a healthy
machine may differ by and no more.

It runs ``musculo report`` once per *variant* (an environment: OpenBLAS kernel, OpenBLAS
threads, NumPy's SIMD dispatch) in a fresh process, prints which BLAS and which kernel each
process actually ran (the OpenBLAS core name, asked from the loaded library), and compares
every metric with the first variant's and with the committed ``doc/results.json``:

- per experiment (per start pose for the trajectory), the largest relative difference of any
  metric, |a - b| / max(|b|, floor), with a floor per unit so that a metric near zero (a final
  force of 0.0 N) does not turn a 1e-4 N change into an infinite ratio;
- whether every verdict (met / missed / no target, and which checks failed) is the same.

    python benchmarks/results_spread.py [--out DIR] [--variants default,haswell,...]
                                        [--python NAME=INTERPRETER ...]
                                        [--page doc/results/reproducibility.md]
    python benchmarks/results_spread.py --render out/spread/spread.json --page PAGE

Writes ``spread.json`` and ``spread.md`` into ``--out`` (default ``out/spread``); with ``--page``
also the generated block of that documentation page (between ``<!-- spread:begin`` and
``<!-- spread:end -->``), with the date and the command. ``--render`` writes the page from a
``spread.json`` of an earlier run instead of running. ``--python NAME=INTERPRETER`` adds a
variant run by another interpreter: a virtual environment with this package installed
(``pip install -e .``) beside other builds of NumPy and SciPy, hence other BLAS libraries and
other SIMD loops. Each variant takes as long as ``make run`` (a minute or two on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

#: Environments to compare. OPENBLAS_CORETYPE forces one of the kernels a DYNAMIC_ARCH OpenBLAS
#: (NumPy's and SciPy's wheels) ships; NPY_DISABLE_CPU_FEATURES turns off NumPy's own SIMD
#: paths for element-wise functions (its AVX512 / AVX2 loops may round differently).
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "threads-1": {"OPENBLAS_NUM_THREADS": "1"},
    "threads-2": {"OPENBLAS_NUM_THREADS": "2"},
    "haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "sandybridge": {"OPENBLAS_CORETYPE": "SandyBridge"},
    "nehalem": {"OPENBLAS_CORETYPE": "Nehalem"},
    "prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "core2": {"OPENBLAS_CORETYPE": "Core2"},
    # NumPy >= 2.4 names its dispatch targets X86_V3 (AVX2, FMA3), X86_V4 (AVX512) and
    # AVX512_ICL: without them its loops run the X86_V2 (SSE4.2) baseline
    "numpy-sse42": {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL"},
}

#: What a process reports about its floating-point libraries (run in each variant's env).
PROBE = r"""
import ctypes, json, numpy
libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'openblas' in l.lower()
               and l.split()[-1].startswith('/')})
core = None
for path in libs:
    lib = ctypes.CDLL(path)
    for name in ('openblas_get_corename', 'openblas_get_corename64_',
                 'scipy_openblas_get_corename64_', 'scipy_openblas_get_corename'):
        f = getattr(lib, name, None)
        if f is not None:
            f.restype = ctypes.c_char_p
            core = f().decode()
            break
cfg = numpy.show_config(mode='dicts')
blas = cfg['Build Dependencies']['blas']
simd = cfg['SIMD Extensions']
print(json.dumps({'numpy': numpy.__version__, 'blas': f"{blas['name']} {blas['version']}",
                  'openblas_core': core, 'openblas_libs': libs,
                  'simd_found': simd.get('found', []),
                  'simd_not_found': simd.get('not found', [])}))
"""

#: Relative differences are taken against max(|reference|, floor): the floor is a difference
#: too small to matter in that unit (0.1 mm, 0.01 N, 0.1 %-point, 1 ms, 1e-3 of ||a||).
FLOORS = {"_m": 1e-4, "_N": 1e-2, "fraction": 1e-3, "_s": 1e-3, "_rad": 1e-4}


def floor(metric: str) -> float:
    for suffix, value in FLOORS.items():
        if suffix in metric:
            return value
    return 1e-3


def leaves(doc: Mapping[str, Any]) -> Iterator[tuple[str, str, str, str, float]]:
    """(experiment, controller, pose, metric, value) of every numeric metric."""
    for exp, by_ctrl in doc["experiments"].items():
        for ctrl, entry in by_ctrl.items():
            for metric, value in entry["metrics"].items():
                items = value.items() if isinstance(value, dict) else [("", value)]
                for pose, v in items:
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        yield exp, ctrl, pose, metric, float(v)


def spread(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Largest relative difference per experiment[/pose] (and where), and verdict changes."""
    ref = {(e, c, p, m): v for e, c, p, m, v in leaves(b)}
    worst: dict[str, dict[str, Any]] = {}
    for e, c, p, m, v in leaves(a):
        w = ref.get((e, c, p, m))
        if w is None or not (math.isfinite(v) and math.isfinite(w)):
            continue
        rel = abs(v - w) / max(abs(w), floor(m))
        key = f"{e}/{p}" if p else e
        if rel > worst.get(key, {"rel": -1.0})["rel"]:
            worst[key] = {"rel": rel, "controller": c, "metric": m, "value": v, "reference": w}
    verdicts = []
    for exp, by_ctrl in a["experiments"].items():
        for ctrl, entry in by_ctrl.items():
            other = b["experiments"].get(exp, {}).get(ctrl)
            if other is None or _verdict_key(entry["verdict"]) != _verdict_key(other["verdict"]):
                verdicts.append(f"{exp}/{ctrl}")
    return {"worst": worst, "verdicts_changed": verdicts}


def _verdict_key(v: Mapping[str, Any]) -> tuple[Any, ...]:
    return (v["status"], tuple((c["metric"], c["met"]) for c in v["checks"]),
            len(v["problems"]))


def run_variant(name: str, env_changes: Mapping[str, str], out: Path,
                overrides: list[str], python: str = sys.executable) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "NPY_DISABLE_CPU_FEATURES")}
    env.update(env_changes)
    probe = json.loads(subprocess.run([python, "-c", PROBE], env=env, check=True,
                                      capture_output=True, text=True).stdout)
    folder = out / name
    cmd = [python, "-m", "musculo_control.cli", "report", "--out", str(folder)]
    for item in overrides:
        cmd += ["--set", item]
    start = time.monotonic()
    subprocess.run(cmd, env=env, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    results = json.loads((folder / "results.json").read_text())
    return {"env": dict(env_changes), "python": python, "probe": probe,
            "wall_s": time.monotonic() - start, "results": results}


BEGIN = ("<!-- spread:begin: generated by `python benchmarks/results_spread.py --page "
         "doc/results/reproducibility.md`; do not edit -->")
END = "<!-- spread:end -->"


def page_block(report: Mapping[str, Any]) -> str:
    """The generated block of the reproducibility page: command, date, machine, table."""
    variants = report["variants"]
    first = next(iter(variants.values()))["probe"]
    lines = [BEGIN,
             f"Measured on {report['date']} with `{report['command']}` (NumPy {first['numpy']}, "
             f"{first['blas']}; CPU features NumPy found: {', '.join(first['simd_found'])}). "
             "Each cell: the largest relative difference of any metric of that experiment "
             "(any controller) from the committed `doc/results.json`, "
             "|a - b| / max(|b|, floor); each variant is the environment below, and the BLAS "
             "core is the kernel the loaded OpenBLAS reported.", "",
             "| variant | environment |", "|---|---|"]
    main_python = next(iter(variants.values())).get("python")
    for name, v in variants.items():
        env = " ".join(f"`{k}={val}`" for k, val in v["env"].items())
        if v.get("python") != main_python:
            env = " ".join([f"another Python environment: NumPy {v['probe']['numpy']}, "
                            f"{v['probe']['blas']}", env]).strip()
        lines.append(f"| {name} | {env or '(none)'} |")
    lines += ["", *markdown(variants), END]
    return "\n".join(lines)


def write_page(page: Path, report: Mapping[str, Any]) -> None:
    text = page.read_text(encoding="utf-8")
    start, stop = text.find(BEGIN.split(":")[0]), text.find(END)
    if start < 0 or stop < start:
        raise SystemExit(f"{page}: no '<!-- spread:begin' ... '{END}' block")
    page.write_text(text[:start] + page_block(report) + text[stop + len(END):],
                    encoding="utf-8")


def markdown(variants: Mapping[str, Any]) -> list[str]:
    keys = sorted({k for v in variants.values() for k in v["vs_committed"]["worst"]})
    lines = ["| variant | BLAS core | " + " | ".join(keys) + " | verdicts changed |",
             "|---|---|" + "---|" * len(keys) + "---|"]
    for name, v in variants.items():
        worst = v["vs_committed"]["worst"]
        cells = [f"{100 * worst[k]['rel']:.3g} %" if k in worst else "" for k in keys]
        changed = ", ".join(v["vs_committed"]["verdicts_changed"]) or "none"
        lines.append(f"| {name} | {v['probe']['openblas_core']} | " + " | ".join(cells)
                     + f" | {changed} |")
    total = {k: max(v["vs_committed"]["worst"].get(k, {"rel": 0.0})["rel"]
                    for v in variants.values()) for k in keys}
    lines.append("| **max** | | " + " | ".join(f"**{100 * total[k]:.3g} %**" for k in keys)
                 + " | |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("out/spread"))
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help=f"comma-separated, of {list(VARIANTS)}")
    p.add_argument("--python", action="append", default=[], metavar="NAME=INTERPRETER",
                   help="a variant run by another Python (another NumPy / SciPy / BLAS build)")
    p.add_argument("--committed", type=Path, default=REPO / "doc" / "results.json")
    p.add_argument("--page", type=Path, default=None,
                   help="rewrite this documentation page's spread block")
    p.add_argument("--render", type=Path, default=None,
                   help="a spread.json of an earlier run: write --page from it, run nothing")
    args = p.parse_args(argv)
    if args.render is not None:
        if args.page is None:
            p.error("--render needs --page")
        write_page(args.page, json.loads(args.render.read_text()))
        return 0
    committed = json.loads(args.committed.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    runs: list[tuple[str, dict[str, str], str]] = []
    for name in filter(None, args.variants.split(",")):
        if name not in VARIANTS:
            p.error(f"--variants: unknown variant {name!r}; known: {list(VARIANTS)}")
        runs.append((name, VARIANTS[name], sys.executable))
    for item in args.python:
        name, sep, python = item.partition("=")
        if not sep or not name or not Path(python).is_file():
            p.error(f"--python: expected NAME=INTERPRETER with an existing interpreter, "
                    f"received {item!r}")
        runs.append((name, {}, python))
    variants: dict[str, Any] = {}
    for name, env_changes, python in runs:
        v = run_variant(name, env_changes, args.out, list(committed["overrides"]), python)
        v["vs_committed"] = spread(v["results"], committed)
        first = next(iter(variants.values()), v)
        v["vs_first"] = spread(v["results"], first["results"])
        variants[name] = v
        print(f"{name}: core {v['probe']['openblas_core']}, {v['wall_s']:.0f} s; largest "
              f"difference from doc/results.json " + ", ".join(
                  f"{k} {100 * w['rel']:.3g} %" for k, w in sorted(
                      v["vs_committed"]["worst"].items())), flush=True)
        report = {"command": " ".join(["python", "benchmarks/results_spread.py",
                                       *(argv if argv is not None else sys.argv[1:])]),
                  "date": time.strftime("%Y-%m-%d"),
                  "variants": {k: {kk: vv for kk, vv in x.items() if kk != "results"}
                               for k, x in variants.items()}}
        (args.out / "spread.json").write_text(json.dumps(report, indent=1))
    (args.out / "spread.md").write_text("\n".join(markdown(variants)) + "\n")
    print("\n".join(markdown(variants)))
    if args.page is not None:
        write_page(args.page, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
