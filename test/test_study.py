"""``musculo study``: cache keys are the runs' full parameters, finished runs are not rerun, an
interrupted study resumes, the local and Dask engines give the serial engine's results, and the
summaries are what the runs say."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from musculo_control.cli import main
from musculo_control.commands.study import publish_block
from musculo_control.errors import InputError
from musculo_control.sim.results import block_date
from musculo_control.sim.scoring import Target
from musculo_control.sim.study_config import ConditionConfig
from musculo_control.sim.study_runs import (
    Cache,
    DaskEngine,
    LocalEngine,
    RunSpec,
    SerialEngine,
    _folder_digest,
    code_fingerprint,
    expand,
    run_key,
    run_study,
)
from musculo_control.sim.study_summary import (
    robustness_table,
    summarise,
    throughput,
    throughput_table,
)

#: a nullspace run of 0.4 s: long enough for its windows, short enough for a test
SHORT = ("experiments.nullspace.duration_s=0.4", "experiments.nullspace.window_s=0.1")


def _specs(config_dir, seeds=(0, 1)):
    cond = ConditionConfig(name="short", seeds=tuple(seeds))
    return expand(config_dir, ["nullspace"], ["osc"], [cond], SHORT)


def test_the_key_is_the_runs_parameters(config_dir, tmp_path):
    code = code_fingerprint()
    digest = _folder_digest(config_dir)
    a = RunSpec(str(config_dir), "nullspace", "osc", "x", 0, ("controller.qp.r=0.01",))
    same = RunSpec(str(config_dir), "nullspace", "osc", "another label", 0,
                   ("controller.qp.r=1e-2",))
    assert run_key(a, digest, code) == run_key(same, digest, code)
    for other in (RunSpec(str(config_dir), "nullspace", "osc", "x", 1, a.overrides),
                  RunSpec(str(config_dir), "nullspace", "osc", "x", 0, ("controller.qp.r=0.02",)),
                  RunSpec(str(config_dir), "disturbance", "osc", "x", 0, a.overrides),
                  RunSpec(str(config_dir), "nullspace", "osc-no-nullspace", "x", 0, a.overrides)):
        assert run_key(other, digest, code) != run_key(a, digest, code)
    assert run_key(a, digest, code + "0") != run_key(a, digest, code)
    # one byte of one config file changes the key
    copy = tmp_path / "robot"
    shutil.copytree(config_dir, copy)
    assert _folder_digest(copy) == digest
    path = copy / "controller.yaml"
    path.write_text(path.read_text() + "\n")
    assert _folder_digest(copy) != digest


class _Counting(SerialEngine):
    def __init__(self, fail_after=None):
        self.ran, self.fail_after = 0, fail_after

    def map_unordered(self, specs):
        for i, record in super().map_unordered(specs):
            self.ran += 1
            yield i, record
            if self.fail_after is not None and self.ran >= self.fail_after:
                raise KeyboardInterrupt


def test_finished_runs_are_not_rerun_and_an_interrupted_study_resumes(config_dir, tmp_path):
    specs = _specs(config_dir, seeds=(0, 1, 2))
    cache = Cache(tmp_path / "cache")
    engine = _Counting(fail_after=1)
    with pytest.raises(KeyboardInterrupt):
        run_study(specs, cache, engine)
    assert len(list(cache.folder.glob("*.json"))) == 1
    engine = _Counting()
    first = run_study(specs, cache, engine)
    assert engine.ran == 2 and first.executed == 2 and len(first.records) == 3
    again = _Counting()
    second = run_study(specs, cache, again)
    assert again.ran == 0 and second.executed == 0
    assert [r["metrics"] for r in second.records] == [r["metrics"] for r in first.records]
    assert [r["seed"] for r in second.records] == [0, 1, 2]
    # a half-written cache file (a killed study) is run again
    cache.path(first.keys[1]).write_text('{"metrics": ')
    third = _Counting()
    run_study(specs, cache, third)
    assert third.ran == 1


def test_local_processes_and_a_dask_local_cluster_give_the_serial_results(config_dir, tmp_path):
    distributed = pytest.importorskip("distributed")
    specs = _specs(config_dir)
    serial = run_study(specs, Cache(tmp_path / "serial"), SerialEngine())
    local = run_study(specs, Cache(tmp_path / "local"), LocalEngine(workers=2))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dask = run_study(specs, Cache(tmp_path / "dask"), DaskEngine(client=client))
        assert len(client.scheduler_info()["workers"]) == 2
    for other in (local, dask):
        assert other.executed == 2
        assert [r["metrics"] for r in other.records] == [r["metrics"] for r in serial.records]


def _record(cond, seed, drift, met=True, problems=()):
    return {"experiment": "nullspace", "controller": "osc", "condition": cond, "seed": seed,
            "metrics": {"hand_drift_m": drift, "activation_drop_fraction": 0.5},
            "verdict": {"status": "met" if met and not problems else "missed",
                        "problems": list(problems),
                        "checks": [{"metric": "hand_drift_m", "met": met},
                                   {"metric": "activation_drop_fraction", "met": True}]}}


def test_throughput_is_runs_per_cpu_hour_per_experiment_without_unmeasured_runs():
    records = [{**_record("a", 0, 0.01), "cpu_s": 2.0, "simulated_s": 10.0},
               {**_record("a", 1, 0.01), "cpu_s": 4.0, "simulated_s": 10.0},
               _record("a", 2, 0.01)]  # cached before the CPU time was measured
    (row,) = throughput(records)
    assert row == {"experiment": "nullspace", "runs": 2, "cpu_s_per_run": 3.0,
                   "runs_per_hour_per_core": 1200.0, "simulated_s_per_cpu_s": 20.0 / 6.0}
    assert "| nullspace | 2 | 3.00 | 1200 | 3.3 |" in throughput_table([row])
    assert throughput([_record("a", 0, 0.01)]) == []


def test_summary_and_robustness_table_say_what_the_runs_say():
    records = [_record("a", 0, 0.010), _record("a", 1, 0.030, met=False),
               _record("a", 2, 0.012), _record("b", 0, 0.005),
               _record("b", 1, 0.006, problems=("start pose not held",))]
    rows = {(r["condition"], r["metric"]): r for r in summarise(records)}
    a = rows[("a", "hand_drift_m")]
    assert (a["n"], a["min"], a["median"], a["max"]) == (3, 0.010, 0.012, 0.030)
    assert (a["runs"], a["runs_met"]) == (3, 2)
    targets = [Target(experiment="nullspace", controller="osc", metric="hand_drift_m",
                      below=0.02, source="s")]
    table = robustness_table(records, ["a", "b"], targets)
    row = table[2]
    assert "**1.00 / 1.20 / 3.00 cm** (2/3 met)" in row  # min / median / max
    assert "**0.50 / 0.55 / 0.60 cm** (1/2 met)" in row  # a problem misses the row too
    assert "< 2.00 cm" in row
    norm = Target(experiment="nullspace", controller="osc", metric="activation_drop_fraction",
                  above=0.4, source="||a|| falls")
    assert robustness_table(records, ["a"], [norm])[2].endswith("(\\|\\|a\\|\\| falls) |")
    clean = robustness_table([_record("a", 0, 0.010), _record("a", 1, 0.012)], ["a"], targets)
    assert "| 1.00 / 1.10 / 1.20 cm (2/2 met) |" in clean[2]


def test_study_command_writes_the_table_and_reruns_nothing(config_dir, tmp_path, capsys):
    args = ["study", "--experiments", "nullspace", "--seeds", "0", "--workers", "1",
            "--quiet", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
            *[x for item in SHORT for x in ("--set", item)]]
    assert main(args) == 0
    said = capsys.readouterr().out
    assert "(1 simulated now)" in said
    # runs per hour per core from the run's own CPU time (one 0.4 s nullspace run)
    per_hour = re.search(r"nullspace: (\d+) runs per hour per core \(([\d.]+) s CPU per run",
                         said)
    assert per_hour and int(per_hour[1]) == pytest.approx(3600 / float(per_hour[2]), rel=0.05)
    text = (tmp_path / "out" / "study.md").read_text()
    assert "nullspace (`osc`): hand_drift_m" in text and "min / median / max" in text
    assert "## Runs per hour per core" in text and "| nullspace | 1 |" in text
    assert (tmp_path / "out" / "study_grid_nullspace.png").is_file()
    assert main(args) == 0
    assert "(0 simulated now)" in capsys.readouterr().out


@pytest.mark.parametrize("argv, said", [
    (["study", "--seeds", "3-x"], "--seeds"),
    (["study", "no-such-study"], "robustness"),
    (["study", "--workers", "0"], "--workers"),
    (["study", "--grid", "controller.qp.r"], "--grid"),
    (["study", "--scheduler", "tcp://127.0.0.1:1"], "--engine dask"),
])
def test_study_command_mistakes_are_named(argv, said, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c")]) == 2
    assert said in capsys.readouterr().err


def test_the_results_page_holds_the_blocks_of_the_shipped_studies():
    root = Path(__file__).resolve().parent.parent
    page = (root / "doc" / "results" / "index.md").read_text()
    for name in ("robustness", "holdout"):
        start = page.find(f"<!-- study:{name}:begin")
        stop = page.find(f"<!-- study:{name}:end -->")
        assert 0 <= start < stop, name
        block = page[start:stop]
        assert block_date(block) is not None, f"{name}: the block states no date"
        assert f"`musculo study {name} --page doc/results/index.md`" in block
        for link in re.findall(r"!\[[^]]*\]\(([^)]+)\)", block):
            assert (root / "doc" / "results" / link).resolve().is_file(), link


def test_publish_block_rewrites_only_its_block_with_figures_relative_to_the_page(tmp_path):
    page = tmp_path / "doc" / "results" / "index.md"
    page.parent.mkdir(parents=True)
    marker = "<!-- study:s:begin: generated by `musculo study s --page P`; do not edit -->"
    page.write_text(f"# Results\n\n{marker}\nSTALE\n<!-- study:s:end -->\n\nafter\n")
    figure = tmp_path / "study_s_nullspace.png"
    figure.write_bytes(b"png")
    publish_block(page, "s", "what it shows", ["| a | b |", "|---|---|"], [figure], "arm", [],
                  tmp_path / "doc" / "figures", 3)
    text = page.read_text()
    assert text.startswith(f"# Results\n\n{marker}\nRun on ") and text.endswith(
        "<!-- study:s:end -->\n\nafter\n")
    assert "STALE" not in text and "(config `arm`, 3 runs): what it shows" in text
    assert "![study_s_nullspace](../figures/study_s_nullspace.png)" in text
    assert (tmp_path / "doc" / "figures" / "study_s_nullspace.png").read_bytes() == b"png"
    with pytest.raises(InputError, match="no block"):
        publish_block(page, "other", "", [], [], "arm", [], tmp_path, 0)
