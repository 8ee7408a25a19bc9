"""``experiments.yaml`` ``studies``: named studies over controllers, seeds and conditions (run by
``musculo study NAME``; :mod:`musculo_control.sim.study_runs` runs them)."""

from __future__ import annotations

from dataclasses import dataclass

from musculo_control.config.parser import parse_override, spec
from musculo_control.control.controller import CONTROLLER_NAMES
from musculo_control.errors import ConfigError, InputError


@dataclass(frozen=True, kw_only=True)
class ConditionConfig:
    """One condition of a study: a name, the seeds, and the overrides every run gets."""

    name: str = spec(doc="label in the tables (e.g. 'model error x2')")
    seeds: tuple[int, ...] = spec(min_length=1, doc="mock_arm.seed values, one run each")
    set: tuple[str, ...] = spec((), doc="FILE.KEY=VALUE overrides, as --set takes them")

    def check(self, file: str, key: str) -> None:
        for i, item in enumerate(self.set):
            try:
                parse_override(item, f"{key}.set[{i}]")
            except InputError as exc:
                raise ConfigError(file, f"{key}.set[{i}]", "FILE.KEY=VALUE", item) from exc
        if any(s < 0 for s in self.seeds):
            raise ConfigError(file, f"{key}.seeds", "seeds >= 0", list(self.seeds))


@dataclass(frozen=True, kw_only=True)
class StudyConfig:
    """A named study of ``experiments.yaml`` ``studies`` (run by ``musculo study NAME``)."""

    name: str = spec(doc="the study's name on the command line")
    experiments: tuple[str, ...] = spec(min_length=1, doc="experiments to run")
    controllers: tuple[str, ...] = spec(min_length=1, doc="controllers to run")
    conditions: tuple[ConditionConfig, ...] = spec(min_length=1, doc="the table's columns")
    doc: str = spec("", doc="what the study shows (the caption of its table on the results page)")

    def check(self, file: str, key: str) -> None:
        for i, c in enumerate(self.controllers):
            if c not in CONTROLLER_NAMES:
                raise ConfigError(file, f"{key}.controllers[{i}]",
                                  f"one of {list(CONTROLLER_NAMES)}", c)
        names = [c.name for c in self.conditions]
        if len(set(names)) != len(names):
            raise ConfigError(file, f"{key}.conditions", "distinct names", names)
