"""A URDF of an MJCF robot, for robot_state_publisher and RViz, from MuJoCo's compiled model.

robot_state_publisher reads URDF only, so an MJCF robot gets one generated from what MuJoCo
made of the file (includes, defaults and frames resolved): one link per body (named as the
body; the world body is the link ``world``), one URDF joint per MuJoCo joint (same name, axis
and range), the body's inertia, and a visual per geom that MuJoCo's viewer shows by default
(groups 0-2, not fully transparent):

- sphere, cylinder and box as themselves; a capsule as a cylinder with a sphere at each end;
- an ellipsoid, mesh or height field as the box of its bounding box (MuJoCo's ``geom_aabb``);
- planes are left out (a floor is not part of the arm).

A MuJoCo joint turns about an axis through its own position in the body frame, and a body may
carry several joints; a URDF joint turns its child link about the child's origin. So a joint
placed off the body origin, and every joint but the last of a body, gets a massless link of its
own (``<body>__<joint>``) and the body link follows through a fixed joint: the link frames are
MuJoCo's body frames at every configuration (test/test_robot_description.py checks it).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import numpy.typing as npt
import pinocchio as pin

from musculo_control.errors import ConfigError
from musculo_control.model.mujoco_tendons import compile_spec, mjcf_spec

FloatArray = npt.NDArray[np.float64]
#: One URDF shape: position and rotation in the body frame, its tag and attributes.
Shape = tuple[FloatArray, FloatArray, str, dict[str, str]]

#: Geom groups MuJoCo's viewer shows by default (mjvOption.geomgroup).
_SHOWN_GROUPS = (0, 1, 2)
#: MuJoCo's default geom colour: a geom with this rgba and a material takes the material's.
_DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)
#: A joint position closer to the body origin than this needs no link of its own [m].
_AT_ORIGIN_M = 1e-12
#: URDF requires effort and velocity limits, which an MJCF joint does not have; nothing that
#: reads this description (robot_state_publisher, RViz) uses them.
_NO_LIMIT = "0"
#: Range written for an unlimited slide joint (URDF has no unlimited prismatic joint) [m].
_SLIDE_RANGE_M = 1e3


def urdf_from_mjcf(path: Path) -> str:
    """The URDF text of the MJCF at ``path`` (module docstring)."""
    spec = mjcf_spec(path)
    model = compile_spec(spec, path)
    return urdf_from_model(model, spec.modelname or Path(path).stem, str(path))


def _num(v: float) -> str:
    """15 significant digits: the model's float64 values to 1e-15 relative, without the
    last digit's noise (0.15, not 0.15000000000000002)."""
    v = float(v)
    return "0" if abs(v) < 1e-15 else f"{v:.15g}"


def _vec(values: npt.ArrayLike) -> str:
    return " ".join(_num(v) for v in np.asarray(values, dtype=float).reshape(-1))


def _rotation(quat_wxyz: npt.ArrayLike) -> FloatArray:
    w, x, y, z = (float(v) for v in np.asarray(quat_wxyz, dtype=float))
    return np.asarray(pin.Quaternion(w, x, y, z).normalized().toRotationMatrix())


def _origin(parent: ET.Element, pos: npt.ArrayLike, rot: FloatArray | None = None) -> None:
    attrs = {"xyz": _vec(pos)}
    if rot is not None:
        attrs["rpy"] = _vec(pin.rpy.matrixToRpy(rot))
    ET.SubElement(parent, "origin", attrs)


def _body_name(model: mujoco.MjModel, b: int) -> str:
    return model.body(b).name or ("world" if b == 0 else f"body{b}")


def _joint_name(model: mujoco.MjModel, j: int) -> str:
    return model.joint(j).name or f"joint{j}"


def _rgba(model: mujoco.MjModel, g: int) -> FloatArray:
    rgba = np.asarray(model.geom_rgba[g], dtype=float)
    mat = int(model.geom_matid[g])
    if mat >= 0 and np.allclose(rgba, _DEFAULT_RGBA):
        return np.asarray(model.mat_rgba[mat], dtype=float)
    return rgba


def _shapes(model: mujoco.MjModel, g: int) -> list[Shape]:
    """The URDF shapes that draw geom ``g``."""
    kind = int(model.geom_type[g])
    size = np.asarray(model.geom_size[g], dtype=float)
    pos = np.asarray(model.geom_pos[g], dtype=float)
    rot = _rotation(model.geom_quat[g])
    types = mujoco.mjtGeom
    if kind == types.mjGEOM_PLANE:
        return []
    if kind == types.mjGEOM_SPHERE:
        return [(pos, rot, "sphere", {"radius": _num(size[0])})]
    if kind == types.mjGEOM_BOX:
        return [(pos, rot, "box", {"size": _vec(2.0 * size)})]
    if kind in (types.mjGEOM_CYLINDER, types.mjGEOM_CAPSULE):
        out = [(pos, rot, "cylinder", {"radius": _num(size[0]), "length": _num(2.0 * size[1])})]
        if kind == types.mjGEOM_CAPSULE:
            for end in (-1.0, 1.0):
                out.append((pos + rot @ np.array([0.0, 0.0, end * size[1]]), rot, "sphere",
                            {"radius": _num(size[0])}))
        return out
    # ellipsoid, mesh, height field, SDF: the geom-frame bounding box
    aabb = np.asarray(model.geom_aabb[g], dtype=float)
    return [(pos + rot @ aabb[:3], rot, "box", {"size": _vec(2.0 * aabb[3:])})]


def _link(robot: ET.Element, model: mujoco.MjModel, name: str, b: int | None) -> None:
    """A link; with ``b``, body ``b``'s inertia and visuals."""
    link = ET.SubElement(robot, "link", {"name": name})
    if b is None:
        return
    if b > 0 and float(model.body_mass[b]) > 0.0:
        inertial = ET.SubElement(link, "inertial")
        _origin(inertial, model.body_ipos[b], _rotation(model.body_iquat[b]))
        ET.SubElement(inertial, "mass", {"value": _num(model.body_mass[b])})
        ixx, iyy, izz = (float(v) for v in model.body_inertia[b])
        ET.SubElement(inertial, "inertia", {"ixx": _num(ixx), "iyy": _num(iyy),
                                            "izz": _num(izz), "ixy": "0", "ixz": "0",
                                            "iyz": "0"})
    count = 0
    for g in range(int(model.body_geomadr[b]), int(model.body_geomadr[b] + model.body_geomnum[b])):
        rgba = _rgba(model, g)
        if int(model.geom_group[g]) not in _SHOWN_GROUPS or rgba[3] <= 0.0:
            continue
        geom = model.geom(g).name or f"geom{g}"
        for part, (pos, rot, shape, attrs) in enumerate(_shapes(model, g)):
            visual = ET.SubElement(link, "visual", {"name": f"{geom}_{part}" if part else geom})
            _origin(visual, pos, rot)
            ET.SubElement(ET.SubElement(visual, "geometry"), shape, attrs)
            material = ET.SubElement(visual, "material", {"name": f"{name}_{count}"})
            # MuJoCo keeps colours in float32: 4 digits say all of it
            ET.SubElement(material, "color", {"rgba": " ".join(f"{c:.4g}" for c in rgba)})
            count += 1


def _joint(robot: ET.Element, name: str, kind: str, parent: str, child: str,
           pos: npt.ArrayLike, rot: FloatArray | None = None) -> ET.Element:
    joint = ET.SubElement(robot, "joint", {"name": name, "type": kind})
    ET.SubElement(joint, "parent", {"link": parent})
    ET.SubElement(joint, "child", {"link": child})
    _origin(joint, pos, rot)
    return joint


def urdf_from_model(model: mujoco.MjModel, name: str, file: str = "<model>") -> str:
    """The URDF text of a compiled MuJoCo model (module docstring); ``file`` names it in
    errors."""
    robot = ET.Element("robot", {"name": name})
    robot.append(ET.Comment(f" generated by musculo_control from {Path(file).name}: MuJoCo's "
                            f"bodies, joints and visible geoms "))
    links: set[str] = set()

    def new_link(link: str, b: int | None) -> str:
        if link in links:
            raise ConfigError(file, "<model>", "body names that stay unique as URDF links "
                              "(a body and a joint named '<body>__<joint>' collide)", link)
        links.add(link)
        _link(robot, model, link, b)
        return link

    new_link(_body_name(model, 0), 0)
    hinge, slide = mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE
    for b in range(1, model.nbody):
        body = _body_name(model, b)
        parent = _body_name(model, int(model.body_parentid[b]))
        pos = np.asarray(model.body_pos[b], dtype=float)
        rot = _rotation(model.body_quat[b])
        first = int(model.body_jntadr[b])
        joints = range(first, first + int(model.body_jntnum[b])) if first >= 0 else range(0)
        if not joints:
            _joint(robot, f"{body}__fixed", "fixed", parent, new_link(body, b), pos, rot)
            continue
        previous = np.zeros(3)  # the last joint's position: the chain's frame sits there
        for k, j in enumerate(joints):
            kind = int(model.jnt_type[j])
            if kind not in (hinge, slide):
                raise ConfigError(file, f"joint '{_joint_name(model, j)}'",
                                  "hinge or slide joints (a URDF has no ball or free joint)",
                                  mujoco.mjtJoint(kind).name)
            jpos = np.asarray(model.jnt_pos[j], dtype=float)
            last = k == len(joints) - 1
            own = not last or float(np.abs(jpos).max()) > _AT_ORIGIN_M
            child = new_link(f"{body}__{_joint_name(model, j)}" if own else body,
                             None if own else b)
            limited = bool(model.jnt_limited[j])
            lo, hi = (float(v) for v in model.jnt_range[j])
            if kind == hinge:
                urdf_kind = "revolute" if limited else "continuous"
            else:
                urdf_kind = "prismatic"
                if not limited:
                    lo, hi = -_SLIDE_RANGE_M, _SLIDE_RANGE_M
            origin = (pos + rot @ jpos, rot) if k == 0 else (jpos - previous, None)
            joint = _joint(robot, _joint_name(model, j), urdf_kind, parent, child, *origin)
            ET.SubElement(joint, "axis", {"xyz": _vec(model.jnt_axis[j])})
            if urdf_kind != "continuous":
                ET.SubElement(joint, "limit", {"lower": _num(lo), "upper": _num(hi),
                                               "effort": _NO_LIMIT, "velocity": _NO_LIMIT})
            parent, previous = child, jpos
        if parent != body:  # the body sits back at its origin, -previous from the last joint
            _joint(robot, f"{body}__fixed", "fixed", parent, new_link(body, b), -previous)
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"
