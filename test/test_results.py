"""Metrics that measure what they name, verdicts against the targets, and results that
regenerate: the README's table is what doc/results.json renders to, and a fresh run of the
same seed gives doc/results.json again."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from musculo_control.config.parser import parse
from musculo_control.errors import ConfigError
from musculo_control.paths import default_config_dir
from musculo_control.sim.experiments import RunResult
from musculo_control.sim.recorder import Recorder
from musculo_control.sim.results import (
    current_block,
    load_results,
    readme_block,
    replace_block,
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
def test_readme_results_block_is_what_doc_results_json_renders_to():
    doc = load_results(REPO / "doc" / "results.json")
    readme = (REPO / "README.md").read_text()
    block = current_block(readme)
    assert block is not None, "README.md lost its results markers"
    assert block == readme_block(doc, "doc/figures"), \
        "README's results block differs from doc/results.json: run `make run`"
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
    block = readme_block(doc, "doc/figures")
    text = f"# title\n\n{block}\n\n## after\n"
    assert replace_block(text.replace(block, block[:200] + "\n<!-- results:end -->"),
                         block) == text
    with pytest.raises(InputError, match="markers"):
        replace_block("# no markers\n", block)
    assert len(results_table(doc)) == 2 + sum(len(v) for v in doc["experiments"].values())


def _close(a, b, path=""):
    """Same structure; numbers within 0.1 % or 1e-6 (bit-identical on one machine)."""
    if isinstance(b, dict):
        assert isinstance(a, dict) and set(a) == set(b), path
        for k in b:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(b, float) and not isinstance(b, bool):
        assert isinstance(a, (int, float)) and math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-6), \
            f"{path}: fresh {a} vs committed {b}"
    else:
        assert a == b, f"{path}: fresh {a!r} vs committed {b!r}"


@pytest.mark.slow
def test_a_fresh_run_of_the_same_seed_reproduces_doc_results_json(tmp_path):
    """`musculo report` again with the committed seed and overrides: the same metrics (within
    0.1 %, for another CPU or BLAS; on one machine the runs are bit-identical), the same
    verdicts, the same figures."""
    from musculo_control.cli import main

    committed = load_results(REPO / "doc" / "results.json")
    args = ["report", "--out", str(tmp_path)]
    for item in committed["overrides"]:
        args += ["--set", item]
    assert main(args) == 0
    fresh = load_results(tmp_path / "results.json")
    _close(fresh, committed)
