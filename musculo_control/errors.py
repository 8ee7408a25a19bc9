"""One root exception for the project, with subclasses that carry the offending values."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


class ConfigErrors(ConfigError):
    """Every error found in one reading of the configuration, raised together so that a folder
    is fixed in one pass: ``errors`` holds each :class:`ConfigError` (file order); this error's
    own fields are the first one's. The message has one line per error."""

    def __init__(self, errors: list[ConfigError] | tuple[ConfigError, ...]) -> None:
        flat: list[ConfigError] = []
        for e in errors:
            flat.extend(e.errors if isinstance(e, ConfigErrors) else (e,))
        if not flat:
            raise ValueError("ConfigErrors needs at least one error")
        self.errors: tuple[ConfigError, ...] = tuple(flat)
        first = flat[0]
        self.file, self.key, self.where = first.file, first.key, first.where
        self.expected, self.received = first.expected, first.received
        lines = [f"{len(flat)} configuration errors:", *(f"  {e}" for e in flat)]
        Exception.__init__(self, "\n".join(lines))


def raise_collected(errors: list[ConfigError]) -> None:
    """Raise nothing, the one error, or :class:`ConfigErrors` of all of them."""
    if len(errors) == 1 and not isinstance(errors[0], ConfigErrors):
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)


class ErrorCollector:
    """Independent configuration checks run one after another, every :class:`ConfigError`
    kept, all raised together by :meth:`raise_any`: a folder with several mistakes is fixed in
    one run instead of one run per mistake.

    Run a check whose failure leaves nothing for later checks inside :meth:`checking`; one that
    later checks depend on outside it, or follow it with :meth:`raise_any`."""

    def __init__(self) -> None:
        self.errors: list[ConfigError] = []

    def add(self, error: ConfigError) -> None:
        self.errors.append(error)

    @contextmanager
    def checking(self) -> Iterator[None]:
        """Keep a :class:`ConfigError` raised in the block instead of letting it through."""
        try:
            yield
        except ConfigError as exc:
            self.errors.append(exc)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_any(self) -> None:
        """Raise every error kept so far (:func:`raise_collected`), or nothing."""
        raise_collected(self.errors)


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
