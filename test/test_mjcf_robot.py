"""An MJCF as the robot description: MuJoCo's rigid-body terms checked against Pinocchio's
reading of the same file (where Pinocchio reads it), MuJoCo's tendon Jacobian against finite
differences of its lengths, the mock arm built from the same file, per-muscle peak forces,
declared moment-arm signs, and refusals that name the problem.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import random_poses

from musculo_control.errors import ConfigError
from musculo_control.model.geometry import MuscleGeometry
from musculo_control.model.mujoco_tendons import MujocoTendonGeometry, muscle_peak_forces
from musculo_control.model.robot import load_robot
from musculo_control.paths import config_root
from musculo_control.sim.mujoco_arm import (
    ModelErrorConfig,
    PathBends,
    build_mujoco_arm,
    draw_model_error,
    muscle_sites,
    tendon_jacobian,
)


def mjcf_folders() -> list[Path]:
    """Every shipped config folder whose robot.yaml names an MJCF."""
    out = []
    for folder in sorted(config_root().iterdir()):
        robot_yaml = folder / "robot.yaml"
        if robot_yaml.is_file() and "mjcf" in (yaml.safe_load(robot_yaml.read_text())["arm"]):
            out.append(folder)
    return out


@pytest.fixture(scope="module", params=mjcf_folders(), ids=lambda p: p.name)
def mjcf_robot(request):
    return load_robot(request.param)


def test_a_shipped_robot_is_described_by_an_mjcf():
    assert [p.name for p in mjcf_folders()] == ["planar_arm"]


def _mujoco_reference(robot):
    """MuJoCo's own reading of the file: the model as compiled from it, untouched."""
    return build_mujoco_arm(robot)


def _both_at(robot, count, seed):
    """(MuJoCo model, its data after mj_forward, Pinocchio data, q) at seeded poses."""
    ref = _mujoco_reference(robot)
    data, pdata = mujoco.MjData(ref.model), robot.new_data()
    for q in random_poses(robot, count, seed=seed, margin_rad=0.0):
        data.qpos[ref.qpos_adr] = q
        mujoco.mj_forward(ref.model, data)
        yield ref, data, pdata, q


def test_mujocos_terms_agree_with_pinocchios_reading_of_the_file(mjcf_robot):
    """M, M^-1, g, C qd, hand pose and Jacobian of the controller's backend (MuJoCo) against
    Pinocchio's own MJCF reader, an independent library, at seeded poses and speeds."""
    robot = mjcf_robot
    oracle = pin.buildModelFromMJCF(str(robot.arm.description_path))
    oracle.gravity.linear = robot.arm.gravity_m_s2
    pdata = oracle.createData()
    fid = oracle.getFrameId(robot.arm.config.task_frame)
    ws = robot.new_data()
    rng = np.random.default_rng(5)
    for q in random_poses(robot, 40, seed=5):
        qd = rng.uniform(-2.0, 2.0, robot.arm.n_joints)
        terms = robot.arm.body.dynamics(ws, q, qd, robot.arm.task_frame)
        M = pin.crba(oracle, pdata, q)
        M = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_allclose(terms.mass_matrix, M, atol=1e-10)
        np.testing.assert_allclose(terms.mass_matrix_inverse @ M, np.eye(len(q)), atol=1e-9)
        g = pin.computeGeneralizedGravity(oracle, pdata, q)
        np.testing.assert_allclose(terms.gravity_torque, g, atol=1e-10)
        c = pin.rnea(oracle, pdata, q, qd, np.zeros_like(q)) - g
        np.testing.assert_allclose(terms.coriolis_torque, c, atol=1e-10)
        pin.computeJointJacobians(oracle, pdata, q)
        pin.updateFramePlacements(oracle, pdata)
        np.testing.assert_allclose(terms.position, pdata.oMf[fid].translation, atol=1e-12)
        np.testing.assert_allclose(terms.rotation, pdata.oMf[fid].rotation, atol=1e-12)
        J = pin.getFrameJacobian(oracle, pdata, fid, pin.LOCAL_WORLD_ALIGNED)
        np.testing.assert_allclose(terms.jacobian, J, atol=1e-12)


def test_mujoco_tendon_jacobian_matches_central_differences(mjcf_robot):
    robot = mjcf_robot
    geo = robot.geometry
    h = 1e-7
    worst = 0.0
    for q in random_poses(robot, 60, seed=1, margin_rad=1e-3):
        jm = geo.kinematics_at(q).jacobian
        fd = np.empty_like(jm)
        for j in range(robot.arm.n_joints):
            dq = np.zeros_like(q)
            dq[j] = h
            fd[:, j] = (geo.lengths_at(q + dq) - geo.lengths_at(q - dq)) / (2 * h)
        worst = max(worst, float(np.abs(jm - fd).max()))
    assert worst < 1e-6, worst


def test_the_geometry_is_the_interface_and_mujocos_tendons(mjcf_robot):
    assert isinstance(mjcf_robot.geometry, MujocoTendonGeometry)
    assert isinstance(mjcf_robot.geometry, MuscleGeometry)
    assert "MuJoCo tendons" in mjcf_robot.geometry.source


def test_snapshot_pass_gives_the_same_kinematics(mjcf_robot):
    """The tendons reuse the dynamics pass's body positions (only mj_tendon runs)."""
    robot = mjcf_robot
    data = robot.new_data()
    for q in random_poses(robot, 5, seed=2):
        robot.arm.body.dynamics(data, q, np.zeros_like(q), robot.arm.task_frame)
        a = robot.geometry.kinematics_after_jacobians(q, data)
        b = robot.geometry.kinematics_at(q)
        np.testing.assert_array_equal(a.length_m, b.length_m)
        np.testing.assert_array_equal(a.jacobian, b.jacobian)


def test_mock_without_error_has_the_controllers_tendons(mjcf_robot):
    """The mock arm is the same MJCF: with no model error its tendons are the controller's."""
    robot = mjcf_robot
    ref = _mujoco_reference(robot)
    data = mujoco.MjData(ref.model)
    for q in random_poses(robot, 20, seed=3, margin_rad=0.0):
        data.qpos[ref.qpos_adr] = q
        mujoco.mj_fwdPosition(ref.model, data)
        kin = robot.geometry.kinematics_at(q)
        np.testing.assert_allclose(data.ten_length[ref.tendon_ids], kin.length_m, atol=1e-14)
        ten_j = tendon_jacobian(ref.model, data)[ref.tendon_ids][:, ref.dof_adr]
        np.testing.assert_allclose(ten_j, kin.jacobian, atol=1e-14)
    # its actuators are the project's tension actuators, not the MJCF's muscles
    assert ref.model.nu == robot.n_muscles
    assert np.all(ref.model.actuator_gaintype == int(mujoco.mjtGain.mjGAIN_FIXED))
    assert np.all(ref.model.actuator_gear[:, 0] == -1.0)


def test_model_error_moves_sites_and_wrap_radii(mjcf_robot):
    robot = mjcf_robot
    sites, geoms = muscle_sites(robot)
    assert sites and geoms  # the planar arm's tendons pass sites and wrap cylinders
    cfg = ModelErrorConfig(via_point_error_mm=2.0, wrap_radius_error_mm=2.0)
    err = draw_model_error(robot, cfg, np.random.default_rng(0))
    assert err.via_point_offset_m.shape == (len(sites), 3)
    assert 0.0 < np.abs(err.wrap_radius_change_m).max() <= 2e-3
    wrong = build_mujoco_arm(robot, error=err)
    data = mujoco.MjData(wrong.model)
    data.qpos[wrong.qpos_adr] = robot.home_pose_rad
    mujoco.mj_fwdPosition(wrong.model, data)
    tj = tendon_jacobian(wrong.model, data)[wrong.tendon_ids][:, wrong.dof_adr]
    arm_error = np.abs(tj - robot.geometry.kinematics_at(robot.home_pose_rad).jacobian).max()
    assert 2e-4 < arm_error < 5e-3  # moment arms off by millimetres, as configured


def test_per_muscle_peak_force_comes_from_the_muscle_actuators():
    robot = load_robot(config_root() / "planar_arm")
    assert robot.f1_n.tolist() == [900.0, 700.0, 600.0, 600.0, 500.0, 500.0]
    assert all("muscle actuator" in s for s in robot.f1_source)
    # the Hill curve uses each muscle's own f1: at l_o, f_a = f1
    forces = robot.forces(robot.l_opt_m)
    np.testing.assert_allclose(forces.active_n, robot.f1_n)


AUTO_FORCE = """<mujoco>
  <compiler angle="radian"/>
  <worldbody>
    <site name="a" pos="0 0.05 0.1"/>
    <body name="link">
      <joint name="j" axis="1 0 0" range="-1 1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02"/>
      <site name="b" pos="0 0.04 -0.1"/>
    </body>
  </worldbody>
  <tendon><spatial name="t"><site site="a"/><site site="b"/></spatial></tendon>
  <actuator><muscle name="t" tendon="t" scale="300"/></actuator>
</mujoco>"""


def test_automatic_muscle_force_follows_mujocos_rule():
    """force < 0 means scale / acc0: compare with MuJoCo's own muscle gain at the optimal length
    and rest (mju_muscleGain), on a model whose length range MuJoCo computes itself."""
    theirs = mujoco.MjModel.from_xml_string(AUTO_FORCE)
    lr = theirs.actuator_lengthrange[0]
    prm = theirs.actuator_gainprm[0, :9]
    assert prm[2] < 0.0  # force left for MuJoCo to work out
    optimal = lr[0] + (1.0 - prm[0]) * (lr[1] - lr[0]) / (prm[1] - prm[0])
    peak = -mujoco.mju_muscleGain(optimal, 0.0, lr, theirs.actuator_acc0[0], prm)
    spec = mujoco.MjSpec.from_string(AUTO_FORCE)
    spec.compiler.LRopt.mode = mujoco.mjtLRMode.mjLRMODE_NONE
    ours = muscle_peak_forces(spec.compile())
    assert peak > 0.0
    assert ours[0] == pytest.approx(peak, rel=1e-9)


def test_paths_follow_the_tendon(mjcf_robot):
    """The drawn polyline runs from the tendon's first site to its last through MuJoCo's wrap
    tangent points: as long as the tendon but for the chords drawn across its arcs."""
    robot = mjcf_robot
    ref = _mujoco_reference(robot)
    data = mujoco.MjData(ref.model)
    m = ref.model
    for q in random_poses(robot, 10, seed=4):
        data.qpos[ref.qpos_adr] = q
        mujoco.mj_kinematics(m, data)
        lengths = robot.geometry.lengths_at(q)
        for path, length, t in zip(robot.geometry.paths_at(q), lengths, ref.tendon_ids):
            drawn = np.linalg.norm(np.diff(path, axis=0), axis=1).sum()
            assert 0.95 * length <= drawn <= length + 1e-12
            first = m.wrap_objid[m.tendon_adr[t]]
            last = m.wrap_objid[m.tendon_adr[t] + m.tendon_num[t] - 1]
            np.testing.assert_allclose(path[0], data.site_xpos[first], atol=1e-12)
            np.testing.assert_allclose(path[-1], data.site_xpos[last], atol=1e-12)


# -- refusals ------------------------------------------------------------------------------------
@pytest.fixture()
def planar_copy(tmp_path):
    folder = tmp_path / "planar_arm"
    shutil.copytree(config_root() / "planar_arm", folder)
    return folder


def _edit(folder: Path, name: str, change) -> None:
    path = folder / name
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_a_wrongly_declared_moment_arm_sign_names_muscle_joint_and_value(planar_copy):
    _edit(planar_copy, "muscles.yaml",
          lambda d: d["muscles"][1]["moment_arm_signs"][0].__setitem__("sign", 1))
    with pytest.raises(ConfigError) as info:
        load_robot(planar_copy)
    err = info.value
    assert err.key == "muscles[1].moment_arm_signs[0]"
    assert "teres_major" in err.expected and "'shoulder'" in err.expected
    assert "cm at q = [shoulder=" in str(err.received)


def test_a_moment_arm_that_flips_over_the_range_is_caught(planar_copy):
    """Widen the shoulder's range until the extensors wrap over the top: their declared sign
    no longer holds, and the error names the pose where it flips."""
    xml = planar_copy / "arm.xml"
    xml.write_text(xml.read_text().replace('range="-0.6 1.7"', 'range="-0.6 2.4"'))
    with pytest.raises(ConfigError) as info:
        load_robot(planar_copy)
    assert "moment_arm_signs" in info.value.key
    assert "to stay" in info.value.expected and "shoulder=+2.400" in str(info.value.received)


@pytest.mark.parametrize("change, key, expected", [
    (lambda d: d["muscles"][0].__setitem__("tendon", "deltiod"), "muscles[0].tendon",
     "a tendon of arm.xml"),
    (lambda d: d["muscles"][0].__setitem__("path", [{"link": "torso", "point_m": [0, 0, 0]},
                                                    {"link": "upper_arm", "point_m": [0, 0, 0]}]),
     "muscles[0].path", "no via-points for an MJCF robot"),
])
def test_muscles_file_mistakes_on_an_mjcf_robot(planar_copy, change, key, expected):
    _edit(planar_copy, "muscles.yaml", change)
    with pytest.raises(ConfigError) as info:
        load_robot(planar_copy)
    assert info.value.key == key and expected in info.value.expected, str(info.value)


def test_a_tendon_on_a_urdf_robot_is_refused(tmp_path):
    folder = tmp_path / "arm"
    shutil.copytree(config_root() / "musashi_left_arm", folder)
    _edit(folder, "muscles.yaml", lambda d: d["muscles"][0].__setitem__("tendon", "x"))
    with pytest.raises(ConfigError) as info:
        load_robot(folder)
    assert info.value.key in ("muscles[0].tendon",)


@pytest.mark.parametrize("change, key, expected", [
    (lambda d: d["arm"].__setitem__("urdf", "arm.urdf"), "arm.urdf", "exactly one"),
    (lambda d: d["arm"].pop("mjcf"), "arm.urdf", "exactly one"),
    (lambda d: d["arm"].__setitem__("mjcf", "nope.xml"), "arm.mjcf", "an existing MJCF"),
    (lambda d: d["arm"].__setitem__("task_frame", "palm"), "arm.task_frame", "a frame of the MJCF"),
])
def test_robot_yaml_mistakes_on_an_mjcf_robot(planar_copy, change, key, expected):
    _edit(planar_copy, "robot.yaml", change)
    with pytest.raises(ConfigError) as info:
        load_robot(planar_copy)
    assert info.value.key == key and expected in info.value.expected, str(info.value)


@pytest.mark.parametrize("edit, what", [
    (('<joint name="shoulder" range="-0.6 1.7"/>',
      '<joint name="shoulder" range="-0.6 1.7"/><joint name="twist" type="ball"/>'), "ball"),
    (("</tendon>", '</tendon><equality><weld body1="forearm"/></equality>'), "weld"),
    (("</tendon>", '</tendon><equality><connect body1="forearm" anchor="0 0 0"/></equality>'),
     "connect"),
    (('<joint name="elbow" range="0.1 2.3"/>', '<freejoint/>'), "free"),
])
def test_what_the_controller_cannot_model_is_refused_with_the_reason(planar_copy, edit, what):
    xml = planar_copy / "arm.xml"
    xml.write_text(xml.read_text().replace(*edit))
    with pytest.raises(ConfigError) as info:
        load_robot(planar_copy)
    assert info.value.file.endswith("arm.xml")
    assert what in str(info.value).lower(), str(info.value)


def test_a_coupled_joint_is_no_coordinate_and_the_error_says_why(planar_copy):
    """Couple the elbow to the shoulder: robot.yaml still lists it, and the error names the
    equality constraint it follows."""
    xml = planar_copy / "arm.xml"
    xml.write_text(xml.read_text().replace(
        "</tendon>", '</tendon><equality><joint name="tie" joint1="elbow" joint2="shoulder" '
                     'polycoef="0.5 1 0 0 0"/></equality>'))
    with pytest.raises(ConfigError) as info:
        load_robot(planar_copy)
    assert info.value.key == "arm.joints[1]"
    assert "'elbow' follows joint 'shoulder'" in info.value.expected
    assert "'tie'" in info.value.expected


def test_task_offset_moves_the_task_point_in_both_models(planar_copy):
    """task_frame + task_offset_m: the controller and the mock find the same point."""
    _edit(planar_copy, "robot.yaml", lambda d: d["arm"].update(
        {"task_frame": "forearm", "task_offset_m": [0.0, 0.0, -0.27]}))
    robot = load_robot(planar_copy)
    ref = _mujoco_reference(robot)
    data = mujoco.MjData(ref.model)
    site = mujoco.mj_name2id(ref.model, mujoco.mjtObj.mjOBJ_SITE, "hand")
    for q in random_poses(robot, 5, seed=6, margin_rad=0.0):
        data.qpos[ref.qpos_adr] = q
        mujoco.mj_kinematics(ref.model, data)
        hand = robot.arm.hand_pose(q)[0]
        np.testing.assert_allclose(hand, data.site_xpos[site], atol=1e-12)  # the palm site
        np.testing.assert_allclose(
            ref.point_world(data, ref.task_body_id, ref.task_point_local), hand, atol=1e-12)


def test_an_mjcf_split_into_includes_reads_as_one_file(planar_copy):
    """MuJoCo resolves <include> itself: the split file gives the same hand, M and g."""
    whole = load_robot(planar_copy)
    xml = planar_copy / "arm.xml"
    text = xml.read_text()
    start, end = text.index("  <worldbody>"), text.index("  </worldbody>") + len("  </worldbody>")
    (planar_copy / "body.xml").write_text(f"<mujocoinclude>\n{text[start:end]}\n</mujocoinclude>\n")
    xml.write_text(text[:start] + '  <include file="body.xml"/>' + text[end:])
    split = load_robot(planar_copy)
    for q in random_poses(whole, 10, seed=7):
        a = whole.arm.body.dynamics(whole.new_data(), q, q, whole.arm.task_frame)
        b = split.arm.body.dynamics(split.new_data(), q, q, split.arm.task_frame)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_an_arm_in_a_tilted_plane_meets_only_the_in_plane_hand_axes(planar_copy):
    """Turn the torso 0.1 rad about z: the arm's plane is no longer the base x-z plane, so a
    hand target (x, 0, z) is off the plane. With hand_axes [x, z] the pose meets x and z."""
    from musculo_control.sim.setup import Overrides, load_setup

    xml = planar_copy / "arm.xml"
    xml.write_text(xml.read_text().replace('<body name="torso">',
                                           '<body name="torso" euler="0 0 0.1">'))
    with pytest.raises(ConfigError) as info:
        load_setup(planar_copy, Overrides.parse([]))
    assert info.value.key == "poses.named[0]" and "reach_start" in str(info.value)
    _edit(planar_copy, "robot.yaml", lambda d: d["poses"].__setitem__("hand_axes", ["x", "z"]))
    robot = load_robot(planar_copy)
    sol = robot.poses.solve_named("reach_start", robot.home_pose_rad)
    np.testing.assert_allclose(sol.hand_m[[0, 2]], [0.40, -0.25], atol=1e-6)
    assert abs(sol.hand_m[1]) > 1e-3  # y follows from the tilted plane
    load_setup(planar_copy, Overrides.parse([]))  # the trajectory is then followable


def test_a_placed_root_body_is_kept(planar_copy):
    """A joint-less body right under the world, placed and turned: the controller's hand is
    where the mock's is (Pinocchio 4.1's own MJCF reader drops that placement)."""
    xml = planar_copy / "arm.xml"
    xml.write_text(xml.read_text().replace('<body name="torso">',
                                           '<body name="torso" pos="0 0 1" euler="0 0 0.1">'))
    robot = load_robot(planar_copy)
    ref = build_mujoco_arm(robot)
    data = mujoco.MjData(ref.model)
    data.qpos[ref.qpos_adr] = robot.home_pose_rad
    mujoco.mj_kinematics(ref.model, data)
    hand = robot.poses.targets_at(robot.home_pose_rad)[0]
    np.testing.assert_allclose(
        hand, ref.point_world(data, ref.task_body_id, ref.task_point_local), atol=1e-12)
    assert hand[2] > 0.5  # mounted a metre up, not at the origin


def _bends_tendon_by_tendon(data, tendon_ids):
    """Each tendon's bends summed point by point from MuJoCo's wrap list, branch by branch."""
    out = []
    for t in tendon_ids:
        start, n = int(data.ten_wrapadr[t]), int(data.ten_wrapnum[t])
        objects, points = data.wrap_obj.reshape(-1), data.wrap_xpos.reshape(-1, 3)
        total, branch = 0.0, []
        for k in range(start, start + n + 1):
            if k == start + n or objects[k] == -2:
                for p, q, r in zip(branch, branch[1:], branch[2:]):
                    u, w = points[q] - points[p], points[r] - points[q]
                    c = u @ w / (np.linalg.norm(u) * np.linalg.norm(w))
                    total += float(np.arccos(np.clip(c, -1.0, 1.0)))
                branch = []
            else:
                branch.append(k)
        out.append(total)
    return np.array(out)


def test_path_bends_follow_wraps_that_engage_and_let_go(mjcf_robot):
    """PathBends (every tendon at once, its layout rebuilt when a wrap changes) against a plain
    loop over each tendon's points, over poses where the cylinders engage and let go."""
    arm = build_mujoco_arm(mjcf_robot)
    bends = PathBends(arm.tendon_ids, arm.model)
    assert not bends.fixed  # the planar arm wraps cylinders
    data = mujoco.MjData(arm.model)
    layouts = set()
    for q in random_poses(mjcf_robot, 40, seed=3):
        data.qpos[arm.qpos_adr] = q
        mujoco.mj_fwdPosition(arm.model, data)
        layouts.add(tuple(data.ten_wrapnum[arm.tendon_ids]))
        np.testing.assert_allclose(bends(data), _bends_tendon_by_tendon(data, arm.tendon_ids),
                                   atol=1e-12)
    assert len(layouts) > 1  # wraps engaged and let go between the poses
    # a model with via-points only has one layout: built once, never compared
    assert PathBends(arm.tendon_ids, mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody/></mujoco>")).fixed
