"""``reliability.yaml``: the fault matrix (``faults``, :mod:`musculo_control.sim.fault_matrix`)
and the soak (``soak``, :mod:`musculo_control.sim.soak`), each read on its own. The loop itself is
the experiments' one (:class:`~musculo_control.sim.rig.Rig`): every run is supervised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from musculo_control.config.parser import load_section

T = TypeVar("T")

#: Top-level sections of reliability.yaml.
RELIABILITY_SECTIONS = ("faults", "soak")


def load_reliability_section(config_dir: Path, key: str, cls: type[T],
                             overrides: dict[str, Any] | None = None) -> T:
    """Parse section ``key`` of ``reliability.yaml`` into ``cls`` (dotted overrides allowed,
    e.g. ``{"soak.duration_s": 60}``)."""
    return load_section(cls, Path(config_dir) / "reliability.yaml", key, RELIABILITY_SECTIONS,
                        overrides)
