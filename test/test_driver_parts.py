"""The driver nodes' parts of a config folder (loop/driver_parts.py): loaded in a helper process,
they are the very parts the folder loads in this one, a bad folder fails with the loader's own
message, and the potentiometer and tendon-driver nodes are built without the rigid-body, solver
or simulation libraries ever entering their process."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from musculo_control.errors import MusculoError
from musculo_control.loop import driver_parts as dp
from musculo_control.loop.parts import load_parts
from musculo_control.paths import default_config_dir

#: What the driver nodes must not load (each is tens of MB of RSS).
HEAVY = ("pinocchio", "mujoco", "scipy", "osqp", "daqp", "matplotlib", "rosbags")


def _in_helper(monkeypatch, config_dir):
    """load_driver_parts as a process without the model's libraries runs it."""
    monkeypatch.setattr(dp, "_MODEL_MODULES", ("no.such.module",))
    return dp.load_driver_parts(config_dir)


def test_the_helper_gives_the_parts_the_folder_loads_here(monkeypatch):
    folder = default_config_dir()
    theirs = _in_helper(monkeypatch, folder)
    ours = dp.driver_parts(load_parts(folder))
    assert (theirs.joint_names, theirs.muscle_names, theirs.actuator_ids) == \
        (ours.joint_names, ours.muscle_names, ours.actuator_ids)
    assert theirs.safety == ours.safety and theirs.lockstep_leads == ours.lockstep_leads
    assert theirs.drivers.rates == ours.drivers.rates
    assert theirs.drivers.tendons.config == ours.drivers.tendons.config
    a, b = theirs.drivers.calibration, ours.drivers.calibration
    for name in ("reference_length_m", "encoder_counts_per_m", "pot_offset_counts",
                 "loadcell_offset_counts", "driver_units_per_n"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    # and they convert alike
    counts = b.length_to_encoder(b.reference_length_m * 1.01)
    np.testing.assert_array_equal(a.encoder_to_length(counts), b.encoder_to_length(counts))


def test_a_bad_folder_fails_in_the_helper_with_the_loaders_message(monkeypatch, tmp_path):
    with pytest.raises(MusculoError) as err:
        _in_helper(monkeypatch, tmp_path)
    assert str(tmp_path / "robot.yaml") in str(err.value)


@pytest.mark.parametrize("node, cls", [("potentiometer_node", "PotentiometerNode"),
                                       ("tendon_driver_node", "TendonDriverNode")])
def test_the_driver_nodes_are_built_without_the_models_libraries(node, cls):
    pytest.importorskip("rclpy")
    from graph_harness import domain_id

    code = (f"import sys, rclpy\n"
            f"rclpy.init(domain_id={domain_id()})\n"
            f"from musculo_control.nodes.{node} import {cls}\n"
            f"n = {cls}()\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
            f"n.destroy_node(); rclpy.shutdown()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout


def test_the_drivers_shared_process_builds_them_without_the_models_libraries():
    """hardware_process runs both driver nodes through control_process, which imports the
    graph's description: that import must not load the model either."""
    pytest.importorskip("rclpy")
    from graph_harness import domain_id

    code = (f"import sys, rclpy\n"
            f"rclpy.init(domain_id={domain_id()})\n"
            f"from musculo_control.nodes import control_process as cp\n"
            f"nodes = [cp._factory(n)() for n in ('potentiometer_node', 'tendon_driver_node')]\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
            f"[n.destroy_node() for n in nodes]; rclpy.shutdown()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout
