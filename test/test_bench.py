"""``musculo bench`` and the benchmarks run end to end and write their reports; the verdicts
depend on the machine's load, never on a wall-clock assertion here."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from musculo_control.cli import main
from musculo_control.control.controller_config import load_controller_config
from musculo_control.control.qp_config import SOLVERS, choose_solver
from musculo_control.tick_benchmark.config import BenchConfig
from musculo_control.tick_benchmark.measure import MachineLoad, summary_ms

ROOT = Path(__file__).resolve().parent.parent


def test_bench_writes_csv_markdown_and_json(tmp_path, config_dir, monkeypatch):
    import musculo_control.commands.bench as bench

    # small synthetic arms: the scaling loop runs, quickly
    small = BenchConfig(scaling_arms=((30, 7), (40, 10)))
    monkeypatch.setattr(bench, "load_bench_config", lambda _: small)
    out = tmp_path / "bench"
    json_path = tmp_path / "summary.json"
    page = tmp_path / "performance.md"
    page.write_text("# Page\n\nbefore\n<!-- bench:begin: old -->\nold figures\n"
                    "<!-- bench:end -->\nafter\n")
    code = main(["bench", "--config", str(config_dir), "--ticks", "30", "--baseline-ticks", "10",
                 "--scaling-ticks", "10", "--out", str(out), "--json", str(json_path),
                 "--page", str(page)])
    assert code == 0
    # the page's block is the report, with the command that reproduces it and its date
    text = page.read_text()
    assert text.startswith("# Page\n\nbefore\n<!-- bench:begin") and text.endswith(
        "<!-- bench:end -->\nafter\n")
    assert "old figures" not in text and "# Control tick benchmark" not in text
    assert (f"with `musculo bench --config {config_dir} --ticks 30 --baseline-ticks 10 "
            f"--scaling-ticks 10 --page {page}`") in text
    assert re.search(r"Measured on \d{4}-\d{2}-\d{2} with", text)
    assert "| target | bound | measured | verdict |" in text
    result = json.loads(json_path.read_text())
    for key in ("tick_p50_ms", "tick_p99_ms", "tick_max_ms", "baseline_tick_p50_ms",
                "speedup_vs_baseline", "snapshot_p99_ms", "fused_p99_ms"):
        assert result[key] > 0
    # auto picks per arm (controller.yaml solver_choice), first; every solver runs on every arm
    shipped = load_controller_config(config_dir)
    expected = []
    for m, n in small.scaling_arms:
        picked = choose_solver("eq11", m, n, 0, shipped.qp.k, shipped.solver_choice)
        expected += [(m, n, picked, True)] + [(m, n, s, False) for s in SOLVERS if s != picked]
    assert [(s["muscles"], s["joints"], s["solver"], s["configured"])
            for s in result["scaling"]] == expected
    assert all(s["max_ms"] >= s["p99_ms"] >= s["p50_ms"] > 0
               for s in result["scaling"] + result["scaling_snapshot"])
    assert [(s["muscles"], s["joints"]) for s in result["scaling_snapshot"]] == [(30, 7),
                                                                                 (40, 10)]
    assert result["configured_solver"] == "auto" and result["solver"] == "daqp"
    assert result["failures"] == 0
    # the baselines and both solvers solved the same problems as the controller
    assert result["baseline_max_activation_difference"] < 0.25
    assert result["solver_max_activation_difference"] < 1e-6
    machine = result["machine"]
    assert machine["load_average_start"] >= 0 and machine["load_average_end"] >= 0
    assert {v["verdict"].split(":")[0] for v in result["verdicts"]} <= {
        "met", "NOT met", "not judged"}
    assert (result["muscles"], result["joints"]) == (15, 7)  # the stand-in's controlled muscles
    assert result["verdicts"][0]["target"] == "15-muscle tick p50"
    if not machine["judged"]:
        assert all(v["verdict"].startswith("not judged: load average")
                   for v in result["verdicts"])
    rows = list(csv.DictReader((out / "bench_tick.csv").open()))
    assert len(rows) == 7 + 2 * 4 and {"case", "p50_ms", "p99_ms", "max_ms"} <= set(rows[0])
    text = (out / "bench_tick.md").read_text()
    assert "| target | bound | measured | verdict |" in text and "load average" in text
    # the same rows regrouped by arm: each solver's tick, auto's pick and the snapshot
    assert "| arm (muscles / joints) | daqp | osqp | dual_newton | auto picks | snapshot |" in text
    by_arm = [line for line in text.splitlines() if re.match(r"\| \d+ / \d+ \|", line)]
    assert [line.split(" | ")[0] for line in by_arm] == ["| 15 / 7", "| 30 / 7", "| 40 / 10"]
    assert by_arm[0].split(" | ")[4] == "daqp"


@pytest.mark.parametrize("ticks", ["0", "-3", "many"])
def test_bench_refuses_a_tick_count_below_one(ticks, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--ticks", ticks])
    assert exc.value.code == 2
    assert "--ticks: expected a whole number >= 1" in capsys.readouterr().err


def test_a_busy_machine_gets_no_verdict(monkeypatch):
    loads = iter([2.4, 2.6])
    monkeypatch.setattr("musculo_control.tick_benchmark.measure.load_average", lambda: next(loads))
    busy = MachineLoad(0.5)
    busy.finish()
    assert not busy.judged
    assert busy.verdict(True) == busy.verdict(False) == "not judged: load average 2.4"
    loads = iter([0.1, 1.3])  # the benchmark's own process raised the average: still quiet
    quiet = MachineLoad(0.5)
    quiet.finish()
    assert quiet.judged and quiet.verdict(True) == "met" and quiet.verdict(False) == "NOT met"
    loads = iter([0.1, 2.0])  # something else started during the run
    late = MachineLoad(0.5)
    late.finish()
    assert late.verdict(True) == "not judged: load average 2.0"


def test_summary_of_no_samples_is_an_error():
    with pytest.raises(ValueError, match="no samples"):
        summary_ms([])
    stats = summary_ms([0.001, 0.002, 0.003])
    assert stats["p50_ms"] == pytest.approx(2.0) and stats["max_ms"] == pytest.approx(3.0)


def test_dynamics_benchmark_runs_and_reports(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_dynamics.py"),
                           "--count", "20", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "load average" in proc.stdout and "faster than the PerPointJacobian baseline" in proc.stdout
    summary = json.loads((tmp_path / "bench_dynamics.json").read_text())
    assert summary["snapshot_p99_ms"] > 0 and summary["machine"]["cpus"] >= 1


def test_baseline_without_qpsolvers_solves_the_same_problem(monkeypatch, robot, config_dir,
                                                             estimator):
    """The fallback baseline (fresh osqp set-up, no qpsolvers) agrees with the controller."""
    import numpy as np

    from musculo_control.control.controller import OSCController
    from musculo_control.control.controller_config import load_controller_config
    from musculo_control.tick_benchmark.fresh_qp import CondensedFreshQP
    from musculo_control.tick_benchmark.tick import trajectory_ticks

    monkeypatch.setitem(sys.modules, "qpsolvers", None)  # import now raises ImportError
    # eq. 11 as the paper states it, the problem the baseline solves (no per-tick tau_null bounds)
    config = load_controller_config(config_dir)
    config = dataclasses.replace(config, qp=dataclasses.replace(config.qp, nullspace_step_rad=None))
    ours = OSCController(robot, config)
    theirs = OSCController(robot, config)
    theirs.qp = CondensedFreshQP(theirs.qp.structure, config.osqp)
    assert "qpsolvers not installed" in theirs.qp.method
    for tick in trajectory_ticks(robot, estimator, 20, seed=3):
        a, b = ours.tick(*tick), theirs.tick(*tick)
        assert a.ok and b.ok
        assert np.abs(a.activations - b.activations).max() < 0.1


def test_bench_config_is_checked(config_dir):
    from musculo_control.config.parser import parse
    from musculo_control.errors import ConfigError
    from musculo_control.tick_benchmark.config import load_bench_config

    shipped = load_bench_config(config_dir)
    assert (300, 40) in shipped.scaling_arms and shipped.targets.tick_p99_ms == 0.25
    with pytest.raises(ConfigError, match=r"bench.yaml: scaling_arms\[0\]"):
        parse(BenchConfig, {"scaling_arms": [[10, 7]]}, "bench.yaml")
    with pytest.raises(ConfigError, match="bench.yaml: ticks"):
        parse(BenchConfig, {"ticks": 0}, "bench.yaml")
    assert shipped.targets.node_cpu_share.tendon_driver_node == 0.10
    assert (shipped.targets.controller_cpu_share, shipped.targets.driver_node_rss_mb) == \
        (0.35, 80.0)
    with pytest.raises(ConfigError, match="targets.node_cpu_share.dynamics_node"):
        parse(BenchConfig, {"targets": {"node_cpu_share": {"dynamics_node": -1}}}, "bench.yaml")
    with pytest.raises(ConfigError, match="node_cpu_share"):
        parse(BenchConfig, {"targets": {"node_cpu_share": {"mock_node": 0.1}}}, "bench.yaml")


def test_the_tick_verdicts_name_the_benchmarked_robots_muscle_count(monkeypatch):
    """A 6-muscle arm's rows say 6, not the stand-in's 15."""
    from musculo_control.tick_benchmark.tick import verdicts

    monkeypatch.setattr("musculo_control.tick_benchmark.measure.load_average", lambda: 0.0)
    machine = MachineLoad(0.5)
    machine.finish()
    result = {"muscles": 6, "tick_p50_ms": 0.1, "tick_p99_ms": 0.2, "speedup_vs_baseline": 20.0,
              "snapshot_p99_ms": 0.1, "fused_p99_ms": 0.3, "scaling": [], "solver": "daqp"}
    targets = [v["target"] for v in verdicts(result, BenchConfig(), machine)]
    assert targets[:2] == ["6-muscle tick p50", "6-muscle tick p99"]
