"""The config parser's old address, kept only for the modules of nodes/ and benchmarks/ that
still import it (issue 11 works there); the parser is :mod:`musculo_control.config.parser`."""

from musculo_control.config.parser import load, parse, read_yaml, spec  # noqa: F401
