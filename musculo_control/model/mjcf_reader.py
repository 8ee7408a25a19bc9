"""Pinocchio's reading of an MJCF, checked against MuJoCo's reading of the same file at load.

MuJoCo is the authority on what an MJCF means; Pinocchio's MJCF reader (which gives the
controller its rigid-body dynamics) does not follow every file. Two cases met on public models:
it finds no body behind ``<include>`` files, and it drops the placement (position and
orientation) of a joint-less body directly under ``<worldbody>`` (Pinocchio 4.1), so an arm
mounted on a placed torso ends up somewhere else. So every reading is checked, not trusted:

1. Pinocchio reads the file itself; its bodies, sites, mass matrix and gravity torque are
   compared with MuJoCo's at seeded poses (:func:`disagreement`).
2. If it cannot read the file or disagrees, it reads MuJoCo's single-file export of the compiled
   model instead: includes resolved, every inertial explicit (MuJoCo's ``saveinertial``), the
   world's contents moved into one root body at the origin (so no placed body sits directly
   under the world). The export writes 6 significant digits, so this reading agrees with MuJoCo
   to about 1e-6 relative. It is checked again.
3. If it still disagrees, loading stops with the largest difference.
"""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NamedTuple

import mujoco
import numpy as np
import pinocchio as pin

from musculo_control.errors import ConfigError
from musculo_control.model.mujoco_tendons import compile_spec, mjcf_spec

#: Seeded poses the readings are compared at (beside the middle of the joint range).
_POSES = 4
#: Agreement required: positions [m], rotations [-], M and g relative to their largest entry.
_POSITION_TOL_M = 1e-5
_ROTATION_TOL = 1e-5
_DYNAMICS_RTOL = 1e-4
#: Name of the root body the export wraps the world's contents in.
_ROOT = "musculo_root"


class MjcfReading(NamedTuple):
    """Pinocchio's model of an MJCF, its gravity, and how it was read."""

    model: pin.Model
    gravity_m_s2: tuple[float, ...]
    note: str  # empty when Pinocchio read the file itself


def unsupported(spec: mujoco.MjSpec) -> list[str]:
    """What the controller cannot represent in this MJCF (empty: nothing)."""
    problems = []
    for j in spec.joints:
        if j.type not in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            problems.append(f"joint '{j.name}' of type {mujoco.mjtJoint(j.type).name}")
    for e in spec.equalities:
        problems.append(f"equality constraint '{e.name}' ({mujoco.mjtEq(e.type).name})")
    return problems


def _export(path: Path) -> str:
    """MuJoCo's single-file export of the compiled model, the world's contents in one root."""
    spec = mjcf_spec(path)
    spec.compiler.saveinertial = True  # explicit inertials, whatever MuJoCo derived them from
    compile_spec(spec, path)
    root = ET.fromstring(spec.to_xml())
    world = root.find("worldbody")
    if world is not None:
        wrapper = ET.Element("body", {"name": _ROOT})
        # a fixed body Pinocchio accepts: it wants an inertia on every body
        ET.SubElement(wrapper, "inertial", {"pos": "0 0 0", "mass": "1e-9",
                                            "diaginertia": "1e-12 1e-12 1e-12"})
        for child in list(world):
            world.remove(child)
            wrapper.append(child)
        world.append(wrapper)
    return ET.tostring(root, encoding="unicode")


def _pinocchio_from_text(text: str, name: str) -> pin.Model:
    with tempfile.TemporaryDirectory() as folder:
        flat = Path(folder) / name
        flat.write_text(text)
        return pin.buildModelFromMJCF(str(flat))


def disagreement(model: pin.Model, reference: mujoco.MjModel) -> str | None:
    """Where Pinocchio's model differs from MuJoCo's beyond the tolerances, or None.

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
        if kind is not None and frame.name != _ROOT:
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


def read_mjcf(path: Path) -> MjcfReading:
    """Pinocchio's model of the MJCF at ``path``, checked against MuJoCo (module docstring)."""
    spec = mjcf_spec(path)
    problems = unsupported(spec)
    if problems:
        raise ConfigError(str(path), "<model>",
                          "a fixed-base arm of hinge and slide joints without equality "
                          "constraints (coupled or welded joints are not modelled)", problems)
    reference = compile_spec(spec, path)
    gravity = tuple(float(v) for v in reference.opt.gravity)
    try:
        direct: pin.Model | None = pin.buildModelFromMJCF(str(path))
        why = disagreement(direct, reference)  # type: ignore[arg-type]
    except (RuntimeError, ValueError) as exc:
        direct, why = None, str(exc).strip().splitlines()[-1]
    if why is None and direct is not None:
        return MjcfReading(direct, gravity, "")
    try:
        exported = _pinocchio_from_text(_export(path), path.name)
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(str(path), "<file>", "an MJCF Pinocchio can read, directly or as "
                          "MuJoCo's export", f"{why}; export: {exc}") from exc
    still = disagreement(exported, reference)
    if still is not None:
        raise ConfigError(str(path), "<model>", "Pinocchio's reading to agree with MuJoCo's",
                          f"directly: {why}; as MuJoCo's export: {still}")
    reason = (f"it could not read the file itself ({why})" if direct is None
              else f"its own reading of the file put {why}")
    return MjcfReading(exported, gravity,
                       f"Pinocchio read MuJoCo's single-file export of {path.name}: {reason}")
