"""The config parser's old address, kept only for the modules of nodes/, benchmarks/,
hardware/mock_arm.py, hardware/mujoco_arm.py and sim/runner.py that still import it (issue 11
works there); the parser is :mod:`musculo_control.config.parser`."""

from musculo_control.config.parser import load, parse, read_yaml, spec  # noqa: F401
