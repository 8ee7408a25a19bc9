"""One root exception for the project, with subclasses that carry the offending values."""

from __future__ import annotations

from typing import Any


class MusculoError(Exception):
    """Root of every error raised by musculo_control."""


class _InConfig(Exception):
    """Where in the configuration and what: the file, the key (a dotted path such as
    ``muscles[3].path[0].link``), where it is (``where``: "line 3, column 5" in the file, or
    "set on the command line"), what was expected and what was received."""

    def __init__(self, file: str, key: str, expected: str, received: Any = None, *,
                 where: str = "") -> None:
        self.file = str(file)
        self.key = key
        self.where = where
        self.expected = expected
        self.received = received
        got = "" if received is None else f"; received {received!r}"
        at = f" ({where})" if where else ""
        super().__init__(f"{self.file}: {key}{at}: expected {expected}{got}")


class ConfigError(_InConfig, MusculoError):
    """A configuration file or value is malformed or inconsistent (fields of :class:`_InConfig`)."""


class InputError(MusculoError, ValueError):
    """A run-time input (joint vector, goal, message) has the wrong shape or a non-finite value."""

    def __init__(self, what: str, expected: str, received: Any = None) -> None:
        self.what = what
        self.expected = expected
        self.received = received
        got = "" if received is None else f"; received {received!r}"
        super().__init__(f"{what}: expected {expected}{got}")


class ConfigWarning(_InConfig, UserWarning):
    """A configuration value that works but is likely not what was meant (the fields of
    :class:`ConfigError`); issued with :func:`warnings.warn`."""
