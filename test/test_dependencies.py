"""Everything a command needs at run time is installed by ``pip install .`` (and by rosdep).

- every third-party module the package imports outside ``nodes/`` (the rclpy shells, which
  ROS provides) and besides ROS's own modules in ``testing/`` belongs to a distribution of
  ``install_requires``;
- every ``install_requires`` distribution has its rosdep key in package.xml, and the project's
  own pip keys are defined in rosdep/musculo_control.yaml;
- (slow) a fresh virtual environment with ``pip install <repo>`` and no extras runs a short
  simulation end to end, logs included.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "musculo_control"

#: install_requires distribution -> its rosdep key in package.xml
ROSDEP_KEYS = {"numpy": "python3-numpy", "pin": "pinocchio", "osqp": "python3-osqp-pip",
               "pyyaml": "python3-yaml", "mujoco": "python3-mujoco-pip",
               "scipy": "python3-scipy", "matplotlib": "python3-matplotlib",
               "rosbags": "python3-rosbags-pip", "daqp": "python3-daqp-pip",
               "tqdm": "python3-tqdm"}


def _install_requires() -> set[str]:
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "install_requires":
            items = ast.literal_eval(node.value)
            return {re.split(r"[<>=!~;\[ ]", s, maxsplit=1)[0].lower() for s in items}
    raise AssertionError("setup.py has no install_requires")


#: modules whose distribution importlib.metadata cannot see (pin installs through cmeel's prefix)
MODULE_DISTRIBUTION = {"pinocchio": "pin"}
#: optional modules, used only when installed (each with its fallback)
OPTIONAL = {"qpsolvers": "musculo bench's baseline; without it the same through osqp",
            "distributed": "musculo study --engine dask (extra 'cluster'); without it a clear "
                           "error naming the extra",
            **{m: "benchmarks/bench_solvers.py (extra 'bench'); without it a clear error naming "
                  "the extra" for m in ("proxsuite", "piqp", "quadprog", "clarabel")}}


def _optional(tree: ast.AST) -> set[int]:
    """ids of import nodes inside ``try: ... except ImportError`` (optional, with a fallback)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError",
                                                               "ModuleNotFoundError")
                for h in node.handlers):
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


#: what ROS provides (a distribution, or the 'ros' extra's wheels), and the interface package
#: of this repository that is built with it (msgs/: colcon, or `make install` from the rosidl
#: wheels): the test side's graph tools (testing/) import these beside the package's own
#: dependencies
ROS_PROVIDED = {"rclpy", "std_msgs", "std_srvs", "sensor_msgs", "geometry_msgs",
                "diagnostic_msgs", "trajectory_msgs", "rosgraph_msgs", "visualization_msgs",
                "rcl_interfaces", "musculo_control_msgs"}


def _imported_top_modules() -> dict[str, str]:
    """Top-level module -> the first file importing it, for the package minus nodes/ and
    minus optional imports (and minus ROS's modules in testing/)."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        top = path.relative_to(PACKAGE).parts[:1]
        if "nodes" in top:
            continue
        ros_provided = ROS_PROVIDED if "testing" in top else set()
        tree = ast.parse(path.read_text())
        optional = _optional(tree)
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.split(".")[0] in ros_provided:
                    continue
                found.setdefault(name.split(".")[0], str(path.relative_to(REPO)))
    return found


def test_every_imported_third_party_module_is_in_install_requires():
    required = _install_requires()
    dists = metadata.packages_distributions()
    stdlib = set(sys.stdlib_module_names)
    missing = {}
    for module, where in _imported_top_modules().items():
        if module in stdlib or module in OPTIONAL or module in ("musculo_control", "__future__"):
            continue
        owners = {d.lower().replace("_", "-") for d in
                  dists.get(module, [MODULE_DISTRIBUTION.get(module, module)])}
        if not owners & {r.replace("_", "-") for r in required}:
            missing[module] = (sorted(owners), where)
    assert not missing, f"imported at run time but not in install_requires: {missing}"


def test_install_requires_have_rosdep_keys():
    required = _install_requires()
    assert required <= set(ROSDEP_KEYS), f"add a rosdep key for {required - set(ROSDEP_KEYS)}"
    deps = {e.text for e in ET.parse(REPO / "package.xml").getroot().iter("exec_depend")}
    missing = {d: ROSDEP_KEYS[d] for d in required if ROSDEP_KEYS[d] not in deps}
    assert not missing, f"package.xml lacks exec_depend {missing}"
    own = yaml.safe_load((REPO / "rosdep" / "musculo_control.yaml").read_text())
    for key in deps:
        if key.endswith("-pip"):
            assert key in own, f"{key} is not defined in rosdep/musculo_control.yaml"


@pytest.mark.slow
def test_plain_pip_install_runs_a_simulation_with_its_logs(tmp_path):
    """`pip install <repo>` without extras in a fresh venv; one short simulation, outside the
    source tree, writes its metrics, CSV and ROS 2 bag."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(REPO)],
                          capture_output=True, text=True, timeout=1200, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "out"
    run = subprocess.run(
        [str(venv / "bin" / "musculo"), "simulate", "nullspace", "--out", str(out),
         "--set", "experiments.nullspace.duration_s=0.3",
         "--set", "experiments.nullspace.window_s=0.1",
         "--set", "experiments.nullspace.start_skip_s=0.0"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    run_dir = out / "nullspace" / "osc"
    for name in ("run.yaml", "signals.csv", "bag/metadata.yaml"):
        assert (run_dir / name).is_file(), name
    assert (out / "nullspace_osc.json").is_file()
    # the installed copy, not this checkout, ran
    info = yaml.safe_load((run_dir / "run.yaml").read_text())
    assert str(REPO) not in info["config_dir"]
