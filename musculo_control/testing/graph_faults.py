"""The fault matrix on the running node graph (``musculo simulate faults --graph``).

The runner's matrix (:mod:`musculo_control.sim.fault_matrix`) injects each fault into the
ROS-free loop; this one injects the same faults into the real nodes, one fresh graph per fault,
on simulated time (lockstepped, see ``mock_hardware_node``), and judges them from outside, as an
operator would: by ``/diagnostics``, ``muscle_commands`` and ``hw/tendon_commands``. The scenario
is the runner's (reliability.yaml ``faults``: a 6 cm move, the fault mid-move); how each fault
gets in:

- in the mock arm (sensors, actuators, raw streams) and around the controller (QP failure, bad
  commands): the same :class:`~musculo_control.sim.faults.FaultInjector` inside the
  test-side stand-in of ``mock_hardware_node`` / ``activation_qp_node``
  (:mod:`musculo_control.testing.node_injection`), which the case's graph runs in place of that
  node, started over its ``~/inject_fault`` service;
- a hanging dynamics node (``stale_snapshot``) or controller (``command_dropout``): the process
  is stopped (SIGSTOP) for the fault's duration;
- bad goals: the observer sends them on ``hand_goal/trajectory`` instead of the good ones;
- a stray writer (``foreign_commander``, ``foreign_actuator_writer``): a node of the observer's
  (never spun) publishes ``muscle_commands`` or ``hw/tendon_commands`` for the fault's duration,
  ``stray_tension_n`` on every muscle or actuator at ``stray_rate_hz`` of simulated time, then
  its publisher is destroyed;
- the operator stop: the observer sends ``true`` on ``operator_stop``, and ``false`` when the
  fault ends.

A fault is detected at the first ``/diagnostics`` status that names one of its rules (or comes
from a node whose stage reports it, or counts a refused message of it; for a stray writer, only
a status that names the stray's node counts), or at the first minimum-tension command,
whichever is first; its safe state at the first minimum-tension command; the times are
simulated time from the injection.

``wall_clock``: the same on the wall clock, as a lab runs it (the real-time profile of
``realtime.yaml``, a process per node so that one can hang), optionally with ``busy_loops``
spinning processes that load the machine for each case.
"""

from __future__ import annotations

import math
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
from sensor_msgs.msg import JointState

from musculo_control import messages
from musculo_control.control.minimum_jerk import minimum_jerk
from musculo_control.loop.parts import LoopParts
from musculo_control.loop.state_record import STATE_CODES
from musculo_control.loop.tendon_stage import STOP_WORD
from musculo_control.nodes.graph import GraphOptions
from musculo_control.nodes.launcher import GraphProcesses, private_domain_id
from musculo_control.nodes.node_config import (
    ACTIVATION_QP_NODE,
    DYNAMICS_NODE,
    MOCK_HARDWARE_NODE,
    TENDON_DRIVER_NODE,
)
from musculo_control.nodes.ros_common import MSGS
from musculo_control.safety.supervisor_state import SupervisorState
from musculo_control.sim.fault_matrix import (
    FaultMatrixConfig,
    FaultResult,
    fault_duration,
    hand_after,
    safe_bounds,
    safe_target_ms,
)
from musculo_control.sim.faults import (
    CONTROLLER_FAULTS,
    MOCK_FAULTS,
    STRAYS,
    Stray,
    fault_kind,
)
from musculo_control.sim.setup import start_pose
from musculo_control.stamps import Stamp
from musculo_control.testing.machine_load import busy_loops
from musculo_control.testing.node_injection import STAND_INS
from musculo_control.testing.observer import GraphObserver

#: The node whose health is each stage's (FaultKind.stages names stages).
STAGE_NODES = {"potentiometers": "potentiometer_node", "tendon actuators": "tendon_driver_node",
               "dynamics": "dynamics_node", "controller": "activation_qp_node",
               "mock arm": "mock_hardware_node"}
#: Faults injected inside a node: the node (run as its stand-in of :data:`STAND_INS`).
INJECTING_NODE = {**{f: MOCK_HARDWARE_NODE for f in MOCK_FAULTS},
                  **{f: ACTIVATION_QP_NODE for f in CONTROLLER_FAULTS}}
#: Faults that hang a node instead of injecting data: (node, how).
HANGS = {"stale_snapshot": "dynamics_node", "command_dropout": "activation_qp_node"}
#: ... and the recording of the output that stops.
HANG_OUTPUTS = {"stale_snapshot": "dynamics", "command_dropout": "commands"}
#: Faults the observer sends as goals.
GOAL_FAULTS = ("goal_outside_workspace", "goal_nan")
#: The operator's fault: the observer sets the operator stop, and releases it.
OPERATOR_FAULTS = ("operator_stop",)
#: Wall-clock bounds of one case [s].
_START_TIMEOUT_S = 120.0
#: An operator acknowledges a latched fault at most this often, this many times in a case.
_ACKNOWLEDGE_EVERY_S, _ACKNOWLEDGES = 0.2, 3
#: The observer has caught up when it holds the samples sent this long before the end [s].
_CAUGHT_UP_S = 0.05


class _Case:
    """One run of the scenario on a fresh graph, with one fault (or none)."""

    def __init__(self, parts: LoopParts, cfg: FaultMatrixConfig, name: str | None,
                 workdir: Path, real_time_factor: float, wall_clock: bool = False,
                 busy_loops: int = 0) -> None:
        self.parts, self.cfg, self.name = parts, cfg, name
        self.wall_clock, self.busy_loops = wall_clock, busy_loops
        robot = parts.robot
        q0 = start_pose(robot, cfg.start_pose)
        extra: dict[str, dict[str, Any]] = {
            "mock_hardware_node": {"initial_pose_rad": [float(v) for v in q0],
                                   # a hung node (SIGSTOP) is given up on after this; a loaded
                                   # machine must not look like one
                                   "lockstep_timeout_s": 2.0}}
        if not wall_clock:  # the consumers wait as long as a sample takes under that load
            for consumer in (TENDON_DRIVER_NODE, DYNAMICS_NODE, ACTIVATION_QP_NODE):
                extra[consumer] = {"lockstep_wait_s": 0.8}
        duration = fault_duration(cfg, name)
        # the node that injects runs as its test-side stand-in (testing/node_injection.py)
        injecting = INJECTING_NODE.get(name or "")
        if injecting is not None:
            extra.setdefault(injecting, {}).update(inject_fault=name, inject_for_s=duration)
        options = GraphOptions(parts.config_dir, controller=cfg.controller,
                               use_sim_time=not wall_clock,
                               real_time_factor=1.0 if wall_clock else real_time_factor,
                               lockstep=not wall_clock, goal_mode="none", extra=extra,
                               one_process=False, realtime=wall_clock,
                               stand_ins={} if injecting is None
                               else {injecting: STAND_INS[injecting]})
        self.domain = private_domain_id()
        self.graph = GraphProcesses(options, workdir, domain_id=self.domain)
        self.duration = duration

    def run(self) -> dict[str, Any]:
        cfg, name = self.cfg, self.name
        seconds = _START_TIMEOUT_S + cfg.inject_at_s + self.duration + cfg.observe_after_s + 30.0
        with busy_loops(self.busy_loops, seconds), self.graph as graph, \
                GraphObserver(self.parts, use_sim_time=not self.wall_clock,
                              domain_id=self.domain,
                              fast_streams=("hw/tendon_commands",)) as obs:
            if not obs.wait_until(lambda: _released(obs), _START_TIMEOUT_S):
                raise RuntimeError(f"the graph did not start ({name}): node logs in "
                                   f"{self.graph.workdir}")
            assert obs.wait_until(lambda: len(obs.goals_in_force) > 0, _START_TIMEOUT_S)
            if self.wall_clock:  # a freshly started process finishes its first-use work
                obs.wait_for(cfg.wall_clock_settle_s, cfg.wall_clock_settle_s + 30.0)
            x0, quat = obs.snapshot(obs.goals_in_force).values[-1]
            t0 = obs.now_s()
            end = x0 + np.asarray(cfg.move_m)
            t_on, t_off = cfg.inject_at_s, cfg.inject_at_s + self.duration
            t_ack = t_off + cfg.acknowledge_after_s
            t_end = t_off + cfg.observe_after_s
            onset = ack = None
            acknowledged = ""
            acks, last_ack = 0, -math.inf
            stray = _StrayWriter(obs, self.parts, cfg, STRAYS[name]) if name in STRAYS else None
            while True:
                t = obs.now_s() - t0
                if t >= t_end:
                    break
                pos, vel, acc = minimum_jerk(x0, end, cfg.move_s, t - cfg.move_start_s)
                if name in GOAL_FAULTS and t_on <= t < t_off:
                    pos = (pos + np.asarray(cfg.injection.goal_offset_m)
                           if name == "goal_outside_workspace" else np.full(3, math.nan))
                obs.send_goal_point(pos, quat, vel, acc)
                if onset is None and t >= t_on and name is not None:
                    onset = obs.now_s()
                    if name in INJECTING_NODE:
                        obs.inject(INJECTING_NODE[name])
                    elif name in HANGS:
                        graph.send(HANGS[name], signal.SIGSTOP)
                    elif stray is not None:
                        stray.start()
                    elif name in OPERATOR_FAULTS:
                        obs.send_stop(True)
                if onset is not None and ack is None and t >= t_off:
                    if name in HANGS:
                        graph.send(HANGS[name], signal.SIGCONT)
                    elif stray is not None:
                        stray.stop()
                    elif name in OPERATOR_FAULTS:
                        obs.send_stop(False)
                    ack = t
                if stray is not None:
                    stray.publish()
                # an operator acknowledges what they see latched (at wall clock the latch may
                # come after t_ack), and again if it latches again, up to _ACKNOWLEDGES times
                if t >= t_ack and name is not None and acks < _ACKNOWLEDGES \
                        and obs.now_s() - last_ack >= _ACKNOWLEDGE_EVERY_S and _latched(obs):
                    acknowledged = "; ".join(filter(None, (acknowledged, obs.acknowledge()[1])))
                    acks += 1
                    last_ack = obs.now_s()
                time.sleep(0.005)
            # the observer reads late on a loaded computer (measured: 0.3 s behind its 125 Hz
            # stream, 2 s behind the 500 Hz one): what was sent by now, before the recording
            ended = obs.now_s() - _CAUGHT_UP_S
            if not obs.wait_until(lambda: _newest_stamp(obs) >= ended, _START_TIMEOUT_S):
                raise RuntimeError(f"the observer did not catch up with the graph ({name})")
            return {"obs": _recordings(obs), "t0": t0, "onset": onset, "x0": x0, "end": end,
                    "acknowledged": acknowledged, "logs": {n: graph.log(n)[-3000:]
                                                           for n in graph.nodes}}


def _newest_stamp(obs: GraphObserver) -> float:
    """The oldest of the newest stamps of the streams the evaluation reads [s]."""
    streams = [obs.commands, obs.sent] if "hw/tendon_commands" in obs.fast_streams \
        else [obs.commands]
    return min(obs.newest_stamp(r) for r in streams)


def _latched(obs: GraphObserver) -> bool:
    """The controller's newest state record says latched."""
    states = obs.snapshot(obs.controller_state).values
    return bool(states) and states[-1]["supervisor_state"] == STATE_CODES[SupervisorState.LATCHED]


class _StrayWriter:
    """A stray publisher of a command stream on a node of the observer's (never spun, so its
    publisher is made and destroyed from the scenario's thread), paced on the observer's
    clock."""

    def __init__(self, obs: GraphObserver, parts: LoopParts, cfg: FaultMatrixConfig,
                 stray: Stray) -> None:
        self.obs, self.stray = obs, stray
        robot = parts.robot
        tension = np.full(robot.n_muscles, cfg.injection.stray_tension_n)  # (n_muscles,) [N]
        if stray.topic == "muscle_commands":
            self._writer = messages.JointStateWriter(MSGS, robot.muscle_names)
            self._values = tension
        else:  # hw/tendon_commands: driver units per actuator id
            self._writer = messages.JointStateWriter(MSGS,
                                                     tuple(str(a) for a in robot.actuator_ids))
            self._values = parts.drivers.calibration.n_to_driver(tension)
        self._period_s = 1.0 / cfg.injection.stray_rate_hz
        self._node = obs.foreign_node(stray.node)
        self._pub: Any = None
        self._due = math.inf

    def start(self) -> None:
        self._pub = self._node.create_publisher(JointState, self.stray.topic, 10)
        self._due = self.obs.now_s()

    def publish(self) -> None:
        now = self.obs.now_s()
        if self._pub is None or now < self._due:
            return
        self._pub.publish(self._writer.write(Stamp.from_seconds(now), effort=self._values))
        # at the rate of simulated time; a late scenario thread sends one, not a burst
        self._due = max(self._due + self._period_s, now)

    def stop(self) -> None:
        if self._pub is not None:
            self._node.destroy_publisher(self._pub)
            self._pub = None


def _released(obs: GraphObserver) -> bool:
    mock = obs.diagnostics_of("mock_hardware_node")
    return bool(mock) and mock[-1].message == "running" and len(obs.commands) > 0


def _recordings(obs: GraphObserver) -> dict[str, Any]:
    return {"commands": obs.snapshot(obs.commands), "sent": obs.snapshot(obs.sent),
            "dynamics": obs.snapshot(obs.dynamics),
            "hand": obs.snapshot(obs.hand), "state": obs.snapshot(obs.controller_state),
            "diagnostics": list(obs.diagnostics)}


def evaluate(name: str, cfg: FaultMatrixConfig, run: dict[str, Any], base: dict[str, Any],
             f_min_n: float, limit_n: float, periods: dict[str, float],
             bounds: dict[str, float]) -> FaultResult:
    """One row of the graph's matrix, with the fields and meaning of the runner's; the hand is
    compared with the fault-free run ``base`` at the same time of the scenario. ``periods``:
    the output period [s] of each node a fault hangs; ``bounds``: the safe-state bounds
    (:func:`~musculo_control.sim.fault_matrix.safe_bounds`)."""
    kind = fault_kind(name)
    rec = run["obs"]
    injected = run["onset"]  # when the observer injected it
    reported = _injection_values(rec["diagnostics"], name)
    if "injection onset [s]" in reported:
        onset = float(reported["injection onset [s]"])
    elif name in HANGS:
        # as the runner counts it: from when the hung node's first missing output was due
        outputs = rec[HANG_OUTPUTS[name]].stamp
        last = max((t for t in outputs if t <= injected), default=injected)
        onset = max(last + periods[HANGS[name]], injected)
    else:
        onset = injected
    nodes = {STAGE_NODES[s] for s in kind.stages} | {"activation_qp_node"}
    stray = STRAYS.get(name)
    detect_t, rule, message = None, "", ""
    refused_before: dict[str, str] = {}
    # every time from the messages' stamps (when each node acted), not from when the observer
    # read them: at wall clock on a loaded computer the observer itself is late
    for d in rec["diagnostics"]:
        node = d.name.removeprefix("musculo_control: ")
        refused = {k: v for k, v in d.values.items() if k.startswith("refused")}
        names_stray = stray is not None and f"/{stray.node}" in d.message
        # a status naming the stray cannot predate its publisher, made at the onset: stamped
        # before it, it is a node's clock behind the observer's (a node names the writer once,
        # and never again while it stays: skipping that status would miss the detection)
        if d.stamp < onset and not names_stray:
            refused_before.update(refused)
            continue
        if stray is not None and not names_stray:
            continue  # a stray writer is detected when a node names it
        # a rule's name in a status of a node the fault concerns (the mock arm's start-up
        # status "holding the arm until the controller holds it" names no rule)
        named = [r for r in kind.expected_rules if r in d.message] if node in nodes else []
        new_refusal = any(refused_before.get(k) != v for k, v in refused.items()) \
            and node in nodes
        stage_error = node in nodes and node != "activation_qp_node" and d.level >= 1
        if named or new_refusal or stage_error:
            detect_t = max(d.stamp, onset)
            rule = named[0] if named else node
            message = d.message
            break
    commands = rec["commands"]
    safe = [t for t, f in zip(commands.stamp, commands.values)
            if t >= onset and np.all(np.abs(np.asarray(f) - f_min_n) < 1e-6)]
    if safe and (detect_t is None or safe[0] < detect_t):
        detect_t, rule, message = safe[0], rule or "minimum tension", message
    # what went to the actuators: the tendon driver's output (a stray writer of
    # hw/tendon_commands is heard on the same topic: its samples are its fixed tension)
    stray_n = (None if stray is None or stray.topic != "hw/tendon_commands"
               else cfg.injection.stray_tension_n)
    driver = [(t, v) for t, v in zip(rec["sent"].stamp, rec["sent"].values) if t >= onset
              and (stray_n is None or not np.allclose(v, stray_n, atol=1e-6))]
    sent = np.asarray([v for _, v in driver])
    # the safe state: minimum tension from the controller, or from the tendon driver on its own
    # (its watchdog, when the controller's commands stop), whichever comes first (the runner's
    # matrix counts both too)
    driver_safe = next((t for t, v in driver if np.all(np.abs(np.asarray(v) - f_min_n) < 1e-6)),
                       None)
    # or a stop that keeps tensions (a hold, a descend): the first status of the controller
    # that is not running, or of the driver that says it stops, after the onset (each node
    # publishes a change of status at once)
    stop_t = next((max(d.stamp, onset) for d in rec["diagnostics"]
                   if d.stamp >= onset and d.level >= 2 and _stopping(d)), None)
    safe_t = min((t for t in (safe[0] if safe else None, driver_safe, stop_t) if t is not None),
                 default=None)
    command_max = float(np.nanmax(sent)) if sent.size else 0.0
    any_nan = bool(sent.size and not np.isfinite(sent).all())
    t0 = run["t0"]
    before = [f for t, f in zip(commands.stamp, commands.values)
              if t0 <= t < onset and np.all(np.abs(np.asarray(f) - f_min_n) < 1e-6)]
    t_off = t0 + cfg.inject_at_s + fault_duration(cfg, name)
    states = rec["state"]
    back = None
    for t, v in zip(states.t, states.values):  # no stamp in the record: when read
        if t < t_off:
            continue
        if v["supervisor_state"] == 0.0 and back is None:
            back = t
        elif v["supervisor_state"] != 0.0:
            back = None
    # the hand against the fault-free run's at the same scenario time (as the runner's matrix)
    hand_t, hand = _hand(run)
    base_t, base_hand = _hand(base)
    shared = (hand_t >= base_t[0]) & (hand_t <= base_t[-1])
    at_base = np.column_stack([np.interp(hand_t[shared], base_t, base_hand[:, i])
                               for i in range(3)])
    deviation = np.linalg.norm(hand[shared] - at_base, axis=1)
    # redundant arm: recovered means as close to the goal as the fault-free run, within tolerance
    final_excess = float(np.linalg.norm(hand[-1] - run["end"])
                         - np.linalg.norm(base_hand[-1] - base["end"]))
    recovered = back is not None and final_excess <= cfg.recovery_tolerance_m
    speed, drop = hand_after(hand_t, hand, onset - run["t0"])
    return FaultResult(
        name=name, detected=detect_t is not None,
        detection_time_ms=None if detect_t is None else (detect_t - onset) * 1e3,
        max_command_N=command_max, any_nan=any_nan, recovered=recovered, rule=rule,
        message=message,
        injection_to_detection_ms=None if detect_t is None else (detect_t - injected) * 1e3,
        recovery_time_ms=None if back is None else (back - t_off) * 1e3,
        max_deviation_m=float(deviation.max()) if deviation.size else math.nan,
        final_error_excess_m=final_excess, target=reported.get("injection target", ""),
        alarms_before_injection=len(before), safe_ticks=len(safe), limit_N=limit_n,
        target_ms=cfg.detection_target_ms,
        safe_state_ms=None if safe_t is None else (safe_t - onset) * 1e3,
        safe_target_ms=safe_target_ms(kind, cfg, bounds),
        hand_speed_max_m_s=speed, hand_drop_m=drop)


def _stopping(status: Any) -> bool:
    """Whether a /diagnostics status says its node stops the arm: the controller's supervisor
    not running, or the tendon driver in a stop of its own."""
    node = status.name.removeprefix("musculo_control: ")
    if node == "activation_qp_node":
        return not status.message.startswith(SupervisorState.RUNNING)
    return node == "tendon_driver_node" and status.message.startswith(STOP_WORD + " (")


def _hand(run: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(scenario time [s], the mock arm's true hand [m]) of a case."""
    hand = run["obs"]["hand"]
    return np.asarray(hand.t) - run["t0"], np.asarray(hand.values)


def _injection_values(diagnostics: list[Any], name: str) -> dict[str, str]:
    """What the injecting node says of its fault on /diagnostics (``injection onset [s]``:
    when it first touched data; ``injection target``: the joint or tendon), once known; empty
    for the faults the observer makes (hangs and goals)."""
    node = INJECTING_NODE.get(name)
    if node is None:
        return {}
    for d in reversed(diagnostics):
        if d.name.removeprefix("musculo_control: ") == node \
                and d.values.get("injection onset [s]", "-") != "-":
            return {k: v for k, v in d.values.items() if k.startswith("injection")}
    return {}


def run_graph_matrix(parts: LoopParts, cfg: FaultMatrixConfig, workdir: Path,
                     real_time_factor: float = 0.5, progress: bool = True,
                     wall_clock: bool = False,
                     busy_loops: int = 0) -> tuple[list[FaultResult], dict[str, Any]]:
    """Every case of ``cfg`` on a fresh node graph; the rows and the fault-free run's figures
    (``wall_clock``, ``busy_loops``: see the module docstring)."""
    import sys

    f_min = parts.robot.hill.f_min_n
    loop = parts.controller.loop
    periods = {"dynamics_node": 1.0 / loop.dynamics_rate_hz,
               "activation_qp_node": 1.0 / loop.control_rate_hz}
    limit = parts.drivers.tendons.config.max_tension_n
    bounds = safe_bounds(parts.safety, loop)

    def case(name: str | None) -> dict[str, Any]:
        return _Case(parts, cfg, name, workdir / (name or "fault_free"), real_time_factor,
                     wall_clock, busy_loops).run()

    base = case(None)
    base_commands = base["obs"]["commands"]
    base_info = {"alarms": sum(1 for t, f in zip(base_commands.t, base_commands.values)
                               if t >= base["t0"] and np.all(np.abs(np.asarray(f) - f_min)
                                                             < 1e-6)),
                 "max_command_N": round(float(np.max(base["obs"]["sent"].values)), 3),
                 "limit_N": limit,
                 # what raised them, as an operator reads it on /diagnostics (first of each)
                 "alarm_messages": list(dict.fromkeys(
                     f"{d.t:.3f} s {d.name.removeprefix('musculo_control: ')}: {d.message}"
                     for d in base["obs"]["diagnostics"] if d.t >= base["t0"] and d.level >= 2
                 ))[:8]}
    results = []
    for name in cfg.cases:
        run = case(name)
        result = evaluate(name, cfg, run, base, f_min, limit, periods, bounds)
        results.append(result)
        if progress:
            after = ("-" if result.detection_time_ms is None
                     else f"{result.detection_time_ms:.1f}")
            print(f"  {name}: detected={result.detected} t={after} ms "
                  f"recovered={result.recovered}", file=sys.stderr, flush=True)
    return results, base_info

