"""How far a graph's discovery reaches: the mock graph stays on this machine.

The distribution's own setting (no middleware XML): ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``
from Iron on, ``ROS_LOCALHOST_ONLY=1`` on Humble and older (which Jazzy deprecates). A caller
that set either variable itself keeps its choice (a lab network, RViz on another computer). The
robot's graph is left as the caller's environment says (doc/ros.md "Discovery").
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
