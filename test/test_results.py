"""Metrics that measure what they name, verdicts against the targets, and results that
regenerate: the example-run page's table is what doc/results.json renders to, and a fresh run
of the same seed gives doc/results.json again, on any machine within the spread that other
floating-point kernels give (bit for bit on the machine that wrote it, when asked)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from musculo_control.config.parser import parse
from musculo_control.errors import ConfigError
from musculo_control.paths import default_config_dir
from musculo_control.sim.experiments import RunResult
from musculo_control.sim.recorder import Recorder
from musculo_control.sim.results import (
    block_date,
    current_block,
    load_results,
    replace_block,
    results_block,
    results_table,
)
from musculo_control.sim.scoring import (
    METRICS,
    Scored,
    Target,
    disturbance_metrics,
    judge,
    trajectory_metrics,
)
from musculo_control.sim.setup import Overrides, load_setup

REPO = Path(__file__).resolve().parent.parent
HOLD = {"hand_tolerance_m": 0.02, "elbow_tolerance_m": 0.02}


# -- the metrics ------------------------------------------------------------------------------
def _disturbance(hand_before=0.005, gap_after_s=None, gap_m=0.005) -> Scored:
    """1 s hold, touch at 1 s, 1 s push of 4 cm, 2 s hold; force while the elbow is behind
    the tip; the elbow gets ``gap_m`` ahead of the tip from ``gap_after_s`` on."""
    t = np.round(np.arange(0.0, 4.0, 0.01), 6)
    tip = np.clip(t - 1.0, 0.0, 1.0) * 0.04
    elbow = tip - 0.001 * (t >= 1.0)  # 1 mm behind the tip: pressed, 3 N
    if gap_after_s is not None:
        elbow = np.where(t >= gap_after_s, tip + gap_m, elbow)
    force = np.where((t > 1.0) & (elbow < tip), 3000.0 * (tip - elbow), 0.0)
    hand = np.where(t < 1.0, hand_before * np.sin(np.pi * t), 0.01 * (t >= 1.0))
    return Scored(t, {"hand_deviation_m": hand, "gauge_force_n": force,
                      "elbow_progress_m": elbow, "tip_progress_m": tip,
                      "elbow_motion_m": np.abs(elbow)},
                  {"touch_s": 1.0, "final_from_s": 3.0, "end_s": 4.0})


def test_disturbance_scores_from_contact_and_keeps_the_hold_apart():
    m = disturbance_metrics(_disturbance(hand_before=0.015), **HOLD,
                            contact_gap_tolerance_m=0.002, unsafe_ticks=0)
    assert set(m) == set(METRICS["disturbance"])
    assert m["contact_time_s"] == pytest.approx(1.01)
    assert m["start_held"] and m["settle_hand_deviation_m"] == pytest.approx(0.015, rel=1e-3)
    assert m["max_hand_deviation_m"] == pytest.approx(0.01)  # the hold's 1.5 cm not in it
    assert m["peak_push_force_N"] == pytest.approx(3.0)
    assert m["final_push_force_N"] == pytest.approx(3.0)
    assert m["contact_lost_s"] == 0.0 and m["contact_held_final"]
    assert m["elbow_displacement_m"] == pytest.approx(0.039)


def test_a_lost_contact_is_detected_and_a_zero_force_is_not_a_yield():
    m = disturbance_metrics(_disturbance(gap_after_s=2.5), **HOLD,
                            contact_gap_tolerance_m=0.002, unsafe_ticks=0)
    assert m["final_push_force_N"] == 0.0
    assert m["contact_lost_s"] == pytest.approx(1.5, abs=0.011)
    assert m["contact_gap_max_m"] == pytest.approx(0.005)
    assert not m["contact_held_final"]
    target = Target(experiment="disturbance", controller="osc", metric="final_force_fraction",
                    below=0.2, source="test")
    verdict = judge("disturbance", "osc", m, [target])
    assert verdict["status"] == "missed"  # the fraction is 0, but the contact was lost
    assert verdict["checks"][0]["met"]
    assert any("contact lost for 1.5" in p for p in verdict["problems"])
    # a gap within the tolerance is an elbow resting on the tip: no loss
    m = disturbance_metrics(_disturbance(gap_after_s=2.5, gap_m=0.001), **HOLD,
                            contact_gap_tolerance_m=0.002, unsafe_ticks=0)
    assert m["contact_lost_s"] == 0.0 and m["contact_held_final"]


def test_a_failed_start_hold_fails_the_run():
    m = disturbance_metrics(_disturbance(hand_before=0.05), **HOLD,
                            contact_gap_tolerance_m=0.002, unsafe_ticks=0)
    assert not m["start_held"]
    target = Target(experiment="disturbance", controller="osc", metric="max_hand_deviation_m",
                    below=0.02, source="test")
    verdict = judge("disturbance", "osc", m, [target])
    assert verdict["status"] == "missed" and verdict["checks"][0]["met"]
    assert verdict["problems"] == ["start pose not held (hand moved 5.0 cm, elbow 0.0 cm "
                                   "before the gauge touched)"]


def test_trajectory_scores_the_move_and_reports_the_elbow_at_its_start():
    t = np.round(np.arange(0.0, 4.0, 0.01), 6)
    move = t >= 1.0
    err = np.where(move, 0.01, 0.0) + np.where((t > 0.5) & ~move, 0.08, 0.0)  # a collapse
    z = np.where(t < 0.6, 0.31, 0.24)
    # a muscle at the actuators' limit before the move (not scored) and over 2.0-2.75 s
    at_limit = (((t > 0.2) & (t < 0.8)) | ((t >= 2.0) & (t < 2.75))).astype(float)
    sc = Scored(t, {"tracking_error_m": err, "elbow_height_m": z,
                    "elbow_motion_m": 0.31 - z, "at_tension_limit": at_limit},
                {"move_s": 1.0, "end_s": 4.0})
    m = trajectory_metrics(sc, **HOLD, unsafe_ticks=0)
    assert set(m) == set(METRICS["trajectory"])
    assert m["mean_tracking_error_m"] == pytest.approx(0.01)
    assert not m["start_held"] and m["settle_hand_deviation_m"] == pytest.approx(0.08)
    assert m["elbow_height_start_m"] == 0.31 and m["elbow_height_at_move_m"] == 0.24
    assert m["tension_limit_fraction"] == pytest.approx(0.25, abs=0.01)


def test_trajectory_targets_apply_to_every_pose():
    target = Target(experiment="trajectory", controller="osc", metric="mean_tracking_error_m",
                    below=0.02, source="test")
    m = {"mean_tracking_error_m": {"a": 0.01, "b": 0.03}, "start_held": {"a": True, "b": True},
         "unsafe_ticks": {"a": 0, "b": 0}}
    verdict = judge("trajectory", "osc", m, [target])
    assert verdict["status"] == "missed" and verdict["checks"][0]["missed_by"] == ["b"]
    assert judge("trajectory", "joint-stiffness", m, [target])["status"] == "no target"


@pytest.mark.parametrize("data, key", [
    ({"experiment": "nullspace", "controller": "osc", "metric": "hand_drift", "below": 0.02,
      "source": "x"}, "targets[0].metric"),
    ({"experiment": "nullspace", "controller": "osc", "metric": "hand_drift_m", "below": 0.02,
      "above": 0.0, "source": "x"}, "targets[0]"),
    ({"experiment": "nullspace", "controller": "osc", "metric": "hand_drift_m", "source": "x"},
     "targets[0]"),
    ({"experiment": "nullspace", "controller": "oss", "metric": "hand_drift_m", "below": 0.02,
      "source": "x"}, "targets[0].controller"),
])
def test_a_malformed_target_names_its_key(data, key):
    with pytest.raises(ConfigError) as err:
        parse(Target, data, "experiments.yaml", "targets[0]")
    assert err.value.key == key


# -- figures draw the scored quantity ---------------------------------------------------------
def test_figures_draw_exactly_the_scored_series_with_targets_and_windows(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from musculo_control.sim import plots

    setup = load_setup(default_config_dir(), Overrides.parse([]))
    sc = _disturbance(gap_after_s=2.5)
    metrics = disturbance_metrics(sc, **HOLD, contact_gap_tolerance_m=0.002, unsafe_ticks=0)
    run = RunResult("disturbance", "osc", "", metrics, Recorder({}), {}, 1.0, 4.0, sc)
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    plots.plot_disturbance([run], Path("unused.png"), setup.experiments.targets)
    axes = figures[0].axes
    lines = {ln.get_label().split(":")[0]: ln for ax in axes for ln in ax.get_lines()}
    force = [ln for ln in axes[1].get_lines() if ln.get_label().startswith("osc")][0]
    assert np.array_equal(force.get_ydata(), sc.series["gauge_force_n"])
    hand = [ln for ln in axes[0].get_lines() if ln.get_label().startswith("osc:")][0]
    assert np.array_equal(hand.get_ydata(), 100 * sc.series["hand_deviation_m"])
    assert "max 1.00 cm" in hand.get_label()
    tip = lines["gauge tip (ahead of it"]
    assert np.array_equal(tip.get_ydata(), 100 * sc.series["tip_progress_m"])
    assert any(ln.get_label() == "osc target: max < 2 cm" and ln.get_ydata()[0] == 2.0
               for ln in axes[0].get_lines())
    spans = [p for p in axes[1].patches]
    assert any(np.isclose(p.get_x(), 3.0) for p in spans)  # the final force window


# -- results that regenerate ------------------------------------------------------------------
EXAMPLE_PAGE = REPO / "doc" / "results" / "example_run.md"


def test_example_run_page_block_is_what_doc_results_json_renders_to():
    doc = load_results(REPO / "doc" / "results.json")
    block = current_block(EXAMPLE_PAGE.read_text())
    assert block is not None, f"{EXAMPLE_PAGE} lost its results markers"
    date = block_date(block)
    assert date is not None, "the results block states no publication date"
    assert block == results_block(doc, "../figures", date), \
        f"{EXAMPLE_PAGE}'s results block differs from doc/results.json: run `make run`"
    for name in doc["figures"]:
        assert (REPO / "doc" / "figures" / name).is_file(), name


def test_committed_verdicts_follow_from_the_metrics_and_the_current_targets():
    doc = load_results(REPO / "doc" / "results.json")
    setup = load_setup(default_config_dir(), Overrides.parse(doc["overrides"]))
    assert doc["mock_arm_seed"] == setup.mock_config.seed
    for exp, by_ctrl in doc["experiments"].items():
        for ctrl, entry in by_ctrl.items():
            m = {k: (float("nan") if v is None else v) for k, v in entry["metrics"].items()}
            assert set(m) == set(METRICS[exp]), (exp, ctrl)
            again = json.loads(json.dumps(judge(exp, ctrl, m, setup.experiments.targets)))
            assert again == entry["verdict"], (exp, ctrl)


def test_replace_block_keeps_the_rest_and_refuses_a_readme_without_markers():
    from musculo_control.errors import InputError

    doc = load_results(REPO / "doc" / "results.json")
    block = results_block(doc, "../figures", "2026-01-02")
    assert block_date(block) == "2026-01-02"
    text = f"# title\n\n{block}\n\n## after\n"
    assert replace_block(text.replace(block, block[:200] + "\n<!-- results:end -->"),
                         block) == text
    with pytest.raises(InputError, match="markers"):
        replace_block("# no markers\n", block)
    assert len(results_table(doc)) == 2 + sum(len(v) for v in doc["experiments"].values())


#: How far a fresh run's metrics may differ from doc/results.json on another machine, per
#: experiment (per start pose for the trajectory): the relative difference
#: |fresh - committed| / max(|committed|, floor), the floor per unit below.
#:
#: Measured on 2026-11-28 with ``python benchmarks/results_spread.py`` (doc/results/
#: reproducibility.md has its table and command): ``musculo report`` rerun with only the
#: floating-point kernels changed, NumPy 2.4 with its scipy-openblas 0.3.31: OpenBLAS's Haswell,
#: SandyBridge, Nehalem and generic (Katmai: Prescott and Core2 fall back to it) kernels instead
#: of the machine's SkylakeX, 1 and 2 OpenBLAS threads, NumPy's SIMD loops held to their SSE4.2
#: baseline, and another installation (NumPy 2.2.6, SciPy 1.15.3, OpenBLAS 0.3.29). The largest
#: differences over those variants: disturbance 5.1e-10, trajectory A 1.4e-11, B 5.9e-12, C
#: 1.8e-12, nullspace 7.7e-3 (the nullspace drift is chaotic: where the arm sticks and slips
#: against the wires' friction depends on the last bits of the tensions). Each tolerance is ten
#: times the largest difference, rounded up, and no less than 1e-6 (below any figure the
#: documentation prints). A change of code that moves the results must regenerate
#: doc/results.json (`make run`), not widen these.
SPREAD_TOLERANCE = {"disturbance": 1e-6, "trajectory/trajectory_a": 1e-6,
                    "trajectory/trajectory_b": 1e-6, "trajectory/trajectory_c": 1e-6,
                    "nullspace": 8e-2}
#: A difference too small to matter in a metric's unit: 0.1 mm, 0.01 N, 0.1 %-point, 1 ms,
#: 1e-4 rad, else 1e-3 (||a||); a metric near zero (a final force of 0.0 N) is compared to it.
FLOORS = {"_m": 1e-4, "_N": 1e-2, "fraction": 1e-3, "_s": 1e-3, "_rad": 1e-4}


def _floor(metric: str) -> float:
    return next((v for suffix, v in FLOORS.items() if suffix in metric), 1e-3)


def _verdict_shape(verdict):
    """A verdict without its numbers: status, each check's metric, bound and outcome, and the
    problems with their figures blanked ("start pose not held (hand moved # cm ...)")."""
    return (verdict["status"],
            [(c["metric"], c["bound"], c["met"], c["missed_by"]) for c in verdict["checks"]],
            [re.sub(r"-?\d+(\.\d+)?", "#", p) for p in verdict["problems"]])


def _within_spread(fresh, committed):
    """The same document up to the metrics, which may differ by SPREAD_TOLERANCE."""
    assert {k: v for k, v in fresh.items() if k != "experiments"} == \
        {k: v for k, v in committed.items() if k != "experiments"}
    assert fresh["experiments"].keys() == committed["experiments"].keys()
    failures = []
    for exp, by_ctrl in committed["experiments"].items():
        assert fresh["experiments"][exp].keys() == by_ctrl.keys(), exp
        for ctrl, entry in by_ctrl.items():
            new = fresh["experiments"][exp][ctrl]
            assert _verdict_shape(new["verdict"]) == _verdict_shape(entry["verdict"]), \
                f"{exp}/{ctrl}: verdict {new['verdict']} against {entry['verdict']}"
            assert new["metrics"].keys() == entry["metrics"].keys(), (exp, ctrl)
            for metric, value in entry["metrics"].items():
                pairs = ([(pose, new["metrics"][metric][pose], v) for pose, v in value.items()]
                         if isinstance(value, dict) else [("", new["metrics"][metric], value)])
                for pose, a, b in pairs:
                    where = f"{exp}/{ctrl}/{pose}/{metric}" if pose else f"{exp}/{ctrl}/{metric}"
                    if isinstance(b, bool) or b is None or isinstance(a, bool) or a is None:
                        assert a == b, f"{where}: fresh {a!r} vs committed {b!r}"
                        continue
                    tolerance = SPREAD_TOLERANCE[f"{exp}/{pose}" if pose else exp]
                    rel = abs(a - b) / max(abs(b), _floor(metric))
                    if not rel <= tolerance:
                        failures.append(f"{where}: fresh {a} vs committed {b} (relative "
                                        f"{rel:.2g} > {tolerance:g})")
    assert not failures, "outside the measured spread:\n" + "\n".join(failures)


def test_the_spread_check_accepts_the_measured_spread_and_refuses_more():
    committed = load_results(REPO / "doc" / "results.json")
    fresh = json.loads(json.dumps(committed))
    null = fresh["experiments"]["nullspace"]["osc"]["metrics"]
    null["activation_norm_end"] *= 1.0077  # the largest difference measured
    fresh["experiments"]["disturbance"]["osc"]["metrics"]["max_hand_deviation_m"] *= 1 + 5e-10
    _within_spread(fresh, committed)
    null["activation_norm_end"] *= 1.2
    with pytest.raises(AssertionError, match="nullspace/osc/activation_norm_end"):
        _within_spread(fresh, committed)
    fresh = json.loads(json.dumps(committed))
    traj = fresh["experiments"]["trajectory"]["osc"]["metrics"]["mean_tracking_error_m"]
    traj["trajectory_a"] *= 1.001  # 0.1 % is far outside trajectory A's spread
    with pytest.raises(AssertionError, match="trajectory_a/mean_tracking_error_m"):
        _within_spread(fresh, committed)
    fresh = json.loads(json.dumps(committed))
    fresh["experiments"]["nullspace"]["osc"]["verdict"]["status"] = "missed"
    with pytest.raises(AssertionError, match="verdict"):
        _within_spread(fresh, committed)


@pytest.mark.slow
def test_a_fresh_run_of_the_same_seed_reproduces_doc_results_json(tmp_path):
    """`musculo report` again with the committed seed and overrides: the same verdicts and
    figures, the metrics within the spread measured across floating-point kernels
    (SPREAD_TOLERANCE). On the machine that wrote doc/results.json the run is bit-identical:
    ``MUSCULO_RESULTS_BIT_EXACT=1`` asks for that instead (never set in CI, which may run on
    another machine)."""
    from musculo_control.cli import main

    committed = load_results(REPO / "doc" / "results.json")
    args = ["report", "--out", str(tmp_path)]
    for item in committed["overrides"]:
        args += ["--set", item]
    assert main(args) == 0
    fresh = load_results(tmp_path / "results.json")
    if os.environ.get("MUSCULO_RESULTS_BIT_EXACT") == "1":
        assert fresh == committed
    else:
        _within_spread(fresh, committed)


def test_a_row_that_never_held_its_start_pose_shows_how_far_the_hand_went_not_its_figures():
    metrics = {"start_held": {"a": False, "b": False}, "settle_hand_deviation_m": {"a": 0.25,
                                                                                   "b": 0.19},
               "mean_tracking_error_m": {"a": 0.3, "b": 0.2},
               "elbow_height_at_move_m": {"a": 0.2, "b": 0.3},
               "tension_limit_fraction": {"a": 0.0, "b": 0.0}}
    doc = {"compare_with_paper": False, "experiments": {"trajectory": {"muscle-stiffness": {
        "metrics": metrics, "verdict": {"status": "no target", "checks": [], "problems": []}}}}}
    row = results_table(doc)[2]
    assert "start pose not held: the hand moved 25.00 / 19.00 cm" in row
    assert "mean error" not in row
    metrics["start_held"]["b"] = True  # one pose held: the figures are shown, as measured
    assert "mean error" in results_table(doc)[2]
