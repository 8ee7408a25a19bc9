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
