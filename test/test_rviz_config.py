"""The shipped RViz config parses and shows what the nodes publish (no RViz needed)."""

from __future__ import annotations

from pathlib import Path

import yaml

RVIZ = Path(__file__).resolve().parents[1] / "config" / "rviz" / "musculo.rviz"


def test_rviz_config_shows_model_tf_muscles_and_the_goal_marker():
    config = yaml.safe_load(RVIZ.read_text())
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "base_link"
    displays = {d["Class"]: d for d in manager["Displays"]}
    assert displays["rviz_default_plugins/RobotModel"]["Description Topic"]["Value"] == \
        "/robot_description"
    assert "rviz_default_plugins/TF" in displays
    assert displays["rviz_default_plugins/MarkerArray"]["Topic"]["Value"] == "/muscle_markers"
    # goal_node's interactive marker server namespace
    assert displays["rviz_default_plugins/InteractiveMarkers"][
        "Interactive Markers Namespace"] == "/hand_goal"
    goal = displays["rviz_default_plugins/Pose"]["Topic"]
    # controller/goal is published transient-local: a volatile display would miss the last goal
    assert goal["Value"] == "/controller/goal" and goal["Durability Policy"] == "Transient Local"
    tools = [t["Class"] for t in manager["Tools"]]
    assert "rviz_default_plugins/Interact" in tools
