"""SROS2: an enclave per process and an access-control policy that lets each node publish,
subscribe, serve and call exactly what it uses (doc/ros.md "SROS2").

:data:`INTERFACES` says what each node of the suite creates, including the hidden node of its
polled inputs (``_<node>_inputs``, same process); an entry made only in some configurations
names it (:data:`SIM_TIME`, :data:`LOCKSTEP`, ...). :func:`policy_xml` turns it into an SROS2
policy (schema 0.2.0) with one enclave per process of either layout: each node alone
(``/musculo_control/<node>``) and each process of the shared layout (``hardware_process``,
``control_process``: :data:`~musculo_control.nodes.graph.SHARED_PROCESSES`), whose participant
needs the union of its nodes' permissions and no more (DDS grants permissions per participant,
one per process). ``config/sros2/policy.xml`` is that text, and a node-graph test holds
:data:`INTERFACES` to what the running nodes really create. Nothing here imports rclpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from musculo_control.errors import InputError
from musculo_control.nodes.graph import SHARED_PROCESSES
from musculo_control.nodes.node_config import (
    ACTIVATION_QP_NODE,
    DYNAMICS_NODE,
    GOAL_NODE,
    MOCK_HARDWARE_NODE,
    MUSCLE_MARKER_NODE,
    POTENTIOMETER_NODE,
    TENDON_DRIVER_NODE,
)

#: The enclaves' common prefix.
ENCLAVE_ROOT = "/musculo_control"
#: Conditions of an entry ("": always).
SIM_TIME = "use_sim_time"  # every node but the mock subscribes /clock
LOCKSTEP = "lockstep"  # the mock arm watches the nodes' outputs to hold its clock
TRAJECTORY = "goal_mode trajectory"
MARKERS = "interactive markers"  # goal_node's marker server (needs a ROS 2 distribution)
START_UP = "start-up"  # goal_node reads joint_states until its first sample (the start pose)
#: the process spins rclpy's EventsExecutor (nodes/executors.py), or the single-threaded one
EVENTS = "EventsExecutor"
SINGLE_THREADED = "single-threaded executor"
#: What every node has (rclpy): its log, parameter events and parameter services, and the type
#: description service (Jazzy on).
_PARAMETER_SERVICES = ("~/describe_parameters", "~/get_parameter_types", "~/get_parameters",
                       "~/list_parameters", "~/set_parameters", "~/set_parameters_atomically")
_TYPE_DESCRIPTION = "~/get_type_description"

Entry = tuple[str, str]  # (name, condition)


@dataclass(frozen=True)
class NodeInterface:
    """The endpoints of one node (names relative to its namespace, ``~/`` its private one)."""

    node: str
    publishes: tuple[Entry, ...] = ()
    subscribes: tuple[Entry, ...] = ()
    serves: tuple[Entry, ...] = ()
    calls: tuple[Entry, ...] = ()
    inputs: tuple[Entry, ...] = ()  # subscriptions of the hidden polled-input node
    #: a hidden input node has no rosout and no parameter services
    hidden: bool = field(default=False)

    def endpoints(self, active: Iterable[str] = ()) -> dict[str, frozenset[str]]:
        """Kind (publish, subscribe, reply, request) -> names, of the entries whose condition
        is in ``active`` (or none), with what every node has."""
        on = {""} | set(active)

        def pick(entries: tuple[Entry, ...]) -> frozenset[str]:
            return frozenset(name for name, cond in entries if cond in on)

        publish = set(pick(self.publishes)) | {"parameter_events"}
        reply = set(pick(self.serves)) | {_TYPE_DESCRIPTION}
        if not self.hidden:
            publish |= {"rosout"}
            reply |= set(_PARAMETER_SERVICES)
        subscribe = set(pick(self.subscribes))
        if not self.hidden and self.node != MOCK_HARDWARE_NODE:
            subscribe |= {"clock"} if SIM_TIME in on else set()
        return {"publish": frozenset(publish), "subscribe": frozenset(subscribe),
                "reply": frozenset(reply), "request": pick(self.calls)}

    def input_node(self) -> NodeInterface | None:
        if not self.inputs:
            return None
        return NodeInterface(f"_{self.node}_inputs", subscribes=self.inputs, hidden=True)


_DIAG = ("diagnostics", "")

INTERFACES: dict[str, NodeInterface] = {n.node: n for n in (
    NodeInterface(MOCK_HARDWARE_NODE,
                  publishes=(("hw/potentiometers", ""), ("hw/tendon_states", ""),
                             ("mock/joint_states", ""), ("mock/hand", ""), ("mock/elbow", ""),
                             ("mock/gauge_force", ""), ("clock", SIM_TIME), _DIAG),
                  subscribes=(("mock/gauge", ""),),
                  serves=(("mock/clear_gauge", ""),),
                  inputs=(("hw/tendon_commands", ""), ("joint_states", LOCKSTEP),
                          ("dynamics", LOCKSTEP), ("controller/activations", LOCKSTEP))),
    NodeInterface(POTENTIOMETER_NODE,  # its samples as they come, or polled
                  publishes=(("joint_states", ""), _DIAG),
                  subscribes=(("hw/potentiometers", EVENTS),),
                  inputs=(("hw/potentiometers", SINGLE_THREADED),)),
    NodeInterface(TENDON_DRIVER_NODE,
                  publishes=(("hw/tendon_commands", ""), ("muscle_states", ""), _DIAG),
                  inputs=(("hw/tendon_states", ""), ("muscle_commands", ""),
                          ("operator_stop", ""))),
    NodeInterface(DYNAMICS_NODE,
                  publishes=(("dynamics", ""), _DIAG),
                  inputs=(("joint_states", ""),)),
    NodeInterface(ACTIVATION_QP_NODE,
                  publishes=(("muscle_commands", ""), ("controller/activations", ""),
                             ("controller/state", ""), ("controller/hand", ""),
                             ("controller/goal", ""), ("controller/timing", ""), _DIAG),
                  serves=(("controller/acknowledge", ""),),
                  inputs=(("joint_states", ""), ("muscle_states", ""),
                          ("hw/tendon_commands", ""), ("dynamics", ""), ("hand_goal", ""),
                          ("hand_goal/trajectory", ""), ("joint_goal", ""),
                          ("operator_stop", ""))),
    NodeInterface(GOAL_NODE,
                  publishes=(("hand_goal", ""), ("hand_goal/trajectory", ""), _DIAG,
                             ("hand_goal/update", MARKERS)),
                  subscribes=(("joint_states", START_UP), ("controller/goal", TRAJECTORY),
                              ("hand_goal/feedback", MARKERS)),
                  serves=(("hand_goal/get_interactive_markers", MARKERS),)),
    NodeInterface(MUSCLE_MARKER_NODE,
                  publishes=(("muscle_markers", ""), _DIAG),
                  inputs=(("joint_states", ""), ("muscle_states", ""), ("muscle_commands", ""),
                          ("controller/activations", ""))),
)}

#: An operator's tools (``ros2 topic pub`` with
#: ``--ros-args --enclave /musculo_control/operator``): stop and release the arm, send goals,
#: acknowledge, read the diagnostics. Not a node of the suite: no profile of
#: :data:`INTERFACES`, an enclave of its own.
OPERATOR = NodeInterface("operator",
                         publishes=(("operator_stop", ""), ("hand_goal", ""),
                                    ("joint_goal", "")),
                         subscribes=(("diagnostics", ""), ("controller/goal", "")),
                         calls=(("controller/acknowledge", ""),))

#: Every condition (a policy allows the endpoints of all of them).
ALL_CONDITIONS = (SIM_TIME, LOCKSTEP, TRAJECTORY, MARKERS, START_UP, EVENTS, SINGLE_THREADED)


def profiles(node: str) -> list[NodeInterface]:
    """A node and its hidden input node, as policy profiles."""
    iface = OPERATOR if node == OPERATOR.node else INTERFACES[node]
    hidden = iface.input_node()
    return [iface] + ([hidden] if hidden is not None else [])


def _profile_xml(iface: NodeInterface, indent: str) -> list[str]:
    kinds = iface.endpoints(ALL_CONDITIONS)
    lines = [f'{indent}<profile ns="/" node="{escape(iface.node)}">']
    for tag, item, attr in (("topics", "topic", "publish"), ("topics", "topic", "subscribe"),
                            ("services", "service", "reply"),
                            ("services", "service", "request")):
        names = sorted(kinds[attr])
        if not names:
            continue
        lines.append(f'{indent}  <{tag} {attr}="ALLOW">')
        lines += [f"{indent}    <{item}>{escape(n)}</{item}>" for n in names]
        lines.append(f"{indent}  </{tag}>")
    lines.append(f"{indent}</profile>")
    return lines


def enclaves() -> dict[str, list[str]]:
    """Enclave path -> the nodes whose profiles it holds: one per node, and one per process of
    the shared layout with its nodes (the drivers' ``hardware_process``, the controller's
    ``control_process``; the mock arm stands for the hardware and runs alone)."""
    out = {enclave_of(n): [n] for n in INTERFACES}
    for process, nodes in SHARED_PROCESSES.items():
        out[enclave_of(process)] = [n for n in nodes if n in INTERFACES]
    out[enclave_of(OPERATOR.node)] = [OPERATOR.node]
    return out


def policy_xml() -> str:
    """The SROS2 policy (``ros2 security generate_artifacts -p``) of every enclave."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             "<!-- musculo_control.nodes.security.policy_xml(): each node's enclave allows "
             "exactly its endpoints -->",
             '<policy version="0.2.0">', "  <enclaves>"]
    for path, nodes in enclaves().items():
        lines += [f'    <enclave path="{escape(path)}">', "      <profiles>"]
        for node in nodes:
            for iface in profiles(node):
                lines += _profile_xml(iface, "        ")
        lines += ["      </profiles>", "    </enclave>"]
    lines += ["  </enclaves>", "</policy>"]
    return "\n".join(lines) + "\n"


def enclave_of(process: str) -> str:
    """The enclave a process of the graph runs in (``--ros-args --enclave``)."""
    return f"{ENCLAVE_ROOT}/{process}"


def security_environment(keystore: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that make every process of the graph run secured: security on, the
    ``Enforce`` strategy (a participant without valid keys does not start, rather than running
    open), the keystore (``keystore``, or ``environ``'s ``ROS_SECURITY_KEYSTORE``)."""
    store = keystore or environ.get("ROS_SECURITY_KEYSTORE", "")
    if not store:
        raise InputError("keystore", "an SROS2 keystore (keystore:=DIR or "
                                     "ROS_SECURITY_KEYSTORE) with secure:=true", "none")
    return {"ROS_SECURITY_ENABLE": "true", "ROS_SECURITY_STRATEGY": "Enforce",
            "ROS_SECURITY_KEYSTORE": store}
