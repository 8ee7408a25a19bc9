"""The run recorder writes CSV and YAML files that read back to the same samples."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import yaml

from musculo_control.sim.recorder import Recorder


def test_round_trip_csv_yaml(tmp_path):
    rec = Recorder({"q": ("a", "b"), "norm": ("value",)})
    for i in range(5):
        rec.add(0.01 * i, {"q": [i, -i], "norm": 2.0 * i})
    rec.save(tmp_path, {"params": {"k": 0.01}, "initial_q": np.zeros(2)})
    rows = list(csv.reader(open(tmp_path / "signals.csv")))
    assert rows[0] == ["t_s", "q.a", "q.b", "norm.value"]
    assert float(rows[3][2]) == -2.0
    info = yaml.safe_load((tmp_path / "run.yaml").read_text())
    assert info["initial_q"] == [0.0, 0.0]
    assert np.allclose(rec.array("norm")[:, 0], [0, 2, 4, 6, 8])


def test_wrong_length_sample_is_rejected():
    rec = Recorder({"q": ("a", "b")})
    with pytest.raises(ValueError, match="signal 'q': expected 2"):
        rec.add(0.0, {"q": [1.0, 2.0, 3.0]})
