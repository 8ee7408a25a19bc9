"""The logic never imports rclpy: only musculo_control.nodes may (ARCHITECTURE.md)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import musculo_control


def test_importing_every_logic_module_leaves_rclpy_unloaded():
    names = [m.name for m in pkgutil.walk_packages(musculo_control.__path__, "musculo_control.")
             if not m.name.startswith("musculo_control.nodes") and not m.name.endswith("__main__")]
    code = ("import sys, importlib\n"
            f"for n in {names!r}: importlib.import_module(n)\n"
            "bad = [m for m in sys.modules if m == 'rclpy' or m.startswith('rclpy.')]\n"
            "print(bad); sys.exit(1 if bad else 0)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
