"""Sphinx configuration of the musculo_control documentation (``make docs``).

Laid out as rosdoc2 builds a ROS 2 package: the Sphinx project is the package's ``doc/`` folder,
pages are MyST Markdown, and ``rosdoc2.yaml`` (named in package.xml) points rosdoc2 at this
folder. Only extensions that rosdoc2 allows are used (myst_parser and Sphinx's own autodoc,
autosummary, mathjax, viewcode), so the site builds the same way under ``sphinx-build`` and
under rosdoc2.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if (ROOT / "musculo_control").is_dir():  # a source checkout: document this tree
    sys.path.insert(0, os.fspath(ROOT))

_package = ET.parse(ROOT / "package.xml").getroot() if (ROOT / "package.xml").is_file() \
    else None

project = "musculo_control"
author = "musculo_control team"
copyright = "musculo_control team, Apache-2.0"  # noqa: A001 (Sphinx's name)
release = _package.findtext("version") if _package is not None else ""
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "faults", "results.json"]


# MyST: heading anchors for [text](page.md#anchor) links, $...$ maths, ::: fences
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath", "colon_fence"]

# API reference: one page per module, generated from the docstrings (doc/api.md)
autosummary_generate = True
autosummary_imported_members = False
# a package's page documents what its own modules define, not its re-exports a second time
autodoc_default_options = {"members": True, "show-inheritance": True,
                           "ignore-module-all": True}
autodoc_member_order = "bysource"


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# Without a ROS 2 distribution (launch, launch_ros: not on PyPI) or without the `ros` extra
# (rclpy and the message packages) the node modules still document
autodoc_mock_imports = [top for top, probe in (
    ("rclpy", "rclpy.node"), ("std_msgs", "std_msgs.msg"), ("sensor_msgs", "sensor_msgs.msg"),
    ("geometry_msgs", "geometry_msgs.msg"), ("std_srvs", "std_srvs.srv"),
    ("diagnostic_msgs", "diagnostic_msgs.msg"), ("visualization_msgs", "visualization_msgs.msg"),
    ("trajectory_msgs", "trajectory_msgs.msg"), ("rosgraph_msgs", "rosgraph_msgs.msg"),
    ("builtin_interfaces", "builtin_interfaces.msg"), ("rcl_interfaces", "rcl_interfaces.msg"),
    ("interactive_markers", "interactive_markers.interactive_marker_server"),
    ("launch", "launch.actions"), ("launch_ros", "launch_ros.actions"),
    ("ament_index_python", "ament_index_python.packages")) if not _importable(probe)]

_LITERAL = re.compile(r"(``.+?``|`[^`]+`)")


def _plain_text_docstring(app, what, name, obj, options, lines):
    """The docstrings write |x| for absolute values and norms and paths such as
    launch/*.launch.py in running text; reStructuredText would read a substitution and an
    emphasis there. Outside literals and table rows, such characters are escaped."""
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("|", "+")):
            continue
        parts = _LITERAL.split(line)
        for j in range(0, len(parts), 2):
            parts[j] = re.sub(r"(?<=/)\*", r"\\*", parts[j].replace("|", r"\|"))
        lines[i] = "".join(parts)


def setup(app):
    app.connect("autodoc-process-docstring", _plain_text_docstring)

html_theme = "alabaster"
html_title = "musculo_control"
html_static_path: list[str] = []
