"""Node parameters (musculo_control.nodes.node_config): dataclasses, parameter files, argv."""

from __future__ import annotations

import array
import dataclasses
from pathlib import Path

import pytest
import yaml

from musculo_control.errors import ConfigError
from musculo_control.loop.rejections import Rejections
from musculo_control.nodes.node_config import (
    ACTIVATION_QP_NODE,
    NODE_PARAMS,
    ROS_PARAMS_FILE,
    ActivationQPNodeParams,
    MockHardwareNodeParams,
    check_params_file,
    parameter_defaults,
    params_files_from_argv,
    parse_parameters,
)


def write(tmp_path, data, text=None):
    path = tmp_path / "params.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(data))
    return path


def test_the_shipped_parameter_file_is_valid_for_every_node(config_dir):
    for name, cls in NODE_PARAMS.items():
        values = check_params_file(config_dir / ROS_PARAMS_FILE, name, cls)
        assert values, f"{name} has no section in {ROS_PARAMS_FILE}"
        parse_parameters(cls, values, "ros_params.yaml", name)


def test_every_field_becomes_a_documented_parameter_with_a_ros_typed_default():
    for cls in NODE_PARAMS.values():
        rows = parameter_defaults(cls)
        assert [r[0] for r in rows] == [f.name for f in dataclasses.fields(cls)]
        for name, default, doc in rows:
            assert doc, f"{cls.__name__}.{name} has no description"
            assert isinstance(default, (bool, int, float, str, list)), (name, default)


def test_received_values_parse_like_yaml():
    p = parse_parameters(MockHardwareNodeParams, {
        "initial_pose_rad": array.array("d", [0.1] * 7), "config_dir": "", "seed": 3,
        "truth_rate_hz": 25, "clock_start_s": None}, "src", "mock_hardware_node")
    assert p.initial_pose_rad == (0.1,) * 7 and p.seed == 3 and p.truth_rate_hz == 25.0
    assert p.config_dir == "" and p.clock_start_s == 1.0  # defaults kept


@pytest.mark.parametrize("params, key, words", [
    ({"timing_report_period_s": -5.0},
     "activation_qp_node.ros__parameters.timing_report_period_s", "> 0.0"),
    ({"tendon_queue": "deep"}, "activation_qp_node.ros__parameters.tendon_queue", "an integer"),
    # a parameter that became the robot's names its new home
    ({"rate_hz": 125.0}, "activation_qp_node.ros__parameters.rate_hz",
     "moved to controller.yaml loop.control_rate_hz"),
    ({"controller": "pid"}, "activation_qp_node.ros__parameters.controller", "one of"),
    ({"rate_hzz": 125.0}, "activation_qp_node.ros__parameters.rate_hzz",
     "one of the known keys"),
    # the robot's controller injects no faults: only its test-side stand-in does
    ({"inject_fault": "command_nan"}, "activation_qp_node.ros__parameters.inject_fault",
     "it was removed (faults are injected only by the test side's stand-in"),
])
def test_a_bad_parameter_names_file_and_key(tmp_path, params, key, words):
    path = write(tmp_path, {ACTIVATION_QP_NODE: {"ros__parameters": params}})
    with pytest.raises(ConfigError) as err:
        check_params_file(path, ACTIVATION_QP_NODE, ActivationQPNodeParams)
    assert err.value.file == str(path) and err.value.key == key
    assert words in str(err.value)


def test_missing_and_malformed_files_name_the_file(tmp_path):
    with pytest.raises(ConfigError) as err:
        check_params_file(tmp_path / "nope.yaml", ACTIVATION_QP_NODE, ActivationQPNodeParams)
    assert "nope.yaml" in str(err.value) and err.value.key == "<file>"
    bad = write(tmp_path, None, text="activation_qp_node: {ros__parameters: [1, 2")
    with pytest.raises(ConfigError, match="valid YAML"):
        check_params_file(bad, ACTIVATION_QP_NODE, ActivationQPNodeParams)
    shape = write(tmp_path, {ACTIVATION_QP_NODE: {"parameters": {}}})
    with pytest.raises(ConfigError) as err:
        check_params_file(shape, ACTIVATION_QP_NODE, ActivationQPNodeParams)
    assert err.value.key == ACTIVATION_QP_NODE


def test_wildcard_sections_apply_and_may_hold_other_nodes_parameters(tmp_path):
    path = write(tmp_path, {"/**": {"ros__parameters": {"config_dir": "/x", "use_sim_time": True,
                                                        "poll_rate_hz": 1.0}},
                            "/activation_qp_node": {"ros__parameters": {"tendon_queue": 20}},
                            "dynamics_node": {"ros__parameters": {"warn_throttle_s": "bad"}}})
    values = check_params_file(path, ACTIVATION_QP_NODE, ActivationQPNodeParams)
    assert values == {"config_dir": "/x", "tendon_queue": 20}


def test_params_files_from_argv():
    argv = ["/lib/node", "--ros-args", "-r", "__node:=x", "--params-file", "/a.yaml",
            "-p", "x:=1", "--params-file", "/b.yaml", "--", "--params-file", "/not_ros.yaml"]
    assert params_files_from_argv(argv) == ["/a.yaml", "/b.yaml"]
    assert params_files_from_argv(["/lib/node", "--params-file", "/c.yaml"]) == []


def test_rejections_are_throttled_per_topic_and_counted():
    r = Rejections(throttle_s=1.0)
    first = r.refuse("joint_states", "joint_states: 2 joint names, expected 7", 10.0)
    assert first == "refused a message on joint_states: 2 joint names, expected 7"
    assert r.refuse("joint_states", "again", 10.5) is None
    other = r.refuse("hand_goal", "NaN", 10.6)  # another topic is not held back
    assert other is not None and "hand_goal" in other
    later = r.refuse("joint_states", "third", 11.2)
    assert later is not None and "(1 more refused since the last warning)" in later
    assert r.total("joint_states") == 3 and r.total() == 4 and r.total("x") == 0
    assert r.summary()["refused joint_states"] == "3, last: third"


def test_the_parameter_tables_of_doc_ros_md_are_the_dataclasses():
    """doc/ros.md shows every node parameter with its default; regenerate it with
    ``parameters_markdown()`` when a parameter changes."""
    from musculo_control.nodes.node_config import parameters_markdown

    doc = (Path(__file__).resolve().parents[1] / "doc" / "ros.md").read_text()
    assert parameters_markdown() in doc, "doc/ros.md: paste nodes.node_config." \
                                         "parameters_markdown() again"
