"""The runs of a study: the paper's experiments over controllers, seeds and config grids, run in
parallel and cached on disk (ROS-free); :mod:`~musculo_control.sim.study_summary` summarises
them as min / median / max per metric and condition.

A study is a list of :class:`RunSpec`: one experiment with one controller on one config folder
with a set of ``--set`` overrides (the seed is one of them), labelled with its *condition* (a
named set of overrides, e.g. "model error x2"). :func:`run_study` executes the runs that are not
in the cache yet through an :class:`Engine` (in this process, on local cores, or on a Dask
cluster), stores each result as it arrives (an interrupted study resumes where it stopped), and
:func:`~musculo_control.sim.study_summary.summarise` reduces the results.

**The cache key is the run's full parameters**: the bytes of every file of the config folder,
the overrides (parsed, so ``1e-2`` and ``0.01`` are one key), the experiment, the controller,
and a fingerprint of the package's source code (a change of code reruns everything; a change of
nothing reruns nothing).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from musculo_control.config.parser import parse_override
from musculo_control.errors import InputError
from musculo_control.sim.experiments import metrics_json, run_experiment
from musculo_control.sim.scoring import judge
from musculo_control.sim.setup import Overrides, load_setup
from musculo_control.sim.study_config import ConditionConfig

#: The package's own folder: its source files make the code fingerprint.
_PACKAGE = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class RunSpec:
    """One run of a study (picklable: it crosses process and machine boundaries)."""

    config_dir: str
    experiment: str
    controller: str
    condition: str  # label only, not part of the cache key
    seed: int
    overrides: tuple[str, ...]  # the condition's and the user's, without the seed


@dataclass
class StudyResult:
    """Every run's record (see :func:`execute`), in study order."""

    specs: list[RunSpec]
    records: list[dict[str, Any]]
    executed: int  # runs simulated now (the others came from the cache)
    wall_s: float
    keys: list[str] = field(default_factory=list)


# -- keys and cache ------------------------------------------------------------------------------
def _folder_digest(folder: Path) -> str:
    """sha256 over every file of ``folder`` (relative path and bytes), in path order."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def code_fingerprint() -> str:
    """sha256 over the package's Python source files: results depend on the code."""
    h = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        h.update(path.relative_to(_PACKAGE).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def run_key(spec_: RunSpec, folder_digest: str, code: str) -> str:
    """The cache key of one run: a hash of its full parameters (module docstring)."""
    parsed = sorted((k, json.dumps(v, sort_keys=True)) for k, v in
                    (parse_override(o) for o in spec_.overrides))
    doc = {"config": folder_digest, "experiment": spec_.experiment,
           "controller": spec_.controller, "seed": spec_.seed, "overrides": parsed,
           "code": code}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


class Cache:
    """One JSON file per finished run under ``folder``, written atomically."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        """The file of the record with key ``key``."""
        return self.folder / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored record of ``key``, or ``None``."""
        try:
            return dict(json.loads(self.path(key).read_text()))
        except (OSError, ValueError):
            return None  # absent or half-written by a killed study: run it again

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Store a record under ``key`` (written whole, then renamed: never half a file)."""
        tmp = self.path(key).with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(record, indent=1, default=_jsonable))
        tmp.replace(self.path(key))


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


# -- one run -------------------------------------------------------------------------------------
def execute(spec_: RunSpec) -> dict[str, Any]:
    """Run one spec and return its record: metrics (trajectory: per pose), the verdict against
    the targets, problems, wall and simulated time, and the CPU time of the whole run (its
    set-up included; this process's, so a worker's own on any engine). Used by every engine
    (top-level, so that worker processes and Dask workers can import it)."""
    c0 = time.process_time()
    items = [*spec_.overrides, f"mock_arm.seed={spec_.seed}"]
    setup = load_setup(Path(spec_.config_dir), Overrides.parse(items))
    t0 = time.perf_counter()
    runs = run_experiment(setup, spec_.experiment, spec_.controller, progress=False)
    metrics = metrics_json(spec_.experiment, runs)
    verdict = judge(spec_.experiment, spec_.controller, metrics, setup.experiments.targets)
    return {"experiment": spec_.experiment, "controller": spec_.controller,
            "condition": spec_.condition, "seed": spec_.seed,
            "overrides": list(spec_.overrides), "metrics": metrics, "verdict": verdict,
            "wall_s": time.perf_counter() - t0,
            "simulated_s": sum(r.simulated_s for r in runs),
            "cpu_s": time.process_time() - c0}


# -- engines -------------------------------------------------------------------------------------
class Engine(Protocol):
    """Runs specs somewhere and yields (index, record) as each finishes."""

    def map_unordered(self, specs: Sequence[RunSpec]) -> Iterator[tuple[int, dict[str, Any]]]:
        ...


class SerialEngine:
    """In this process, one after the other (debugging, tests, ``--workers 1``)."""

    def map_unordered(self, specs: Sequence[RunSpec]) -> Iterator[tuple[int, dict[str, Any]]]:
        for i, s in enumerate(specs):
            yield i, execute(s)


class LocalEngine:
    """Worker processes on this machine (``concurrent.futures``; spawned, so that no worker
    inherits the parent's MuJoCo or OSQP state)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1

    def map_unordered(self, specs: Sequence[RunSpec]) -> Iterator[tuple[int, dict[str, Any]]]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(self.workers, max(len(specs), 1)),
                                 mp_context=ctx) as pool:
            futures = {pool.submit(execute, s): i for i, s in enumerate(specs)}
            try:
                for fut in as_completed(futures):
                    yield futures[fut], fut.result()
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise


class DaskEngine:
    """A Dask cluster (the optional extra ``cluster``): ``address`` of its scheduler, or a
    ``distributed.Client`` already made (a test's LocalCluster); None starts a LocalCluster of
    ``workers`` single-threaded worker processes here."""

    def __init__(self, address: str | None = None, workers: int | None = None,
                 client: Any = None) -> None:
        try:
            import distributed
        except ImportError as exc:  # the optional extra is not installed
            raise InputError("--engine dask", "Dask's distributed scheduler: pip install "
                             "'musculo_control[cluster]'", "not installed") from exc
        self._distributed = distributed
        self.address, self.workers, self.client = address, workers, client

    def map_unordered(self, specs: Sequence[RunSpec]) -> Iterator[tuple[int, dict[str, Any]]]:
        distributed = self._distributed
        own = None
        client = self.client
        if client is None:
            if self.address:
                client = own = distributed.Client(self.address)
            else:
                cluster = distributed.LocalCluster(
                    n_workers=self.workers or os.cpu_count() or 1, threads_per_worker=1,
                    processes=True, dashboard_address=None)
                client = own = distributed.Client(cluster)
        try:
            # pure=False: a run is cheap to describe but its key is ours, not Dask's hash
            futures = [client.submit(execute, s, pure=False) for s in specs]
            index = {f.key: i for i, f in enumerate(futures)}
            for fut in distributed.as_completed(futures):
                yield index[fut.key], fut.result()
        finally:
            if own is not None:
                cluster = own.cluster
                own.close()
                if cluster is not None:
                    cluster.close()


# -- the study -----------------------------------------------------------------------------------
def expand(config_dir: Path, experiments: Sequence[str], controllers: Sequence[str],
           conditions: Sequence[ConditionConfig],
           extra: Sequence[str] = ()) -> list[RunSpec]:
    """Every (condition, seed, experiment, controller) as a spec; ``extra`` overrides apply to
    all (e.g. shorter experiments while exploring)."""
    out = []
    for cond, exp, ctrl in itertools.product(conditions, experiments, controllers):
        for seed in cond.seeds:
            out.append(RunSpec(str(config_dir), exp, ctrl, cond.name, int(seed),
                               (*cond.set, *extra)))
    return out


def grid_conditions(params: Sequence[tuple[str, Sequence[Any]]],
                    seeds: Sequence[int]) -> list[ConditionConfig]:
    """One condition per combination of ``params`` values (``musculo study --grid``)."""
    if not params:
        return [ConditionConfig(name="nominal", seeds=tuple(seeds))]
    out = []
    for combo in itertools.product(*[values for _, values in params]):
        items = tuple(f"{key}={_text(v)}" for (key, _), v in zip(params, combo))
        out.append(ConditionConfig(name=", ".join(items), seeds=tuple(seeds), set=items))
    return out


def _text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def run_study(specs: Sequence[RunSpec], cache: Cache, engine: Engine, *,
              progress: Callable[[int, int], None] | None = None) -> StudyResult:
    """Run what the cache lacks through ``engine``; every result is cached as it arrives."""
    t0 = time.perf_counter()
    code = code_fingerprint()
    digests: dict[str, str] = {}
    keys = []
    for s in specs:
        if s.config_dir not in digests:
            digests[s.config_dir] = _folder_digest(Path(s.config_dir))
        keys.append(run_key(s, digests[s.config_dir], code))
    records: list[dict[str, Any] | None] = [cache.get(k) for k in keys]
    todo = [i for i, r in enumerate(records) if r is None]
    done = len(specs) - len(todo)
    if progress is not None:
        progress(done, len(specs))
    for j, record in engine.map_unordered([specs[i] for i in todo]):
        i = todo[j]
        cache.put(keys[i], record)
        records[i] = record
        done += 1
        if progress is not None:
            progress(done, len(specs))
    return StudyResult(list(specs), [r for r in records if r is not None], len(todo),
                       time.perf_counter() - t0, keys)


class ProgressBar:
    """A progress bar on stderr (tqdm), counting cached runs as done."""

    def __init__(self, label: str, enabled: bool = True) -> None:
        self.label, self.enabled = label, enabled
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=done, desc=self.label, unit="run",
                             file=sys.stderr, dynamic_ncols=True, smoothing=0.1)
        else:
            self._bar.update(done - self._bar.n)
        if done >= total:
            self._bar.close()
