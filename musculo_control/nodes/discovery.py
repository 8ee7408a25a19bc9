"""How far a graph's discovery reaches, and how its processes talk.

The mock graph stays on this machine, by the distribution's own setting (no middleware XML):
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` from Iron on, ``ROS_LOCALHOST_ONLY=1`` on Humble and
older (which Jazzy deprecates). A caller that set either variable itself keeps its choice (a
lab network, RViz on another computer). The robot's graph is left as the caller's environment
says (doc/ros.md "Discovery").

Every graph's processes talk over UDP, not Fast DDS's shared memory (:func:`graph_transport`):
a process that pauses for more than about a second (its own stall, a debugger, SIGSTOP) finds
its shared-memory ports given up by the writers' health check when it resumes, and receives
nothing more, so a controller whose process paused could never take the arm back.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Distributions without ``ROS_AUTOMATIC_DISCOVERY_RANGE`` (it came with Iron).
_LOCALHOST_ONLY_DISTROS = ("foxy", "galactic", "humble")
RANGE = "ROS_AUTOMATIC_DISCOVERY_RANGE"
LOCALHOST_ONLY = "ROS_LOCALHOST_ONLY"


def localhost_discovery(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to add to ``environ`` so that discovery stays on this machine; none when
    ``environ`` sets the range already. ``ROS_DISTRO`` picks the variable; without it (the
    ROS 2 wheels from PyPI, Kilted) the range."""
    if RANGE in environ or LOCALHOST_ONLY in environ:
        return {}
    if environ.get("ROS_DISTRO", "").strip().lower() in _LOCALHOST_ONLY_DISTROS:
        return {LOCALHOST_ONLY: "1"}
    return {RANGE: "LOCALHOST"}


#: Fast DDS's choice of built-in transports (from Fast DDS 2.13; older ones ignore it).
TRANSPORTS = "FASTDDS_BUILTIN_TRANSPORTS"


def graph_transport(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to add to ``environ`` so that the graph's processes talk over UDP only
    (see the module docstring); none when ``environ`` chose the transports already."""
    if TRANSPORTS in environ:
        return {}
    return {TRANSPORTS: "UDPv4"}
