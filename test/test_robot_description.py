"""RViz's view of every shipped robot: the robot_description has geometry on every moving body,
the muscle markers are drawn in one of its frames, and a URDF generated from an MJCF puts its
links where MuJoCo puts the bodies (MuJoCo's own kinematics is the oracle).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from musculo_control.model.description import base_frame, robot_description, root_link
from musculo_control.model.robot import load_robot
from musculo_control.model.urdf_from_mjcf import urdf_from_mjcf
from musculo_control.paths import config_root

#: Seeded poses the readings are compared at (beside the middle of the joint range).
_POSES = 4
#: Agreement required: positions [m], rotations [-], M and g relative to their largest entry.
_POSITION_TOL_M = 1e-5
_ROTATION_TOL = 1e-5
_DYNAMICS_RTOL = 1e-4


def disagreement(model: pin.Model, reference: mujoco.MjModel) -> str | None:
    """Where a Pinocchio model differs from MuJoCo's beyond the tolerances, or None.

    Compared at the middle of the joint range and seeded poses inside it: the world pose of
    every body and site both models name, the mass matrix and the gravity torque.
    """
    names = [str(model.names[i]) for i in range(1, model.njoints)]
    ids = [mujoco.mj_name2id(reference, mujoco.mjtObj.mjOBJ_JOINT, n) for n in names]
    if len(names) != reference.njnt or min(ids, default=0) < 0:
        return (f"joints {names} against MuJoCo's "
                f"{[reference.joint(j).name for j in range(reference.njnt)]}")
    qadr = np.array([reference.jnt_qposadr[j] for j in ids])
    vadr = np.array([reference.jnt_dofadr[j] for j in ids])
    lo = np.where(reference.jnt_limited[ids], reference.jnt_range[ids, 0], -1.0)
    hi = np.where(reference.jnt_limited[ids], reference.jnt_range[ids, 1], 1.0)
    rng = np.random.default_rng(0)
    poses = np.vstack([0.5 * (lo + hi), lo + (hi - lo) * rng.random((_POSES, len(names)))])
    frames = []
    for fid, frame in enumerate(model.frames):
        kind = {pin.FrameType.BODY: mujoco.mjtObj.mjOBJ_BODY,
                pin.FrameType.OP_FRAME: mujoco.mjtObj.mjOBJ_SITE}.get(frame.type)
        if kind is not None:
            oid = mujoco.mj_name2id(reference, kind, frame.name)
            if oid >= 0:
                frames.append((fid, kind, oid, str(frame.name)))
    saved = model.gravity.linear.copy()
    model.gravity.linear = np.array(reference.opt.gravity)
    data, ref = model.createData(), mujoco.MjData(reference)
    full = np.zeros((reference.nv, reference.nv))
    try:
        for q in poses:
            ref.qpos[qadr] = q
            mujoco.mj_forward(reference, ref)
            pin.framesForwardKinematics(model, data, q)
            for fid, kind, oid, name in frames:
                body = kind == mujoco.mjtObj.mjOBJ_BODY
                pos = ref.xpos[oid] if body else ref.site_xpos[oid]
                rot = (ref.xmat[oid] if body else ref.site_xmat[oid]).reshape(3, 3)
                off = float(np.abs(data.oMf[fid].translation - pos).max())
                turn = float(np.abs(data.oMf[fid].rotation - rot).max())
                if off > _POSITION_TOL_M or turn > _ROTATION_TOL:
                    return (f"'{name}' {1e3 * off:.2f} mm and {turn:.2e} (rotation) away from "
                            f"MuJoCo's at q = {np.round(q, 3).tolist()}")
            M = pin.crba(model, data, q)
            M = np.triu(M) + np.triu(M, 1).T
            mujoco.mj_fullM(reference, ref, full)
            Mref = full[np.ix_(vadr, vadr)]
            g = pin.computeGeneralizedGravity(model, data, q)
            gref = ref.qfrc_bias[vadr]  # at rest: gravity alone
            for label, a, b in (("mass matrix", M, Mref), ("gravity torque", g, gref)):
                scale = max(float(np.abs(b).max()), 1e-9)
                if float(np.abs(a - b).max()) > _DYNAMICS_RTOL * scale:
                    return (f"{label} off by {np.abs(a - b).max():.3e} (largest entry "
                            f"{scale:.3e}) at q = {np.round(q, 3).tolist()}")
    finally:
        model.gravity.linear = saved
    return None


FOLDERS = sorted(p for p in config_root().iterdir() if (p / "robot.yaml").is_file())


def _links(text: str) -> dict[str, ET.Element]:
    return {link.get("name"): link for link in ET.fromstring(text).iter("link")}


def _moving_bodies(text: str) -> list[str]:
    """Links that carry mass and are moved by at least one non-fixed joint."""
    root = ET.fromstring(text)
    parent = {j.find("child").get("link"): j for j in root.iter("joint")}
    out = []
    for name, link in _links(text).items():
        mass = link.find("inertial/mass")
        if mass is None or float(mass.get("value")) <= 0.0:
            continue
        joint, moves = parent.get(name), False
        while joint is not None and not moves:
            moves = joint.get("type") != "fixed"
            joint = parent.get(joint.find("parent").get("link"))
        if moves:
            out.append(name)
    return out


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_moving_body_has_a_visual(folder):
    text = robot_description(folder)
    links = _links(text)
    moving = _moving_bodies(text)
    robot = load_robot(folder)
    assert len(moving) >= robot.arm.n_joints  # at least one body per joint
    bare = [name for name in moving if links[name].find("visual/geometry") is None]
    assert not bare, f"{folder.name}: moving links without a visual: {bare}"


def _marker_frames(folder: Path) -> set[str]:
    """The frame_id of every marker muscle_marker_node publishes for ``folder``."""
    rclpy = pytest.importorskip("rclpy")
    from musculo_control.nodes.muscle_marker_node import MuscleMarkerNode

    class Published:
        def __init__(self) -> None:
            self.messages: list = []

        def publish(self, msg) -> None:
            self.messages.append(msg)

    rclpy.init(args=["--ros-args", "-p", f"config_dir:={folder}"])
    node = None
    try:
        node = MuscleMarkerNode()
        node._q = node.robot.home_pose_rad.copy()  # as if a joint state had come
        sent = node._pub = Published()
        node._draw()
        markers = [m for msg in sent.messages for m in msg.markers]
        assert len(markers) >= node.robot.n_muscles
        return {m.header.frame_id for m in markers}
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_muscle_marker_frame_is_a_link_of_the_description(folder):
    links = _links(robot_description(folder))
    frames = _marker_frames(folder)
    assert frames and frames <= set(links), (frames, sorted(links))


# --- the shipped URDF's shapes --------------------------------------------------------------

def _solid_inertia(geometry: ET.Element, mass: float) -> np.ndarray:
    """Principal moments of a uniform solid of the URDF shape about its centre [kg m^2]."""
    shape = geometry[0]
    if shape.tag == "sphere":
        r = float(shape.get("radius"))
        return np.full(3, 0.4 * mass * r * r)
    if shape.tag == "cylinder":
        r, h = float(shape.get("radius")), float(shape.get("length"))
        side = mass * (3.0 * r * r + h * h) / 12.0
        return np.array([side, side, 0.5 * mass * r * r])
    x, y, z = (float(v) for v in shape.get("size").split())
    return mass / 12.0 * np.array([y * y + z * z, x * x + z * z, x * x + y * y])


def test_the_shipped_urdf_shapes_agree_with_its_masses_and_inertias():
    """Each moving link is drawn as one solid: with the link's mass it has the file's inertia
    (within 25 %: the segments' tables are not exact cylinders), and it holds the centre of
    mass."""
    text = robot_description(config_root() / "musashi_left_arm")
    links = _links(text)
    for name in _moving_bodies(text):
        link = links[name]
        visuals = link.findall("visual")
        assert len(visuals) == 1, name
        mass = float(link.find("inertial/mass").get("value"))
        inertia = link.find("inertial/inertia")
        declared = np.array([float(inertia.get(k)) for k in ("ixx", "iyy", "izz")])
        solid = _solid_inertia(visuals[0].find("geometry"), mass)
        np.testing.assert_allclose(solid, declared, rtol=0.25, err_msg=name)
        com = np.array([float(v) for v in link.find("inertial/origin").get("xyz").split()])
        origin = visuals[0].find("origin")
        centre = np.zeros(3) if origin is None else np.array(
            [float(v) for v in origin.get("xyz").split()])
        shape = visuals[0].find("geometry")[0]
        half = (float(shape.get("length")) / 2.0 if shape.tag == "cylinder"
                else float(shape.get("radius")))
        assert np.linalg.norm(com - centre) <= half, name


# --- a URDF generated from an MJCF ----------------------------------------------------------

#: Joints off the body origin, two joints and a slide in one body, an unlimited hinge, turned
#: bodies and geoms, a capsule, an ellipsoid, a mesh, a hidden geom and a floor.
TRICKY = """<mujoco model="tricky">
  <compiler angle="radian" autolimits="true"/>
  <asset><mesh name="tetra" vertex="0 0 0  1 0 0  0 1 0  0 0 1" scale="0.05 0.04 0.03"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="base" pos="0.1 0.2 0.3" euler="0.3 -0.2 0.5">
      <geom type="box" size="0.05 0.04 0.03"/>
      <body name="link1" pos="0 0 0.1" quat="0.9 0.1 0.3 0.2">
        <joint name="j1" axis="0 0 1" pos="0.02 0 0" range="-1 1"/>
        <joint name="j2" axis="1 0 0" pos="0 0.03 0.01" range="-1 1"/>
        <inertial pos="0 0 0.1" quat="0.8 0.2 0.1 0.3" mass="1" diaginertia="0.01 0.02 0.03"/>
        <geom type="capsule" fromto="0 0 0 0.05 0 0.2" size="0.02"/>
        <geom type="ellipsoid" size="0.03 0.02 0.01" pos="0 0 0.2" rgba="1 0 0 1"/>
        <geom type="sphere" size="0.01" group="3"/>
        <body name="link2" pos="0 0 0.2" euler="0 0.4 0">
          <joint name="slide" type="slide" axis="0 1 1" range="-0.1 0.1"/>
          <joint name="j3" axis="0 1 0" pos="0.01 0 0"/>
          <geom type="cylinder" size="0.01 0.05" euler="0.2 0.1 0"/>
          <body name="tip" pos="0 0 0.1">
            <geom type="mesh" mesh="tetra" pos="0.01 0 0"/>
            <site name="tip_site" pos="0 0 0.02"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture()
def tricky(tmp_path) -> Path:
    path = tmp_path / "tricky.xml"
    path.write_text(TRICKY)
    return path


def _frames_agree(path: Path, poses: int, seed: int) -> int:
    """Compare every body's frame in Pinocchio's reading of the generated URDF with MuJoCo's
    at seeded joint values (unlimited joints over +-pi); the number of frames compared."""
    reference = mujoco.MjModel.from_xml_path(str(path))
    model = pin.buildModelFromXML(urdf_from_mjcf(path))
    data, ref = model.createData(), mujoco.MjData(reference)
    names = [reference.joint(j).name for j in range(reference.njnt)]
    assert sorted(str(n) for n in model.names[1:]) == sorted(names)
    rng = np.random.default_rng(seed)
    compared = 0
    for _ in range(poses):
        q = pin.neutral(model)
        for j, name in enumerate(names):
            lo, hi = reference.jnt_range[j] if reference.jnt_limited[j] else (-np.pi, np.pi)
            value = rng.uniform(lo, hi)
            ref.qpos[reference.jnt_qposadr[j]] = value
            joint = model.joints[model.getJointId(name)]
            q[joint.idx_q: joint.idx_q + joint.nq] = (
                [value] if joint.nq == 1 else [np.cos(value), np.sin(value)])
        mujoco.mj_kinematics(reference, ref)
        pin.framesForwardKinematics(model, data, q)
        for b in range(reference.nbody):
            name = reference.body(b).name
            fid = model.getFrameId(name, pin.FrameType.BODY)
            assert fid < model.nframes, f"no link for body '{name}'"
            np.testing.assert_allclose(data.oMf[fid].translation, ref.xpos[b], atol=1e-12,
                                       err_msg=name)
            np.testing.assert_allclose(data.oMf[fid].rotation, ref.xmat[b].reshape(3, 3),
                                       atol=1e-12, err_msg=name)
            compared += 1
    return compared


def test_generated_link_frames_are_mujocos_body_frames(tricky):
    assert _frames_agree(tricky, poses=6, seed=1) == 6 * 5
    assert _frames_agree(config_root() / "planar_arm" / "arm.xml", poses=6, seed=2) == 6 * 4


def test_the_generated_planar_arm_has_mujocos_mass_matrix_and_gravity():
    """The inertias go along: Pinocchio's reading of the generated URDF agrees with MuJoCo on
    frames, sites' bodies, M(q) and g(q) (the comparison below)."""
    path = config_root() / "planar_arm" / "arm.xml"
    reference = mujoco.MjModel.from_xml_path(str(path))
    model = pin.buildModelFromXML(urdf_from_mjcf(path))
    assert disagreement(model, reference) is None


def test_generated_visuals_follow_the_geoms(tricky):
    links = _links(urdf_from_mjcf(tricky))
    shapes = {name: [v.find("geometry")[0].tag for v in link.findall("visual")]
              for name, link in links.items()}
    assert shapes["world"] == []  # the floor is left out
    assert shapes["base"] == ["box"]
    # capsule = cylinder + two spheres; ellipsoid = its box; the group-3 sphere is hidden
    assert shapes["link1"] == ["cylinder", "sphere", "sphere", "box"]
    assert shapes["link2"] == ["cylinder"]
    assert shapes["tip"] == ["box"]  # the mesh's bounding box
    red = links["link1"].findall("visual")[3].find("material/color").get("rgba")
    assert [float(c) for c in red.split()] == [1.0, 0.0, 0.0, 1.0]
    # the joint chain's own links carry no mass and no visual
    assert links["link1__j1"].find("inertial") is None and links["link1__j1"].find("visual") is None


def test_a_ball_joint_is_refused_by_name(tmp_path):
    from musculo_control.errors import ConfigError

    path = tmp_path / "ball.xml"
    path.write_text(TRICKY.replace('<joint name="j2" axis="1 0 0" pos="0 0.03 0.01" range="-1 1"/>',
                                   '<joint name="j2" type="ball"/>'))
    with pytest.raises(ConfigError, match="j2"):
        urdf_from_mjcf(path)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_launch_files_fixed_frame_is_the_robots_base_frame(folder):
    """RViz is started with the frame the controller and the markers use, a root link."""
    text = robot_description(folder)
    assert base_frame(folder, text) == load_robot(folder).arm.base_frame
    assert base_frame(folder) == root_link(text)
