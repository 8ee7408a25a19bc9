"""The mock arm's MuJoCo model, built in code from the same description as the controller's model.

From a URDF: MuJoCo parses the URDF itself (:meth:`mujoco.MjSpec.from_string`); this module then
edits the spec: static-body fusion off (so every URDF link stays a body whose frame is the link
frame the via-points are written in), one site per via-point on its link, one spatial tendon per
muscle through its sites.

From an MJCF: the file's own spec (:func:`~musculo_control.model.mujoco_tendons.mjcf_spec`),
keeping its bodies, joints, sites, wrapping geometry and tendons; its actuators (muscles or
anything else), sensors and keyframes are removed, since the project's actuators replace them.

Either way, one tension actuator per muscle whose positive control *pulls*: a motor on the
tendon with gear -1, so the joint torque is ``-Jm^T f`` (SPEC section 2) while
``actuator_force`` reports the tension ``f >= 0``. Contacts are off (the force gauge is
computed, not collided). Angles: the URDF importer sets ``compiler.angle = radian``; an MJCF's
own compiler settings are kept; nothing here writes an angle.

The model serves twice: as an independent oracle for the muscle Jacobian (MuJoCo's ``ten_J`` and
``ten_length`` against the via-point geometry) and as the physics of the mock arm, optionally
with a model error (link masses scaled, via-points or MJCF sites moved, wrap surfaces' radii
changed) so the controller never runs on its own model, and with configured link-mass factors
(``physics.link_mass_scale``, what ``musculo identify`` fits) on top. Nothing here imports ROS.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

import mujoco
import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError
from musculo_control.model.joint_coupling import JointCoupling
from musculo_control.model.mujoco_body import MujocoBody, element_frame
from musculo_control.model.mujoco_tendons import (
    MujocoTendonGeometry,
    compile_spec,
    mjcf_spec,
    tendon_jacobian,
)
from musculo_control.model.robot import Robot

__all__ = ["INTEGRATORS", "ModelError", "ModelErrorConfig", "MujocoArm", "PathBends",
           "PhysicsConfig", "build_mujoco_arm", "draw_model_error", "muscle_sites", "point_on_body",
           "site_name", "tendon_jacobian", "warning_counts"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

INTEGRATORS = {
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
}


@dataclass(frozen=True, kw_only=True)
class PhysicsConfig:
    """Rigid-body physics of the MuJoCo arm (``mock_arm.yaml`` key ``physics``).

    Joint damping and dry friction are real on a tendon-driven arm (pulleys, bearings, tendon
    sheaths), not tuning: the mock models them so the controller meets them.
    """

    timestep_s: float = spec(0.001, gt=0.0, le=0.01, doc="physics step [s]")
    integrator: str = spec("implicitfast", choices=tuple(INTEGRATORS),
                           doc="MuJoCo integrator (implicitfast treats joint damping implicitly)")
    joint_damping_nm_s_rad: tuple[float, ...] = spec(
        (), ge=0.0, doc="viscous damping per joint in robot.yaml order [Nm s/rad]; empty = none")
    joint_frictionloss_nm: tuple[float, ...] = spec(
        (), ge=0.0, doc="dry (Coulomb) friction per joint, MuJoCo frictionloss [Nm]; empty = none")
    joint_armature_kg_m2: tuple[float, ...] = spec(
        (), ge=0.0, doc="reflected rotor inertia per joint [kg m^2]; empty = none")
    tendon_frictionloss_n: float = spec(
        0.0, ge=0.0, doc="load-independent dry friction of every tendon along its path, MuJoCo "
                         "tendon frictionloss [N]; the tension-dependent (capstan) part is the "
                         "mock's (mock_arm.yaml tendon)")
    joint_limit_time_constant_s: float = spec(
        0.005, gt=0.0, doc="time constant of MuJoCo's soft joint-limit constraint [s] (MuJoCo's "
                           "default 0.02 s lets a 300 N tendon push a wrist 0.25 rad past its "
                           "stop); at least two physics steps")
    tension_limit_n: float | None = spec(
        None, gt=0.0, doc="MuJoCo control range of each tension actuator [0, this] [N]; "
                          "absent = unclamped (the mock's envelope clamps first)")
    link_mass_scale: tuple[float, ...] = spec(
        (), gt=0.0, doc="factor on each link's mass and rotational inertia, one per link in the "
                        "description's order (robot.arm.link_names(): URDF links, MJCF named "
                        "bodies) [-], on top of the model error; a massless link ignores its "
                        "factor; empty = every factor 1 (what `musculo identify` fits)")
    moment_arm_scale: tuple[float, ...] = spec(
        (), gt=0.0, doc="factor on each muscle's moment arms, the joint torques its tension "
                        "makes, one per muscle in the muscles file's order [-] (the actuator's "
                        "gear: the tendon's path, length and friction stay as routed); stands "
                        "for via-point errors; empty = every factor 1 (what `musculo identify` "
                        "fits)")

    def check(self, file: str, key: str) -> None:
        if self.joint_limit_time_constant_s < 2.0 * self.timestep_s:
            raise ConfigError(file, f"{key}.joint_limit_time_constant_s" if key else
                              "joint_limit_time_constant_s",
                              f"at least two physics steps ({2.0 * self.timestep_s} s)",
                              self.joint_limit_time_constant_s)

    def check_robot(self, robot: Robot, file: str, key: str) -> None:
        """Every per-joint, per-link and per-muscle list against ``robot``'s counts."""
        self.check_joints(robot.arm.n_joints, file, key)
        self.check_links(robot.arm.link_names(), file, key)
        self.check_muscles(list(robot.muscle_names), file, key)

    def check_links(self, links: list[str], file: str, key: str) -> None:
        """``link_mass_scale``: one factor per link of ``links`` (or none)."""
        if self.link_mass_scale and len(self.link_mass_scale) != len(links):
            raise ConfigError(file, f"{key}.link_mass_scale" if key else "link_mass_scale",
                              f"{len(links)} factors [-], one per link {links}, or an empty "
                              f"list", f"{len(self.link_mass_scale)} values")

    def check_muscles(self, muscles: list[str], file: str, key: str) -> None:
        """``moment_arm_scale``: one factor per muscle of ``muscles`` (or none)."""
        if self.moment_arm_scale and len(self.moment_arm_scale) != len(muscles):
            raise ConfigError(file, f"{key}.moment_arm_scale" if key else "moment_arm_scale",
                              f"{len(muscles)} factors [-], one per muscle {muscles}, or an "
                              f"empty list", f"{len(self.moment_arm_scale)} values")

    def check_joints(self, n_joints: int, file: str, key: str) -> None:
        for name in ("joint_damping_nm_s_rad", "joint_frictionloss_nm", "joint_armature_kg_m2"):
            value = getattr(self, name)
            if value and len(value) != n_joints:
                raise ConfigError(file, f"{key}.{name}" if key else name,
                                  f"{n_joints} values (one per joint) or an empty list",
                                  f"{len(value)} values")


@dataclass(frozen=True, kw_only=True)
class ModelErrorConfig:
    """How far the mock's body differs from the controller's model (``mock_arm.yaml``)."""

    enabled: bool = spec(True, doc="apply the model error (on by default: the controller must "
                                   "never run on its own model)")
    link_mass_error_percent: float = spec(
        10.0, ge=0.0, lt=100.0,
        doc="each link's mass and inertia scaled by 1 + U(-e, e) / 100 [%]")
    via_point_error_mm: float = spec(
        2.0, ge=0.0, doc="each via-point (MJCF: each muscle site) moved by a random vector no "
                         "longer than this [mm]")
    wrap_radius_error_mm: float = spec(
        0.0, ge=0.0, doc="each MJCF wrap cylinder or sphere a muscle passes over: radius off by "
                         "U(-e, e) [mm]; it sets the moment arm wherever the tendon wraps")


@dataclass(frozen=True)
class ModelError:
    """One drawn model error: per link mass scale, per muscle point offset, per wrap radius."""

    mass_scale: Mapping[str, float] = field(default_factory=dict)  # link -> factor [-]
    via_point_offset_m: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))  # (P, 3)
    wrap_radius_change_m: FloatArray = field(default_factory=lambda: np.zeros(0))  # (G,) [m]


def muscle_sites(robot: Robot) -> tuple[list[str], list[str]]:
    """(points, wrap geoms) the muscles pass: MuJoCo names, in first-use order.

    URDF: the sites this module adds, one per via-point, no wrap geometry. MJCF: the sites and
    the wrapping geoms of the muscles' tendons (a site shared by two tendons is listed once).
    """
    if not robot.arm.is_mjcf:
        return [site_name(m.name, k) for m in robot.muscles_config.muscles
                for k in range(len(m.path or ()))], []
    geo = robot.geometry
    if not isinstance(geo, MujocoTendonGeometry):  # the controller uses another backend
        specs = robot.muscles_config.muscles
        geo = MujocoTendonGeometry(cast(MujocoBody, robot.arm.body), robot.arm.description_path,
                                   robot.muscle_names, tuple(m.tendon or m.name for m in specs),
                                   robot.muscles_file)
    model = geo.model
    sites: dict[str, None] = {}
    geoms: dict[str, None] = {}
    for t in geo.tendon_ids:
        for w in range(model.tendon_adr[t], model.tendon_adr[t] + model.tendon_num[t]):
            kind, obj = int(model.wrap_type[w]), int(model.wrap_objid[w])
            if kind == int(mujoco.mjtWrap.mjWRAP_SITE):
                sites[model.site(obj).name] = None
            elif kind in (int(mujoco.mjtWrap.mjWRAP_CYLINDER), int(mujoco.mjtWrap.mjWRAP_SPHERE)):
                geoms[model.geom(obj).name] = None
    return list(sites), list(geoms)


def draw_model_error(robot: Robot, config: ModelErrorConfig,
                     rng: np.random.Generator) -> ModelError:
    """Seeded model error: a mass scale per link (massless ones ignore it; an MJCF's unnamed
    bodies are "body #<id>"), an offset per muscle point, a radius change per wrap surface.

    Offsets have a uniformly random direction and a length uniform in [0, via_point_error_mm];
    radius changes are uniform in [-wrap_radius_error_mm, wrap_radius_error_mm] (drawn last, and
    only where there is wrap geometry, so a via-point arm's draws do not depend on it).
    """
    if not config.enabled:
        return ModelError()
    points, geoms = muscle_sites(robot)
    n_points = len(points)
    links = sorted(robot.arm.link_names())
    e = config.link_mass_error_percent / 100.0
    scales = {link: float(1.0 + rng.uniform(-e, e)) for link in links}
    direction = rng.normal(size=(n_points, 3))
    direction /= np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-12)
    length = rng.uniform(0.0, config.via_point_error_mm * 1e-3, size=(n_points, 1))
    er = config.wrap_radius_error_mm * 1e-3
    radius = rng.uniform(-er, er, size=len(geoms)) if geoms else np.zeros(0)
    # an MJCF's unnamed bodies (MuJoCo's tendon arm has only those) by id, drawn last so that
    # a model without them draws as before
    scales.update({label: float(1.0 + rng.uniform(-e, e)) for label in _unnamed_bodies(robot)})
    return ModelError(mass_scale=scales, via_point_offset_m=direction * length,
                      wrap_radius_change_m=radius)


#: How an unnamed MJCF body is called in :attr:`ModelError.mass_scale`: "body #<id>".
_UNNAMED_BODY = "body #"


def _unnamed_bodies(robot: Robot) -> list[str]:
    body = robot.arm.body
    if not isinstance(body, MujocoBody):
        return []
    model = body.model
    return [f"{_UNNAMED_BODY}{b}" for b in range(1, model.nbody) if not model.body(b).name]


def _body_id(model: mujoco.MjModel, link: str) -> int:
    """MuJoCo id of a body named ``link`` or labelled "body #<id>" (-1: none)."""
    if link.startswith(_UNNAMED_BODY) and link[len(_UNNAMED_BODY):].isdigit():
        bid = int(link[len(_UNNAMED_BODY):])
        return bid if 0 < bid < model.nbody and not model.body(bid).name else -1
    return int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, link))


@dataclass(frozen=True)
class MujocoArm:
    """The compiled model and the index maps from robot names to MuJoCo ids.

    Arrays are in the robot's order: joints as in ``robot.yaml``, tendons and actuators as in the
    muscles file. Tendon ``i`` and actuator ``i`` are MuJoCo ids ``i`` (built in that order).
    """

    model: mujoco.MjModel
    xml: str  # the edited spec as MJCF, for inspection and viewers
    qpos_adr: IntArray  # (n,) qpos address of each robot joint
    dof_adr: IntArray  # (n,) dof address of each robot joint
    tendon_ids: IntArray  # (m,)
    actuator_ids: IntArray  # (m,)
    joint_id: Mapping[str, int]
    tendon_id: Mapping[str, int]
    actuator_id: Mapping[str, int]
    site_id: Mapping[str, int]  # muscle point -> site id (URDF: "<muscle>/<k>"; MJCF: its own)
    body_id: Mapping[str, int]  # URDF link or MJCF body -> body id
    task_body_id: int  # the body that carries the task point (hand)
    task_point_local: FloatArray  # (3,) the task point in that body's frame [m]
    error: ModelError
    coupling: JointCoupling | None  # MJCF: coupled joints follow the robot's; URDF: None

    def set_joints(self, data: mujoco.MjData, q: FloatArray, qd: FloatArray) -> None:
        """Write the robot's joint angles and speeds into ``data``, coupled joints with them
        (so that a reset starts with every joint equality constraint met)."""
        if self.coupling is None:
            data.qpos[self.qpos_adr] = q
            data.qvel[self.dof_adr] = qd
            return
        self.coupling.fill_qpos(data.qpos, q)
        self.coupling.velocity(data.qpos, qd, data.qvel)

    def point_world(self, data: mujoco.MjData, body: int, local: FloatArray) -> FloatArray:
        """(3,) world position of a point fixed in ``body`` at ``local`` [m]."""
        return data.xpos[body] + data.xmat[body].reshape(3, 3) @ local


def site_name(muscle: str, k: int) -> str:
    """Name of via-point ``k`` of ``muscle`` in the MuJoCo model built from a URDF."""
    return f"{muscle}/{k}"


def point_on_body(model: mujoco.MjModel, name: str,
                  offset_m: npt.ArrayLike = (0.0, 0.0, 0.0)) -> tuple[int, FloatArray] | None:
    """(body id, point in the body frame [m]) of a body, site or joint called ``name`` plus
    ``offset_m`` in that element's axes; None when no element has the name. The controller's
    rule (:func:`~musculo_control.model.mujoco_body.element_frame`), so a name means the same
    point to both."""
    found = element_frame(model, name, offset_m)
    return None if found is None else (found[0], found[1])


def _urdf_without_geometry(path: str) -> str:
    """The URDF text with visual and collision elements removed.

    The mock has no contacts (the force gauge is computed, not collided), and dropping meshes
    keeps a lab's ``package://`` mesh paths from breaking the build.
    """
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError) as exc:
        raise ConfigError(path, "<file>", "a readable URDF", str(exc)) from exc
    root = tree.getroot()
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for child in link.findall(tag):
                link.remove(child)
    return ET.tostring(root, encoding="unicode")


def _urdf_spec(robot: Robot, error: ModelError) -> mujoco.MjSpec:
    """The URDF as a spec, with a site per via-point and a spatial tendon per muscle."""
    urdf = str(robot.arm.description_path)
    try:
        sp = mujoco.MjSpec.from_string(_urdf_without_geometry(urdf))
    except ValueError as exc:
        raise ConfigError(urdf, "<file>", "a URDF MuJoCo can parse", str(exc)) from exc
    sp.compiler.fusestatic = False  # keep every link a body whose frame is the URDF link frame
    bodies = {b.name: b for b in sp.bodies}
    offsets = error.via_point_offset_m
    k_point = 0
    for i, m in enumerate(robot.muscles_config.muscles):
        tendon = sp.add_tendon(name=m.name)
        for k, vp in enumerate(m.path or ()):
            if vp.link not in bodies:
                raise ConfigError(robot.muscles_file, f"muscles[{i}].path[{k}].link",
                                  f"a body MuJoCo imports from the URDF {sorted(bodies)}", vp.link)
            pos = np.asarray(vp.point_m, dtype=float)
            if len(offsets):
                pos = pos + offsets[k_point]
            bodies[vp.link].add_site(name=site_name(m.name, k), pos=pos)
            tendon.wrap_site(site_name(m.name, k))
            k_point += 1
    return sp


def _mjcf_spec(robot: Robot, error: ModelError) -> mujoco.MjSpec:
    """The MJCF's own spec without its actuators, sensors and keyframes, with the model error on
    its muscle sites and wrap surfaces."""
    sp = mjcf_spec(robot.arm.description_path)
    for element in (*sp.actuators, *sp.sensors, *sp.keys):
        sp.delete(element)
    points, geoms = muscle_sites(robot)
    sites = {s.name: s for s in sp.sites}
    for name, offset in zip(points, error.via_point_offset_m):
        sites[name].pos = np.asarray(sites[name].pos) + offset
    wraps = {g.name: g for g in sp.geoms}
    for name, change in zip(geoms, error.wrap_radius_change_m):
        size = np.array(wraps[name].size)
        size[0] = max(size[0] + change, 1e-4)
        wraps[name].size = size
    return sp


def build_mujoco_arm(robot: Robot, physics: PhysicsConfig | None = None,
                     error: ModelError | None = None, file: str = "<physics>") -> MujocoArm:
    """Build and compile the MuJoCo model of ``robot`` (see the module docstring).

    ``physics`` defaults to :class:`PhysicsConfig` () (no damping, friction or armature);
    ``error`` to none, which makes the model the controller's own (the oracle case).
    """
    physics = physics or PhysicsConfig()
    error = error or ModelError()
    arm = robot.arm
    physics.check_robot(robot, file, "physics")
    links = arm.link_names()
    description = str(arm.description_path)
    sp = _mjcf_spec(robot, error) if arm.is_mjcf else _urdf_spec(robot, error)
    sp.option.timestep = physics.timestep_s
    sp.option.integrator = INTEGRATORS[physics.integrator]
    sp.option.gravity = arm.gravity_m_s2
    sp.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)

    joints = {j.name: j for j in sp.joints}
    for i, name in enumerate(arm.joint_names):
        if name not in joints:
            raise ConfigError(description, f"joint '{name}'",
                              f"a joint MuJoCo reads from the {arm.kind}", sorted(joints))
        j = joints[name]
        # The URDF effort limit means nothing for a tendon-driven joint; the tension envelope
        # limits the actuators instead.
        j.actfrclimited = mujoco.mjtLimited.mjLIMITED_FALSE
        j.solref_limit = np.array([physics.joint_limit_time_constant_s, 1.0])  # critical damping
        if physics.joint_damping_nm_s_rad:
            # MuJoCo 4 takes [linear, polynomial terms...]; only the linear term is used
            damping = np.zeros(len(j.damping))
            damping[0] = physics.joint_damping_nm_s_rad[i]
            j.damping = damping
        if physics.joint_frictionloss_nm:
            j.frictionloss = physics.joint_frictionloss_nm[i]
        if physics.joint_armature_kg_m2:
            j.armature = physics.joint_armature_kg_m2[i]

    tendons = {t.name: t for t in sp.tendons}
    specs = robot.muscles_config.muscles
    tendon_names = tuple(m.tendon or m.name for m in specs)
    arm_scale = physics.moment_arm_scale or (1.0,) * len(specs)
    for m, tname, scale in zip(specs, tendon_names, arm_scale):
        tendon = tendons[tname]
        tendon.frictionloss = physics.tendon_frictionloss_n
        act = sp.add_actuator(name=m.name, target=tname, trntype=mujoco.mjtTrn.mjTRN_TENDON)
        act.set_to_motor()
        # positive control pulls: torque -Jm^T f (a moment-arm factor scales it, not the path)
        act.gear[0] = -float(scale)
        if physics.tension_limit_n is not None:
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.ctrlrange = np.array([0.0, physics.tension_limit_n])
        else:
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
    model = compile_spec(sp, arm.description_path)
    # Mass error on the compiled bodies: the same for a URDF's explicit inertials and an MJCF's
    # inertia from geoms. Mass and rotational inertia scale together (same shape, density off).
    for link, scale in error.mass_scale.items():
        bid = _body_id(model, link)
        if bid > 0 and model.body_mass[bid] > 0.0:
            model.body_mass[bid] *= scale
            model.body_inertia[bid] *= scale
    # the configured factors (physics.link_mass_scale) on top of the drawn error
    for link, scale in zip(links, physics.link_mass_scale):
        bid = _body_id(model, link)
        if bid > 0 and model.body_mass[bid] > 0.0:
            model.body_mass[bid] *= scale
            model.body_inertia[bid] *= scale
    if error.mass_scale or physics.link_mass_scale:
        # the compiler's derived constants, for the new masses: mj_setConst recomputes the
        # inverse weights and subtree masses; the mean inertia (the constraint solver's scale)
        # is the mean diagonal of M at qpos0, as the compiler computes it
        data = mujoco.MjData(model)
        mujoco.mj_setConst(model, data)
        mujoco.mj_forward(model, data)
        full = np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, data, full)
        model.stat.meaninertia = float(np.trace(full)) / max(model.nv, 1)

    def ids(kind: mujoco.mjtObj, names: tuple[str, ...]) -> dict[str, int]:
        return {n: int(mujoco.mj_name2id(model, kind, n)) for n in names}

    joint_id = ids(mujoco.mjtObj.mjOBJ_JOINT, arm.joint_names)
    tendon_by_muscle = {m: int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_TENDON, t))
                        for m, t in zip(robot.muscle_names, tendon_names)}
    actuator_id = ids(mujoco.mjtObj.mjOBJ_ACTUATOR, robot.muscle_names)
    site_id = ids(mujoco.mjtObj.mjOBJ_SITE, tuple(muscle_sites(robot)[0]))
    body_id = {model.body(b).name: b for b in range(model.nbody) if model.body(b).name}
    for name, jid in joint_id.items():
        if int(model.jnt_type[jid]) not in (int(mujoco.mjtJoint.mjJNT_HINGE),
                                            int(mujoco.mjtJoint.mjJNT_SLIDE)):
            raise ConfigError(description, f"joint '{name}'", "a revolute or prismatic joint",
                              str(model.jnt_type[jid]))
    task = arm.config.task_frame
    found = point_on_body(model, task, arm.config.task_offset_m)
    if found is None:
        what = "an MJCF body, site or joint" if arm.is_mjcf else "a URDF link MuJoCo keeps"
        raise ConfigError(robot.robot_file, "arm.task_frame", f"{what} {sorted(body_id)}", task)
    return MujocoArm(
        model=model,
        xml=sp.to_xml(),
        qpos_adr=np.array([model.jnt_qposadr[joint_id[n]] for n in arm.joint_names], dtype=int),
        dof_adr=np.array([model.jnt_dofadr[joint_id[n]] for n in arm.joint_names], dtype=int),
        tendon_ids=np.array([tendon_by_muscle[n] for n in robot.muscle_names], dtype=int),
        actuator_ids=np.array([actuator_id[n] for n in robot.muscle_names], dtype=int),
        joint_id=joint_id,
        tendon_id=tendon_by_muscle,
        actuator_id=actuator_id,
        site_id=site_id,
        body_id=body_id,
        task_body_id=found[0],
        task_point_local=found[1],
        error=error,
        coupling=JointCoupling(model, description) if arm.coupling is not None else None,
    )


def warning_counts(data: mujoco.MjData) -> dict[str, int]:
    """Non-zero MuJoCo warning counters by name (empty when the simulation is clean)."""
    out = {}
    for w in mujoco.mjtWarning.__members__.values():
        if w.name == "mjNWARNING":
            continue
        count = int(data.warning[int(w)].number)
        if count:
            out[w.name] = count
    return out


class PathBends:
    """Each tendon's total bend along its MuJoCo path [rad], from the current ``mjData``.

    The sum, over the path's interior points (sites, wrap tangent points), of the angle between
    the incoming and the outgoing segment: the angle the wire turns through as it passes its
    guides, which sets its capstan friction. A wrap over a cylinder or sphere turns the path by
    the angle between its two tangent segments, which the bends at its two tangent points add
    up to. Pulleys (``wrap_obj`` -2) split a path into branches.

    Runs every physics step, so it is a fixed number of numpy calls on arrays sized once: the
    angle between every two consecutive segments of MuJoCo's wrap-point list is computed, and
    each is summed into its tendon's total, or into a discarded bin where the two segments do
    not meet at an interior point of one branch (across tendons, pulleys or unused points).
    Which is which (the layout) changes only when a wrap surface engages or lets go; with
    ``model`` given and no sphere or cylinder among its wraps it is built once, otherwise it is
    compared every call and rebuilt when it changed.
    """

    def __init__(self, tendon_ids: IntArray, model: mujoco.MjModel | None = None) -> None:
        self.tendon_ids = np.asarray(tendon_ids, dtype=int)
        geom_wraps = (int(mujoco.mjtWrap.mjWRAP_SPHERE), int(mujoco.mjtWrap.mjWRAP_CYLINDER))
        #: the layout cannot change (no wrap surface in the model): never compared
        self.fixed = model is not None and not np.isin(model.wrap_type, geom_wraps).any()
        self._data: mujoco.MjData | None = None
        self._layout: tuple[bytes, bytes, bytes] | None = None

    def _views(self, data: mujoco.MjData) -> None:
        """Views into ``data``'s fixed buffers (each attribute access builds a new view)."""
        self._data = data
        self._layout = None
        self._adr, self._num = data.ten_wrapadr, data.ten_wrapnum
        self._obj = data.wrap_obj.reshape(-1)
        self._points = data.wrap_xpos.reshape(-1, 3)

    def _build(self) -> None:
        adr, num, objects = self._adr, self._num, self._obj
        m = len(self.tendon_ids)
        end = max((int(adr[t]) + int(num[t]) for t in self.tendon_ids), default=0)
        # pair k: the segments k (points k -> k+1) and k+1 (points k+1 -> k+2), meeting at
        # point k+1; its bin is the tendon whose interior point that is, or m (discarded)
        owner = np.full(max(end - 2, 0), m, dtype=np.intp)
        for i, t in enumerate(self.tendon_ids):
            start, n = int(adr[t]), int(num[t])
            branch: list[int] = []
            for k in range(start, start + n + 1):
                if k == start + n or objects[k] == -2:  # end of a branch
                    for j in range(1, len(branch) - 1):
                        owner[branch[j] - 1] = i
                    branch = []
                else:
                    branch.append(k)
        self._owner = owner
        self._m = m
        pairs = len(owner)
        segments = max(end - 1, 0)
        pts = self._points
        self._seg = np.zeros((segments, 3))
        self._head, self._tail = pts[1:segments + 1], pts[:segments]
        self._sq = np.zeros(segments)
        self._dot = np.zeros(pairs)
        self._norm = np.zeros(pairs)
        self._seg_in, self._seg_out = self._seg[:-1], self._seg[1:]
        self._sq_in, self._sq_out = self._sq[:-1], self._sq[1:]
        # products of the coordinates, summed as columns (x + z) + y: einsum's order, in
        # ufunc calls on views made once (einsum's own call costs several of them)
        self._prod = np.zeros((segments, 3))
        self._pair_prod = self._prod[:-1]
        self._prod_cols = (self._prod[:, 0], self._prod[:, 2], self._prod[:, 1])
        self._pair_cols = (self._pair_prod[:, 0], self._pair_prod[:, 2], self._pair_prod[:, 1])

    def _layout_now(self) -> tuple[bytes, bytes, bytes]:
        ids = self.tendon_ids
        return (self._adr[ids].tobytes(), self._num[ids].tobytes(), self._obj.tobytes())

    def __call__(self, data: mujoco.MjData) -> FloatArray:
        """(m,) total bend of each tendon's path [rad]."""
        if data is not self._data:
            self._views(data)
        if self._layout is None:
            self._build()
            self._layout = self._layout_now()
        elif not self.fixed:
            layout = self._layout_now()
            if layout != self._layout:
                self._build()
                self._layout = layout
        seg, sq, dot, norm = self._seg, self._sq, self._dot, self._norm
        np.subtract(self._head, self._tail, out=seg)
        x, z, y = self._prod_cols
        np.multiply(seg, seg, out=self._prod)
        np.add(x, z, out=sq)
        sq += y  # |segment|^2
        x, z, y = self._pair_cols
        np.multiply(self._seg_in, self._seg_out, out=self._pair_prod)
        np.add(x, z, out=dot)
        dot += y  # segment_in . segment_out
        np.multiply(self._sq_in, self._sq_out, out=norm)
        np.sqrt(norm, out=norm)
        np.maximum(norm, 1e-18, out=norm)
        np.divide(dot, norm, out=dot)
        np.minimum(dot, 1.0, out=dot)
        np.maximum(dot, -1.0, out=dot)
        np.arccos(dot, out=dot)
        return cast(FloatArray, np.bincount(self._owner, dot, minlength=self._m + 1)[:self._m])
