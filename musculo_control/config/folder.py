"""Every error of a config folder in one pass: the mechanism.

The loaders read a folder file by file, and each stops at the first file that is wrong. So that
an old or hand-written folder is fixed in one run, a loader of several files first checks every
file it reads against its schema (unknown, renamed and missing keys, types, ranges, lengths:
all that needs no other file), collecting every error, and then builds; when the schemas
failed it builds anyway, so that its checks across files (a joint name against the URDF, a
tension against the actuator) are reported with them, each once, all raised together as one
:class:`~musculo_control.errors.ConfigErrors`, one line each with file, line, key, expected and
received.

Which files a loader reads, and with which schema, is the loader's layer's to say: the robot's
two (:func:`musculo_control.model.robot.check_robot_files`), the control loop's five
(:func:`musculo_control.loop.parts.check_loop_files`), a simulated run's seven
(:func:`musculo_control.sim.setup.check_run_files`). This module knows none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from musculo_control.errors import ConfigError, ConfigErrors, ErrorCollector, raise_collected

T = TypeVar("T")


def load_checked(check: Callable[[ErrorCollector], object], build: Callable[[], T]) -> T:
    """``check(found)`` (the schemas of every file, each error added to ``found``), then
    ``build()`` (a loader and its checks across files). When the schemas fail, ``build`` runs
    anyway: its own errors are raised with theirs (each once), and a failure that only follows
    from theirs (a file it cannot read) adds nothing."""
    found = ErrorCollector()
    check(found)
    try:
        found.raise_any()
    except ConfigError as exc:
        first = list(exc.errors) if isinstance(exc, ConfigErrors) else [exc]
        try:
            build()
        except ConfigError as more:
            seen = {str(e) for e in first}
            extra = more.errors if isinstance(more, ConfigErrors) else (more,)
            raise_collected(first + [e for e in extra if str(e) not in seen])
        except Exception:  # noqa: BLE001 - a consequence of the schema errors: report those
            pass
        raise exc
    return build()
