"""``bench.yaml`` of a config folder: what the benchmarks time and the targets they judge (on a
quiet machine). ``musculo bench`` and the scripts of ``benchmarks/`` read it; ``musculo init``
writes and validates it with the rest of a config folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from musculo_control.config.parser import load, spec
from musculo_control.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class NodeCpuTargets:
    """CPU share of one core per node of the graph at real time (issue 11), judged by
    ``benchmarks/bench_graph.py`` on a quiet machine."""

    tendon_driver_node: float = spec(0.10, gt=0.0, doc="at the driver rate [cores]")
    potentiometer_node: float = spec(0.10, gt=0.0, doc="at the sensor rate [cores]")
    activation_qp_node: float = spec(0.15, gt=0.0, doc="at the control rate [cores]")
    dynamics_node: float = spec(0.05, gt=0.0, doc="at the dynamics rate [cores]")


@dataclass(frozen=True, kw_only=True)
class BenchTargets:
    """The targets the benchmarks judge (issue 11), on a quiet machine."""

    tick_p50_ms: float = spec(0.12, gt=0.0, doc="the robot's tick (eq. 11), median [ms]")
    tick_p99_ms: float = spec(0.25, gt=0.0, doc="the robot's tick, 99th percentile [ms]")
    speedup_vs_baseline: float = spec(10.0, gt=0.0, doc="tick p50 against the set-up-every-"
                                                        "tick baseline's [1]")
    snapshot_p99_ms: float = spec(0.2, gt=0.0, doc="dynamics snapshot, 99th percentile [ms]")
    fused_p99_ms: float = spec(0.5, gt=0.0, doc="snapshot and tick together at every tick, "
                                                "99th percentile [ms]")
    scaling_p99_ms: tuple[tuple[float, ...], ...] = spec(
        ((120, 28, 1.5), (300, 40, 2.0)),
        doc="[muscles, joints, tick p99 in ms] of synthetic arms, the solver qp.solver picks")
    node_cpu_share: NodeCpuTargets = spec(NodeCpuTargets(), doc="per node of the graph")
    controller_cpu_share: float = spec(
        0.35, gt=0.0, doc="the controller's nodes (all but the mock arm), a process each, "
                          "together [cores]")
    driver_node_rss_mb: float = spec(80.0, gt=0.0, doc="RSS of the potentiometer and of the "
                                                       "tendon-driver node's process [MB]")


@dataclass(frozen=True, kw_only=True)
class BenchConfig:
    """``bench.yaml`` of a config folder: what is timed, and when a verdict is given."""

    ticks: int = spec(2000, ge=1, doc="timed ticks per case of the shipped arm")
    baseline_ticks: int = spec(500, ge=1, doc="timed ticks of the set-up-every-tick baselines")
    scaling_ticks: int = spec(300, ge=1, doc="timed ticks per synthetic arm and solver")
    warmup_ticks: int = spec(50, ge=0, doc="untimed ticks before each case")
    calls: int = spec(5000, ge=1, doc="timed calls per case of benchmarks/bench_*.py")
    seed: int = spec(0, ge=0, doc="seed of the joint trajectory and poses")
    amplitude_rad: float = spec(0.15, gt=0.0, doc="amplitude of the seeded joint sinusoids [rad]")
    goal_lead_s: float = spec(0.05, ge=0.0, doc="the goal runs this far ahead on the path [s]")
    gc_freeze: bool = spec(True, doc="gc.freeze() after each set-up, as the QP node does "
                                     "(ros_params.yaml gc_freeze), so that a full collection "
                                     "of the set-up's objects does not land in a timed tick")
    quiet_load_average: float = spec(
        0.5, gt=0.0, doc="1-min load average at the start above which no target is judged; "
                         "at the end the benchmark's own process may add 1")
    graph_duration_s: float = spec(20.0, gt=2.0, doc="benchmarks/bench_graph.py: seconds the "
                                                   "graph is watched at real time [s]")
    graph_baseline_s: float = spec(5.0, gt=0.0, doc="benchmarks/bench_graph.py: seconds of the "
                                                   "bare timer loop baseline [s]")
    scaling_arms: tuple[tuple[int, ...], ...] = spec(
        ((30, 7), (60, 14), (63, 38), (120, 28), (300, 40)),
        doc="[muscles, joints] of synthetic arms (model/synthetic.py)")
    solver_qps: int = spec(300, ge=1, doc="benchmarks/bench_solvers.py: consecutive QPs per "
                                          "sequence")
    solver_arms: tuple[tuple[int, ...], ...] = spec(
        ((30, 7), (63, 38), (120, 28), (300, 40)),
        doc="benchmarks/bench_solvers.py: [muscles, joints] of the synthetic arms whose QPs are "
            "recorded (the shipped arm's come from a closed-loop run)")
    targets: BenchTargets = spec(BenchTargets(), doc="issue 11")

    def check(self, file: str, key: str) -> None:
        from musculo_control.model.synthetic import fewest_muscles

        for field in ("scaling_arms", "solver_arms"):
            for i, arm in enumerate(getattr(self, field)):
                if len(arm) != 2 or arm[1] < 2 or arm[0] < fewest_muscles(arm[1]):
                    raise ConfigError(file, f"{key}.{field}[{i}]".lstrip("."),
                                      "[muscles, joints] with joints >= 2 and muscles >= joints "
                                      "+ ceil(joints / 2)", list(arm))
        for i, row in enumerate(self.targets.scaling_p99_ms):
            if len(row) != 3:
                raise ConfigError(file, f"{key}.targets.scaling_p99_ms[{i}]".lstrip("."),
                                  "[muscles, joints, p99 ms]", list(row))


def load_bench_config(config_dir: Path) -> BenchConfig:
    """``bench.yaml`` of ``config_dir``; the defaults above when the folder has none."""
    path = Path(config_dir) / "bench.yaml"
    return load(BenchConfig, path) if path.is_file() else BenchConfig()
