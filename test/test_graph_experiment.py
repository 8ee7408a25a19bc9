"""``musculo experiment --graph`` on the mock graph, on simulated time (lockstepped, as the
other graph tests: the figures are the loop's, not the load's): the arm brought to the start
pose through the controller, the controller switched in, the run recorded and scored; its
metrics agree with the runner's (``musculo simulate``) for the same settings and seed within
the tolerances below. Short versions of the experiments (durations from ``--set``). At wall
clock the same runs measured within these bounds on a quiet machine (doc/ros.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from graph_harness import domain_id

from musculo_control.paths import default_config_dir
from musculo_control.sim.experiments import run_disturbance, run_nullspace, run_trajectory
from musculo_control.sim.setup import Overrides, load_setup

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

#: metric -> (absolute, relative) tolerance of the graph's value against the runner's. The graph
#: starts from the pose reached over the graph (within graph.reach_tolerance_rad, 0.05 rad, where
#: the runner places the arm exactly), after eq. 16 held it and the switch ramped the tensions
#: in, at wall clock (each hop a few hundred microseconds, the 20 Hz snapshot up to 50 ms old):
#: measured differences were 0.4 cm of elbow drop, 6-10 % of ||a||, 7 % of the gauge's peak
#: force and 1-4 mm of the pushed hand's largest deviation (one sample's extreme); the bounds
#: are about twice those, the hand's 1.5 times.
TOLERANCES = {
    "nullspace": {"activation_norm_start": (0.0, 0.25), "activation_norm_end": (0.0, 0.25),
                  "elbow_drop_m": (0.015, 0.0), "hand_drift_m": (0.01, 0.0)},
    "disturbance": {"elbow_displacement_m": (0.005, 0.0), "peak_push_force_N": (0.0, 0.25),
                    "max_hand_deviation_m": (0.006, 0.0)},
    # B from one pose (orientation stiffness off in both, as experiments.yaml has it): measured
    # on simulated time, from pose B 0.2 mm (mean), 1.1 mm (max), 0.4 mm (final); from pose C
    # 1.1, 0.4 and 0 mm. One CI run measured 4.4 / 7.7 mm (mean / max): the hand started 1 cm
    # from the run's first goal (the start pose is reached within 0.05 rad); since the client
    # holds that goal until the hand is there, 0.0-0.8 / 0.0-2.4 / 0.0-1.8 mm in four runs,
    # 3.2 / 6.9 / 2.4 mm once with two more graphs and busy loops running beside it (the
    # start pose reached 0.044 rad off, the lockstep's waits giving up). With the orientation
    # stiffness on over the graph (before the QP node took use_goal_orientation at run time)
    # the mean was 7 mm worse from C.
    "trajectory": {"mean_tracking_error_m": (0.005, 0.0), "max_tracking_error_m": (0.010, 0.0),
                   "final_error_m": (0.005, 0.0)},
}
SETTINGS = {
    "nullspace": ["experiments.nullspace.duration_s=2.5"],
    "disturbance": ["experiments.disturbance.hold_s=1.5"],
    "trajectory": [],  # 4 s: settle, move and hold
}
#: the start pose of the trajectory's run
POSE = "trajectory_b"


#: At wall clock (the graph as the command starts it: the real-time profile, as arm.launch.py
#: runs the robot's), B from pose B, off the runner's mean / max / final tracking error:
#: 0.6 / 0.2 / 0.3 mm on a quiet machine, full length (doc/results/graph.md); 0.0 / 0.4 / 0.4
#: and 3.8 / 6.3 / 3.1 mm in two runs under a busy loop per core, before the client held the
#: run's first goal until the hand was there (experiments.yaml graph.settle_tolerance_m), and
#: 0.2-0.5 / 0.2-0.4 / 0.1-0.6 mm quiet and 1.1 / 2.7 / 0.7 mm loaded since. The bounds are
#: about twice the loaded figures before it.
WALL_CLOCK_TOLERANCES = {"mean_tracking_error_m": (0.008, 0.0),
                         "max_tracking_error_m": (0.015, 0.0), "final_error_m": (0.008, 0.0)}


def _graph_run(experiment: str, tmp_path, domain: int, sim_time: bool = True) -> dict:
    """The command's one run of ``experiment`` (osc): its metrics.json entry."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "musculo_control.cli", "experiment", experiment, "--graph",
           "--controller", "osc", "--out", str(out)] + (["--sim-time"] if sim_time else [])
    run_name = f"{experiment}_osc"
    if experiment == "trajectory":
        cmd += ["--pose", POSE]
        run_name += f"_{POSE}"
    for item in SETTINGS[experiment]:
        cmd += ["--set", item]
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = json.loads((out / "metrics.json").read_text())["runs"]
    assert len(runs) == 1 and "error" not in runs[0], runs
    assert (out / run_name / "bag" / "metadata.yaml").exists()
    assert (out / f"{experiment}.png").stat().st_size > 10_000  # musculo simulate's figure
    print(done.stdout[-4000:])  # what the command said, shown when a test fails
    return runs[0]


@pytest.mark.parametrize("experiment", ["nullspace", "disturbance", "trajectory"])
def test_an_experiment_over_the_graph_scores_as_the_runner_does(experiment, tmp_path):
    setup = load_setup(default_config_dir(), Overrides.parse(SETTINGS[experiment]))
    if experiment == "trajectory":
        runner = run_trajectory(setup, "osc", POSE)
    else:
        runner = (run_nullspace if experiment == "nullspace" else run_disturbance)(setup, "osc")
    graph = _graph_run(experiment, tmp_path, domain_id())["metrics"]
    assert graph["unsafe_ticks"] == 0 and runner.metrics["unsafe_ticks"] == 0
    if experiment == "disturbance":
        assert graph["start_held"] and graph["contact_held_final"], graph
    _assert_within(experiment, graph, runner.metrics, TOLERANCES[experiment])


def _assert_within(experiment: str, graph: dict, runner: dict, tolerances: dict) -> None:
    off = {}
    for name, (absolute, relative) in tolerances.items():
        ours, theirs = float(graph[name]), float(runner[name])
        if abs(ours - theirs) > absolute + relative * abs(theirs):
            off[name] = (ours, theirs)
        print(f"{experiment} {name}: graph {ours:.5g}, runner {theirs:.5g}")
    assert not off, f"graph vs runner beyond the tolerances: {off}"


def test_at_wall_clock_the_trajectory_scores_as_the_runner_does_within_wider_bounds(tmp_path):
    """The same comparison at wall clock, as a lab runs it: the graph's timing (each hop's
    latency, the snapshot's age, the machine's other work) is part of what is measured."""
    setup = load_setup(default_config_dir(), Overrides.parse([]))
    runner = run_trajectory(setup, "osc", POSE)
    graph = _graph_run("trajectory", tmp_path, domain_id(), sim_time=False)["metrics"]
    assert graph["start_held"] and graph["unsafe_ticks"] == 0, graph
    _assert_within("trajectory", graph, runner.metrics, WALL_CLOCK_TOLERANCES)


def test_a_bag_recorded_by_a_plain_subscriber_scores_as_the_commands_own(tmp_path):
    """While the command runs, this process records the same topics with a recorder of its
    own (a plain rclpy subscriber, as `ros2 bag record` is); `musculo score` of that bag, told
    the run's t = 0, gives the command's numbers: to 0.2 % on a quiet machine; 12 % here,
    since a recorder on a loaded computer may miss samples at the run's edges, and the first
    and last samples decide the drift and the drop (measured 6.6 % of the drift joint's
    0.12 rad under two busy loops; the bound is about twice that)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from musculo_control.commands.experiment import MOCK_TRUTH, RECORDED
    from musculo_control.nodes.bag_recorder import BagRecorder

    domain = domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node("independent_recorder", context=context, parameter_overrides=[
        Parameter("use_sim_time", Parameter.Type.BOOL, True)])
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    bag = tmp_path / "independent"
    recorder = BagRecorder(node, bag, {**RECORDED, **MOCK_TRUTH})
    try:
        run = _graph_run("nullspace", tmp_path, domain)
    finally:
        recorder.close()
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
    out = tmp_path / "independent.json"
    done = subprocess.run([sys.executable, "-m", "musculo_control.cli", "score", str(bag),
                           "--experiment", "nullspace", "--controller", "osc",
                           "--t0", repr(run["t0_s"]), "--json", str(out),
                           *[a for item in SETTINGS["nullspace"] for a in ("--set", item)]],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    theirs = json.loads(out.read_text())["metrics"]
    ours = run["metrics"]
    for name in ("activation_norm_start", "activation_norm_end", "elbow_drop_m",
                 "hand_drift_m", "drift_joint_change_rad"):
        assert abs(theirs[name] - ours[name]) <= 1e-3 + 0.12 * abs(ours[name]), \
            (name, theirs[name], ours[name])


def test_the_excitation_tour_over_the_graph_records_what_identify_reads(tmp_path):
    """`musculo experiment excitation --graph`: rehearsed on the runner, then run through the
    QP over the mock graph; its bag reads as `musculo identify` reads one, and the recorded arm
    went to every waypoint (the hand from the recorded joint angles within 3 cm of each: the
    brisk moves lag, the holds catch up)."""
    from musculo_control.sim.identify.excitation import ExcitationSchedule
    from musculo_control.sim.identify.recording import read_recording

    out = tmp_path / "out"
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain_id())}
    done = subprocess.run([sys.executable, "-m", "musculo_control.cli", "experiment",
                           "excitation", "--graph", "--sim-time", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "rehearsed on the runner's mock arm: 0 ticks in a stop" in done.stdout
    runs = json.loads((out / "metrics.json").read_text())["runs"]
    assert len(runs) == 1 and "error" not in runs[0], runs
    setup = load_setup(default_config_dir(), Overrides.parse([]))
    schedule = ExcitationSchedule(setup)
    recording = read_recording(out / "excitation_osc" / "bag", setup.robot)
    recording.check(setup.robot.arm.n_joints, len(setup.robot.muscle_names))
    assert recording.duration_s >= schedule.duration_s - 0.5, recording.duration_s
    hands = np.array([setup.robot.arm.hand_pose(q)[0] for q in recording.q_rad[::10]])
    for _, _, _, point in schedule.moves:
        closest = float(np.linalg.norm(hands - point, axis=1).min())
        assert closest < 0.03, (point, closest)
    state = [t for t, n in runs[0]["messages"].items() if "controller/state" in t]
    assert state and runs[0]["messages"][state[0]] > 0
