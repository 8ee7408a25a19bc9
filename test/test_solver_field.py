"""The solver field (benchmarks/solver_field.py, benchmarks/bench_solvers.py): every
solver answers the recorded controller QPs as BVLS does, and the benchmark writes its reports.
No timing is asserted."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import solver_field as sb

from musculo_control.control.controller_config import load_controller_config
from musculo_control.tick_benchmark.config import BenchConfig

ROOT = Path(__file__).resolve().parent.parent
#: how close each solver must come to BVLS: the active-set and dual Newton solvers end on the
#: exact answer; the interior-point ones stop at their tolerance, which k = 0.01 turns into
#: activation errors of up to ~sqrt(tolerance / k)
AGREEMENT = {"daqp": 1e-8, "osqp": 1e-6, "dual_newton": 1e-8, "proxqp": 1e-5, "piqp": 1e-2,
             "quadprog": 1e-8, "clarabel": 1e-2}


@pytest.fixture(scope="module")
def config(config_dir):
    return load_controller_config(config_dir)


@pytest.fixture(scope="module")
def sequence(tmp_path_factory, config):
    """15 consecutive QPs of a synthetic 30-muscle / 7-joint arm, with BVLS's answers."""
    qps = sb.record_synthetic(30, 7, config, BenchConfig(warmup_ticks=5), 15,
                              tmp_path_factory.mktemp("arm"))
    return qps, [sb.bvls(qp) for qp in qps]


def test_every_solver_of_the_field_is_installed():
    """The test extra installs the bench extra: no solver of the report may be missing."""
    assert all(sb.installed(s) for s in sb.FIELD), [s for s in sb.FIELD if not sb.installed(s)]


@pytest.mark.parametrize("solver", sb.FIELD)
def test_every_solver_answers_as_bvls_does(sequence, config, solver):
    qps, oracle = sequence
    assert all(qp.formulation == "eq11" and qp.size == (30, 7) for qp in qps)
    row = sb.run_sequence(solver, "synthetic 30 / 7", qps, oracle, 1.0, config)
    assert row["failures"] == 0
    assert float(row["max_activation_difference"]) <= AGREEMENT[solver]
    assert row["qps"] == 15 and row["max_ms"] >= row["p99_ms"] >= row["p50_ms"] > 0
    assert row["warm_start"] == ("yes" if solver in ("daqp", "osqp", "dual_newton", "proxqp")
                                 else "no")


def test_a_wrong_answer_shows_in_the_difference(sequence, config):
    """The difference column can fail: against a perturbed oracle it is the perturbation."""
    qps, oracle = sequence
    shifted = [a + 1e-3 for a in oracle]
    row = sb.run_sequence("dual_newton", "x", qps, shifted, 1.0, config)
    assert float(row["max_activation_difference"]) == pytest.approx(1e-3, rel=1e-3)


def test_recorded_bounds_carry_the_tau_null_box(sequence):
    """The shipped controller bounds tau_null per tick (qp.nullspace_step_rad): recorded."""
    qps, _ = sequence
    first = qps[0]
    assert first.null_bound is not None and np.all(first.null_bound > 0.0)
    lo, hi = first.bounds()
    assert len(lo) == 30 + 7 and np.all(lo[:30] == 0.0)
    assert np.all(hi[30:] == first.null_bound) and np.all(lo[30:] == -first.null_bound)
    free = first._replace(null_bound=None)
    lo, hi = free.bounds()
    assert np.all(np.isinf(lo[30:])) and np.all(np.isinf(hi[30:]))


@pytest.mark.slow
def test_bench_solvers_writes_its_reports(tmp_path, monkeypatch):
    """End to end: the closed loop and one synthetic arm recorded, two solvers, CSV + MD + JSON."""
    spec = importlib.util.spec_from_file_location("bench_solvers",
                                                  ROOT / "benchmarks" / "bench_solvers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    small = BenchConfig(solver_arms=((30, 7),), warmup_ticks=5)
    monkeypatch.setattr(module, "load_bench_config", lambda _: small)
    code = module.main(["--qps", "6", "--solvers", "daqp,dual_newton", "--out", str(tmp_path)])
    assert code == 0
    rows = list(csv.DictReader((tmp_path / "bench_solvers.csv").open()))
    assert [(r["sequence"], r["solver"]) for r in rows] == [
        ("closed loop, shipped arm", "daqp"), ("closed loop, shipped arm", "dual_newton"),
        ("synthetic 30 / 7", "daqp"), ("synthetic 30 / 7", "dual_newton")]
    assert all(int(r["failures"]) == 0 and float(r["max_activation_difference"]) < 1e-6
               for r in rows)
    result = json.loads((tmp_path / "bench_solvers.json").read_text())
    assert result["machine"]["load_average_start"] >= 0 and len(result["bvls"]) == 2
    text = (tmp_path / "bench_solvers.md").read_text()
    assert "load average" in text and "Command: `python benchmarks/bench_solvers.py" in text
