"""``musculo bench`` runs end to end and writes its three reports (no timing is asserted)."""

from __future__ import annotations

import csv
import json

from musculo_control.cli import main


def test_bench_writes_csv_markdown_and_json(tmp_path, config_dir):
    out = tmp_path / "bench"
    json_path = tmp_path / "summary.json"
    code = main(["bench", "--config", str(config_dir), "--ticks", "30", "--baseline-ticks", "10",
                 "--out", str(out), "--json", str(json_path)])
    assert code == 0
    result = json.loads(json_path.read_text())
    for key in ("tick_p50_ms", "tick_p99_ms", "baseline_tick_p50_ms", "speedup_vs_baseline"):
        assert result[key] > 0
    assert [(s["muscles"], s["joints"]) for s in result["scaling"]] == [(30, 7), (60, 14),
                                                                        (120, 28)]
    assert all(s["p99_ms"] >= s["p50_ms"] > 0 for s in result["scaling"])
    assert result["failures"] == 0
    # the baselines solved the same problems as the controller
    assert result["baseline_max_activation_difference"] < 0.25
    rows = list(csv.DictReader((out / "bench_tick.csv").open()))
    assert len(rows) == 6 and {"case", "p50_ms", "p99_ms", "max_ms"} <= set(rows[0])
    assert "| target | measured | verdict |" in (out / "bench_tick.md").read_text()


def test_baseline_without_qpsolvers_solves_the_same_problem(monkeypatch, robot, config_dir,
                                                             estimator):
    """The fallback baseline (fresh osqp set-up, no qpsolvers) agrees with the controller."""
    import sys

    import numpy as np

    from musculo_control.commands.bench import CondensedFreshQP, trajectory_ticks
    from musculo_control.control.controller import OSCController, load_controller_config

    monkeypatch.setitem(sys.modules, "qpsolvers", None)  # import now raises ImportError
    config = load_controller_config(config_dir)
    ours = OSCController(robot, config)
    theirs = OSCController(robot, config)
    theirs.qp = CondensedFreshQP(theirs.qp.structure, config.osqp)
    assert "qpsolvers not installed" in theirs.qp.method
    for tick in trajectory_ticks(robot, estimator, 20, seed=3):
        a, b = ours.tick(*tick), theirs.tick(*tick)
        assert a.ok and b.ok
        assert np.abs(a.activations - b.activations).max() < 0.1
