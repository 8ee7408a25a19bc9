"""Layering: the logic never imports rclpy (only the rclpy shells in musculo_control.nodes and the
test side's tools that run or watch them may), and the nodes that run the robot load nothing of
the test side or of the simulation (doc/design.md)."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import musculo_control

#: Modules that may import rclpy: the nodes, and the test side's modules that start or watch them.
ROS_MODULES = ("musculo_control.nodes", "musculo_control.testing.observer",
               "musculo_control.testing.graph_", "musculo_control.testing.injecting_")
NODES = Path(musculo_control.__file__).parent / "nodes"


def test_importing_every_logic_module_leaves_rclpy_unloaded():
    names = [m.name for m in pkgutil.walk_packages(musculo_control.__path__, "musculo_control.")
             if not m.name.startswith(ROS_MODULES) and not m.name.endswith("__main__")]
    code = ("import sys, importlib\n"
            f"for n in {names!r}: importlib.import_module(n)\n"
            "bad = [m for m in sys.modules if m == 'rclpy' or m.startswith('rclpy.')]\n"
            "print(bad); sys.exit(1 if bad else 0)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


#: Imports of the simulation a node module may make, and why: the mock arm's node is the
#: simulation's node (its stage and arm are sim/'s), and the graph's description checks the
#: mock arm's file, inside a branch taken only when the graph runs the mock.
SIMULATION_NODES = {("mock_hardware_node.py", "musculo_control.sim.mock_arm"),
                    ("mock_hardware_node.py", "musculo_control.sim.mock_stage"),
                    ("graph.py", "musculo_control.sim.setup"),
                    # a lab's client running the experiments, not a node of the robot: it
                    # sends what the experiments' definitions say (sim/graph_schedule.py)
                    ("experiment_client.py", "musculo_control.sim.graph_schedule"),
                    ("experiment_client.py", "musculo_control.sim.setup")}


def test_no_module_of_nodes_imports_the_simulation_or_the_test_side():
    """Fault injection, observers and benchmarks live on the test side, the mock arm in the
    simulation; what runs the robot (nodes/, the launcher included) names none of them."""
    found = []
    for path in sorted(NODES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            found += [f"{path.name}: {n}" for n in names
                      if n.startswith(("musculo_control.sim", "musculo_control.testing",
                                       "musculo_control.tick_benchmark"))
                      and (path.name, n) not in SIMULATION_NODES]
    assert not found, found


def test_the_robots_nodes_load_nothing_of_the_test_side_or_the_simulation():
    """Every node class of the robot, as its executable or control_process builds it: not even
    an indirect import reaches the test side or the ROS-free runner."""
    code = (
        "import sys\n"
        "from musculo_control.nodes import control_process as cp\n"
        "from musculo_control.nodes.node_config import NODE_PARAMS\n"
        "import musculo_control.nodes.launcher\n"
        "for name in NODE_PARAMS:\n"
        "    if name != 'mock_hardware_node': cp._factory(name)\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('musculo_control.sim',"
        " 'musculo_control.testing', 'musculo_control.tick_benchmark')))\n"
        "print(bad); sys.exit(1 if bad else 0)\n")
    pytest.importorskip("rclpy")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_mock_arms_node_loads_the_simulation_but_not_the_test_side():
    code = ("import sys\nimport musculo_control.nodes.mock_hardware_node\n"
            "print(sorted(m for m in sys.modules if m.startswith(('musculo_control.testing',"
            " 'musculo_control.tick_benchmark'))))\n"
            "sys.exit(0 if 'musculo_control.sim.mock_arm' in sys.modules else 1)\n")
    pytest.importorskip("rclpy")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
