"""``musculo init`` on the shapes the field's published models have, each reproduced by a small
inline MJCF (the models themselves are not shipped): MuJoCo's ``model/tendon_arm/arm26.xml``
(unnamed bodies, no keyframe, moving across gravity), MyoSuite's one-joint elbow
(``elbow/myoelbow_1dof6muscles.xml``), its finger (``finger/myofinger_v0.xml``: shorter than
the paper's 20 cm move), its ``arm/myoarm_simple.xml`` (muscles acting on joints, no tendons).

Each folder ``musculo init`` writes runs every command its ``next:`` line prints, or init stops
with a message naming the file and what is missing; an arm that cannot be controlled is refused
at init, not three commands later.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml

from musculo_control.cli import main
from musculo_control.commands.init import validate
from musculo_control.errors import ConfigError
from musculo_control.model.mujoco_tendons import compile_spec, mjcf_spec
from musculo_control.model.robot import load_robot
from musculo_control.sim.scaffold import write_config

#: Shortened experiments for the command-line runs [s].
SHORT = ["--set", "experiments.trajectory.settle_s=0.3", "--set",
         "experiments.trajectory.move_s=1.0", "--set", "experiments.trajectory.hold_s=0.3"]


def tendon_arm(scale: float = 1.0, *, elbow_muscles: bool = True, elbow_joint: str = "elbow",
               keyframe: str = "", hand: str = "", idle: bool = False) -> str:
    """An arm as MuJoCo's tendon arm (arm26) is published: two hinges moving in the horizontal
    plane, no body named, muscles over wrap cylinders with side sites; lengths times ``scale``.
    """
    def v(*xs: float) -> str:
        return " ".join(f"{scale * x:g}" for x in xs)

    elbow = """
        <spatial name="EF"><site site="s3"/><geom geom="elbow"/><site site="s7"/></spatial>
        <spatial name="EE"><site site="s4"/><geom geom="elbow" sidesite="x1"/><site site="s8"/>
        </spatial>""" if elbow_muscles else ""
    elbow_act = ('<muscle name="EF" tendon="EF"/><muscle name="EE" tendon="EE"/>'
                 if elbow_muscles else "")
    joint = f'<joint name="{elbow_joint}"/>' if elbow_joint else "<joint/>"
    return f"""
<mujoco model="unnamed tendon arm">
  <default><joint type="hinge" axis="0 0 1" limited="true" range="0 120" damping="0.1"/>
    <muscle ctrllimited="true" ctrlrange="0 1"/></default>
  <worldbody>
    <site name="s0" pos="{v(-0.15, 0, 0)}" size="0.01"/>
    <site name="x0" pos="{v(0, -0.15, 0)}" size="0.01"/>
    <body>
      <geom name="upper arm" type="capsule" size="{v(0.045)}" fromto="{v(0, 0, 0, 0.5, 0, 0)}"/>
      <joint name="shoulder"/>
      <geom name="shoulder" type="cylinder" size="{v(0.1, 0.05)}" mass="0"/>
      <site name="s1" pos="{v(0.15, 0.06, 0)}"/><site name="s2" pos="{v(0.15, -0.06, 0)}"/>
      <site name="s3" pos="{v(0.4, 0.06, 0)}"/><site name="s4" pos="{v(0.4, -0.06, 0)}"/>
      <site name="x1" pos="{v(0.5, -0.15, 0)}"/>
      <body pos="{v(0.5, 0, 0)}">
        <geom name="forearm" type="capsule" size="{v(0.035)}" fromto="{v(0, 0, 0, 0.5, 0, 0)}"/>
        {joint}
        <geom name="elbow" type="cylinder" size="{v(0.08, 0.05)}" mass="0"/>
        <site name="s7" pos="{v(0.11, 0.05, 0)}"/><site name="s8" pos="{v(0.11, -0.05, 0)}"/>
        {hand}
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="SF"><site site="s0"/><geom geom="shoulder"/><site site="s1"/></spatial>
    <spatial name="SE"><site site="s0"/><geom geom="shoulder" sidesite="x0"/><site site="s2"/>
    </spatial>{elbow}
    {'<spatial name="idle"><site site="s1"/><site site="s3"/></spatial>' if idle else ''}
  </tendon>
  <actuator>
    <muscle name="SF" tendon="SF"/><muscle name="SE" tendon="SE"/>{elbow_act}
    {'<muscle name="idle" tendon="idle"/>' if idle else ''}
  </actuator>
  {keyframe}
</mujoco>"""


#: MyoSuite's one-joint elbow: an upper arm fixed to the base, a forearm hanging from one hinge,
#: a flexor over a wrap cylinder and an extensor behind it.
ONE_JOINT_ELBOW = """
<mujoco model="one-joint elbow">
  <compiler angle="radian"/>
  <worldbody>
    <body name="humerus" pos="0 0 1">
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03" mass="2"/>
      <site name="flex_origin" pos="0.03 0 -0.05"/><site name="ext_origin" pos="-0.03 0 -0.05"/>
      <site name="ext_side" pos="-0.05 0 -0.3"/>
      <body name="forearm" pos="0 0 -0.3">
        <joint name="elbow_flex" type="hinge" axis="0 -1 0" range="0 2.2" damping="0.5"/>
        <geom name="drum" type="cylinder" size="0.02 0.03" zaxis="0 1 0" mass="0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.28" size="0.025" mass="1.2"/>
        <site name="flex_insertion" pos="0.025 0 -0.05"/><site name="olecranon" pos="-0.02 0 0.03"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="flexor"><site site="flex_origin"/><site site="flex_insertion"/></spatial>
    <spatial name="extensor"><site site="ext_origin"/><geom geom="drum" sidesite="ext_side"/>
      <site site="olecranon"/></spatial>
  </tendon>
  <actuator>
    <muscle name="flexor" tendon="flexor" force="400"/>
    <muscle name="extensor" tendon="extensor" force="400"/>
  </actuator>
</mujoco>"""

#: MyoSuite's myoarm_simple.xml: muscle actuators on joints, no tendon.
JOINT_MUSCLES = """
<mujoco model="joint muscles">
  <worldbody>
    <body name="upper">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-1 1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
    </body>
  </worldbody>
  <actuator><muscle joint="shoulder"/></actuator>
</mujoco>"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.xml"
    path.write_text(text)
    return path


def _next_line(text: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith("next: "))
    return [c.strip() for c in line[len("next: "):].split(";")]


def test_unnamed_bodies_run_every_command_init_prints(tmp_path, capsys):
    """arm26 as published: init proposes a task frame hung on a named joint of the unnamed
    forearm, and `musculo simulate trajectory` (which died writing the bag, looking for a body
    name) runs through; the mock's mass error reaches the unnamed bodies."""
    mjcf = _write(tmp_path, "arm26_like", tendon_arm())
    out = tmp_path / "cfg"
    assert main(["init", str(mjcf), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    robot = yaml.safe_load((out / "robot.yaml").read_text())
    assert robot["arm"]["task_frame"] == "elbow"  # the forearm's joint, plus an offset
    assert robot["arm"]["task_offset_m"] == pytest.approx([0.5, 0.0, 0.0])  # the forearm's end
    commands = _next_line(text)
    assert commands[0] == f"musculo model-report --config {out}"
    assert f"musculo simulate trajectory --config {out}" in commands
    for command in commands:
        args = command.split()[1:]
        if args[0] == "simulate":
            args += ["--out", str(tmp_path / "runs"), *SHORT]
            if args[1] == "disturbance":
                continue  # the same save_runs as trajectory; its length is the test's cost
        assert main(args) == 0, command
    runs = tmp_path / "runs" / "trajectory" / "osc"
    assert (runs / "start_a" / "bag").is_dir()
    run = yaml.safe_load((runs / "start_a" / "run.yaml").read_text())
    assert set(run["random"]["link_mass_scale"]) == {"body #1", "body #2"}


def test_a_keyframe_is_the_home_pose(tmp_path):
    key = '<keyframe><key name="reach" qpos="0.6 0.9"/></keyframe>'
    mjcf = _write(tmp_path, "keyed", tendon_arm(keyframe=key))
    scaffold = write_config(mjcf, tmp_path / "cfg", home="reach")
    assert any("keyframe 'reach'" in c for c in scaffold.choices)
    assert load_robot(tmp_path / "cfg").home_pose_rad == pytest.approx([0.6, 0.9])


def test_a_task_point_on_an_unnamed_jointless_hand_hangs_on_the_forearm_joint(tmp_path):
    """The farthest point is on an unnamed body without joints fixed to the unnamed forearm: it
    is expressed in the forearm's frame, on the forearm's named joint, where MuJoCo puts it."""
    hand = '<body pos="0.5 0 0" euler="0 0 30"><geom type="box" pos="0.1 0 0" size="0.1 0.02 0.02"/></body>'
    mjcf = _write(tmp_path, "hand", tendon_arm(hand=hand))
    write_config(mjcf, tmp_path / "cfg")
    robot = load_robot(tmp_path / "cfg")
    assert robot.arm.config.task_frame == "elbow"
    model = compile_spec(mjcf_spec(mjcf), mjcf)  # as the controller compiles it
    data = mujoco.MjData(model)
    q = np.array([0.3, 0.7])
    data.qpos[:] = q
    mujoco.mj_kinematics(model, data)
    assert robot.arm.hand_pose(q)[0] == pytest.approx(data.geom_xpos[-1], abs=1e-6)


def test_a_one_joint_elbow_gets_one_task_row_and_no_push_on_a_fixed_elbow(tmp_path, capsys):
    """MyoSuite's one-joint elbow: one task row (two rows failed validation at init), the
    disturbance switched off with its reason (the elbow is the base's hinge), and init's next:
    line names only the experiments set up."""
    mjcf = _write(tmp_path, "elbow", ONE_JOINT_ELBOW)
    out = tmp_path / "cfg"
    assert main(["init", str(mjcf), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    controller = yaml.safe_load((out / "controller.yaml").read_text())
    assert controller["task"]["rows"] == ["vz"]
    assert "switched off: disturbance: the elbow frame 'elbow_flex' does not move" in text
    setup = validate(out)
    assert setup.experiments.configured() == ("trajectory",)
    assert _next_line(text) == [f"musculo model-report --config {out}",
                                f"musculo simulate trajectory --config {out}"]


def test_a_finger_gets_a_move_it_can_follow(tmp_path):
    """A 10 cm arm cannot follow the paper's 20 cm move: B's move is halved until it can."""
    mjcf = _write(tmp_path, "finger", tendon_arm(scale=0.1))
    scaffold = write_config(mjcf, tmp_path / "cfg")
    assert any(c.startswith("experiment B's move:") for c in scaffold.choices)
    assert 0.02 <= scaffold.move_m < 0.2
    exp = yaml.safe_load((tmp_path / "cfg" / "experiments.yaml").read_text())
    move = np.subtract(exp["trajectory"]["end_m"], exp["trajectory"]["start_m"])
    assert np.linalg.norm(move) == pytest.approx(scaffold.move_m, abs=1e-3)
    validate(tmp_path / "cfg")


@pytest.mark.parametrize(("name", "text", "key", "words"), [
    ("no_elbow_muscle", tendon_arm(elbow_muscles=False), "<tendon>",
     "no muscle's tendon changes length with joint(s) ['elbow']"),
    ("unnamed_joint", tendon_arm(elbow_joint=""), "joint #1 (on body '#2')",
     "a name on every joint that is a coordinate of the arm"),
    ("joint_muscles", JOINT_MUSCLES, "<tendon>", "act on joints directly"),
])
def test_an_arm_that_cannot_be_controlled_is_refused_at_init(tmp_path, name, text, key, words):
    """Refused by init, naming the MJCF, before any file is written."""
    mjcf = _write(tmp_path, name, text)
    with pytest.raises(ConfigError) as info:
        write_config(mjcf, tmp_path / "cfg")
    assert info.value.file == str(mjcf)
    assert info.value.key == key
    assert words in str(info.value)
    assert not (tmp_path / "cfg" / "robot.yaml").exists()


def test_a_muscle_that_crosses_no_joint_is_named_by_init(tmp_path, capsys):
    """What the written files' loading finds is printed one reason a line, under the MJCF."""
    mjcf = _write(tmp_path, "idle", tendon_arm(idle=True))
    assert main(["init", str(mjcf), "--out", str(tmp_path / "cfg")]) == 2
    err = capsys.readouterr().err
    assert f"{mjcf}: <robot>: expected an arm the controller can describe" in err
    assert "muscles[4].tendon: expected a route whose length changes" in err
    assert "Traceback" not in err
