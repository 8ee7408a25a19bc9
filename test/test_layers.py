"""The package's layers run one way (doc/design.md): no import from a lower layer up to a
higher one, no import cycle between modules, and the robot's path loads no simulator.

Imports are read from the source with ``ast``, function-level ones and those under
``TYPE_CHECKING`` included: a lazy import is a dependency all the same.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "musculo_control"

#: The layers, bottom first: a module may import its own layer and the ones below it. Each
#: name is a top-level module or a subpackage of musculo_control (doc/design.md, "Layers").
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "arrays", "stamps", "paths", "provenance", "realtime", "records", "stopping",
     "msg_types"),
    ("config",),
    ("streams",),
    ("model",),
    ("estimation",),
    ("control",),
    ("tick_benchmark",),
    ("hardware",),
    ("safety",),
    ("loop",),
    ("messages", "serialized"),
    ("sim",),
    ("nodes",),
    ("testing",),
    ("commands",),
    ("cli", "__main__"),
)
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[tuple[str, int]]]:
    """module -> the musculo_control modules it imports, with the line."""
    out: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        module = _module(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.startswith("musculo_control"):
                # `from musculo_control.loop import build` imports the module loop.build
                out[module] |= {(node.module, node.lineno)} | {
                    (f"{node.module}.{a.name}", node.lineno) for a in node.names}
            elif isinstance(node, ast.Import):
                out[module] |= {(a.name, node.lineno) for a in node.names
                                if a.name.startswith("musculo_control")}
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_part_of_the_package_has_a_layer():
    names = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert names - set(RANK) == set(), "add it to LAYERS here and in doc/design.md"
    assert set(RANK) - names == set(), "a layer that is gone"


def test_no_import_runs_up_a_layer():
    upward = []
    for module, targets in _imports().items():
        here = _layer(module)
        for target, line in targets:
            there = _layer(target)
            if here and there in RANK and RANK[there] > RANK[here]:
                upward.append(f"{module}:{line} ({here}) imports {target} ({there})")
    assert upward == [], "\n".join(sorted(upward))


def test_no_modules_import_each_other_in_a_circle():
    graph = {m: {t for t, _ in ts} for m, ts in _imports().items()}
    modules = set(graph) | {_module(p) for p in PACKAGE.rglob("*.py")}
    graph = {m: {t for t in graph.get(m, ()) if t in modules and t != m} for m in modules}
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    assert circles == []


_WITHOUT_MUJOCO = """
import sys

class NoMuJoCo:
    def find_spec(self, name, path=None, target=None):
        if name == "mujoco" or name.startswith("mujoco."):
            raise ImportError("no MuJoCo here")
        return None

sys.meta_path.insert(0, NoMuJoCo())
from musculo_control.loop import build
from musculo_control.loop.parts import load_parts
from musculo_control.paths import default_config_dir
import musculo_control.nodes.control_process
import musculo_control.nodes.activation_qp_node
import musculo_control.nodes.dynamics_node
import musculo_control.nodes.potentiometer_node
import musculo_control.nodes.tendon_driver_node

parts = load_parts(default_config_dir())
build.control_step(parts, "osc")
build.dynamics_stage(parts)
build.tendon_stage(parts)
build.potentiometer_stage(parts)
print(sorted(m for m in sys.modules if m.startswith(("mujoco", "musculo_control.sim"))))
"""


def test_the_robots_path_runs_without_the_simulator():
    """A URDF robot's controller, dynamics and driver nodes, and the stages they build, with
    MuJoCo not installed: nothing of the simulation is loaded."""
    pytest.importorskip("rclpy")
    done = subprocess.run([sys.executable, "-c", _WITHOUT_MUJOCO], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


#: Packages whose functions must each fit on a screen (doc/design.md): the rules of the robot.
SHORT_FUNCTIONS = ("safety", "control", "model", "hardware", "loop")
MAX_FUNCTION_LINES = 60


def test_the_rules_are_short_enough_to_read():
    long = []
    for package in SHORT_FUNCTIONS:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} "
                                    f"({lines} lines)")
    assert long == [], "\n".join(long)
