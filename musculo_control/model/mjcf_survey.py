"""What an MJCF says about the arm it describes, read for ``musculo init``.

:func:`survey` compiles the file as the controller does and proposes, each with the reason
printed by ``musculo init``:

- the joints: the independent hinge and slide joints (the controller's coordinates), and the
  coupled ones with the equality constraint they follow;
- the muscles: every tendon a muscle actuator (``<muscle>``, or a general actuator with muscle
  gain) pulls, named as the actuator; without such actuators, every spatial tendon;
- the hand: the body where the arm's chain ends, i.e. the last body of the chain of moving
  bodies from the base before it branches into several jointed subtrees (fingers), or its last
  body when it does not branch; the task frame is that body's origin when it branches (the
  wrist or palm centre of a hand with fingers), else the point of it (or of a joint-less body
  below it) farthest from its joint among named sites and geom ends, given as a named site or
  as a named body or joint plus ``task_offset_m`` (an unnamed body has no name of its own);
- the home pose: a keyframe (the named one, else the first), else ``qpos0``; moved inside the
  joint limits by a margin (a human model's ``qpos0`` often sits on its limits); or, on
  request, the middle of every joint's range.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import numpy.typing as npt

from musculo_control.errors import ConfigError
from musculo_control.model.joint_coupling import JointCoupling
from musculo_control.model.mujoco_body import MujocoBody, element_names
from musculo_control.model.mujoco_tendons import (
    MujocoTendonGeometry,
    compile_spec,
    mjcf_spec,
)

FloatArray = npt.NDArray[np.float64]

#: The home pose keeps this fraction of each joint's range from its limits [-].
HOME_MARGIN = 0.1
#: Poses (beside the middle of the ranges) where the muscles' reach is sampled.
_REACH_POSES = 64
#: A moment arm below this does not pull a joint [m].
_REACH_M = 1e-6


@dataclass(frozen=True)
class Muscle:
    """One muscle of the MJCF: its name, its tendon and the actuator that pulls it."""

    name: str
    tendon: str
    actuator: str | None


@dataclass(frozen=True)
class Survey:
    """The proposals of :func:`survey` (module docstring), with their reasons."""

    path: Path
    model: mujoco.MjModel
    body: MujocoBody
    joints: tuple[str, ...]
    coupled: tuple[str, ...]  # one line per coupled joint
    muscles: tuple[Muscle, ...]
    muscles_reason: str
    hand_body: str
    task_frame: str
    task_offset_m: tuple[float, ...]
    task_reason: str
    home_pose_rad: FloatArray
    home_reason: str


def _children(model: mujoco.MjModel) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {b: [] for b in range(model.nbody)}
    for b in range(1, model.nbody):
        out[int(model.body_parentid[b])].append(b)
    return out


def _has_joint_below(model: mujoco.MjModel, children: dict[int, list[int]], b: int) -> bool:
    return bool(model.body_jntnum[b]) or any(_has_joint_below(model, children, c)
                                             for c in children[b])


def _hand_body(model: mujoco.MjModel) -> tuple[int, bool]:
    """(body id of the hand, True when the chain branches there into jointed subtrees)."""
    children = _children(model)
    b, seen_joint = 0, False
    while True:
        jointed = [c for c in children[b] if _has_joint_below(model, children, c)]
        seen_joint = seen_joint or bool(model.body_jntnum[b])
        if len(jointed) == 1:
            b = jointed[0]
            continue
        return b, len(jointed) > 1 and seen_joint


def _muscles(model: mujoco.MjModel) -> tuple[tuple[Muscle, ...], str]:
    out, seen = [], set()
    for a in range(model.nu):
        muscle = int(model.actuator_gaintype[a]) == int(mujoco.mjtGain.mjGAIN_MUSCLE)
        on_tendon = int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_TENDON)
        if muscle and on_tendon:
            t = int(model.actuator_trnid[a, 0])
            if t in seen:
                continue
            seen.add(t)
            name = model.actuator(a).name or model.tendon(t).name
            out.append(Muscle(name, model.tendon(t).name, model.actuator(a).name or None))
    if out:
        return tuple(out), (f"the {len(out)} tendons that muscle actuators pull, named as their "
                            f"actuators")
    spatial = [t for t in range(model.ntendon)
               if int(model.tendon_num[t]) > 0
               and int(model.wrap_type[model.tendon_adr[t]]) != int(mujoco.mjtWrap.mjWRAP_JOINT)]
    named = [t for t in spatial if model.tendon(t).name]
    unnamed = len(spatial) - len(named)
    return (tuple(Muscle(model.tendon(t).name, model.tendon(t).name, None) for t in named),
            f"no muscle actuators: the {len(named)} spatial tendons"
            + (f" ({unnamed} unnamed ones left out: muscles.yaml names each muscle's tendon)"
               if unnamed else ""))


def _no_muscles(model: mujoco.MjModel) -> str:
    """What the MJCF has instead of muscles on tendons (for the message)."""
    on_joints = sum(int(model.actuator_trntype[a]) in (int(mujoco.mjtTrn.mjTRN_JOINT),
                                                       int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
                    for a in range(model.nu))
    if on_joints:
        return (f"none: its {on_joints} of {model.nu} actuators act on joints directly (a "
                f"joint-torque model); the controller needs each muscle's path, a tendon")
    return f"none ({model.ntendon} tendons, none spatial; {model.nu} actuators)"


def _check_joint_names(model: mujoco.MjModel, coupling: JointCoupling, path: Path) -> None:
    for j in coupling.independent:
        if not model.joint(j).name:
            b = int(model.jnt_bodyid[j])
            raise ConfigError(str(path), f"joint #{j} (on body '{model.body(b).name or f'#{b}'}')",
                              "a name on every joint that is a coordinate of the arm (robot.yaml "
                              "lists the joints by name): name it in the MJCF", "an unnamed joint")


def _check_muscles_reach(body: MujocoBody, muscles: tuple[Muscle, ...], path: Path) -> None:
    """Every independent joint is pulled both ways by some muscle somewhere in its range: a
    muscle only pulls, and the controller moves a joint only through its muscles' tensions."""
    geometry = MujocoTendonGeometry(body, path, tuple(m.name for m in muscles),
                                    tuple(m.tendon for m in muscles), str(path))
    lo, hi = body.lower_rad, body.upper_rad
    rand = np.random.default_rng(0).random((_REACH_POSES, len(lo)))
    positive = np.zeros(len(lo))  # the largest moment arm pulling each joint positive [m]
    negative = np.zeros(len(lo))
    for q in np.vstack([0.5 * (lo + hi), lo + (hi - lo) * rand]):
        jm = geometry.kinematics_at(q).jacobian  # torque -Jm^T f: Jm < 0 pulls positive
        positive = np.maximum(positive, (-jm).max(axis=0))
        negative = np.maximum(negative, jm.max(axis=0))
    names = body.joint_names
    none = [n for n, p, m in zip(names, positive, negative) if max(p, m) < _REACH_M]
    if none:
        raise ConfigError(str(path), "<tendon>", f"muscles that reach every joint of the arm "
                          f"(the controller moves a joint only through its muscles): no "
                          f"muscle's tendon changes length with joint(s) {none} anywhere in "
                          f"their range, so nothing can hold them against gravity or move them",
                          f"{len(muscles)} muscles, none over {none}")
    one_way = [f"'{n}' only {'positive' if p >= _REACH_M else 'negative'}"
               for n, p, m in zip(names, positive, negative) if min(p, m) < _REACH_M]
    if one_way:
        raise ConfigError(str(path), "<tendon>", "muscles that pull every joint of the arm both "
                          "ways (a muscle only pulls; the controller moves a joint only through "
                          "its muscles)", f"the muscles pull {'; '.join(one_way)}, anywhere in "
                          f"the range")


def _far_points(model: mujoco.MjModel, bodies: list[int]) -> list[tuple[int, FloatArray, str]]:
    """(body, point in that body's frame, what it is) of the named sites on ``bodies`` and the
    ends of their geoms (a capsule's or cylinder's two ends, another geom's centre)."""
    out = []
    for sid in range(model.nsite):
        if model.site_bodyid[sid] in bodies and model.site(sid).name:
            out.append((int(model.site_bodyid[sid]), np.array(model.site_pos[sid]),
                        f"site '{model.site(sid).name}'"))
    for g in range(model.ngeom):
        b = int(model.geom_bodyid[g])
        if b not in bodies:
            continue
        centre = np.array(model.geom_pos[g])
        kind = int(model.geom_type[g])
        if kind in (int(mujoco.mjtGeom.mjGEOM_CAPSULE), int(mujoco.mjtGeom.mjGEOM_CYLINDER)):
            rot = np.zeros(9)
            mujoco.mju_quat2Mat(rot, model.geom_quat[g])
            half = float(model.geom_size[g, 1]) * rot.reshape(3, 3)[:, 2]
            label = f"an end of geom '{model.geom(g).name or g}'"
            out += [(b, centre + half, label), (b, centre - half, label)]
        else:
            out.append((b, centre, f"the centre of geom '{model.geom(g).name or g}'"))
    return out


def _named_frame(model: mujoco.MjModel, body: int) -> tuple[str, FloatArray, FloatArray] | None:
    """(name, origin, rotation) in the body's frame of a named element to hang a point on: the
    body itself, else one of its joints (its anchor, the body's axes)."""
    if model.body(body).name:
        return model.body(body).name, np.zeros(3), np.eye(3)
    for j in range(model.njnt):
        if model.jnt_bodyid[j] == body and model.joint(j).name:
            return model.joint(j).name, np.array(model.jnt_pos[j]), np.eye(3)
    return None


def _task_frame(model: mujoco.MjModel, hand: int, branches: bool, path: Path
                ) -> tuple[str, tuple[float, ...], str]:
    name = model.body(hand).name
    if branches and name:
        return name, (0.0, 0.0, 0.0), (f"the origin of body '{name}', where the arm's chain "
                                       f"branches into its fingers")
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    children = _children(model)
    bodies, stack = [], [hand]
    while stack:  # the hand body and the joint-less bodies fixed to it
        b = stack.pop()
        bodies.append(b)
        stack += [c for c in children[b] if not model.body_jntnum[c]]
    joints = [j for j in range(model.njnt) if model.jnt_bodyid[j] == hand]
    pivot = data.xanchor[joints[0]] if joints else data.xpos[hand]

    def world(b: int, p: FloatArray) -> FloatArray:
        return np.asarray(data.xpos[b] + data.xmat[b].reshape(3, 3) @ p)

    points = _far_points(model, bodies)
    if not points:
        points = [(hand, np.array(model.body_ipos[hand]), "its centre of mass")]
    body, point, what = max(points, key=lambda c: float(np.linalg.norm(world(c[0], c[1])
                                                                        - pivot)))
    last = f"the arm's last body '{name or f'#{hand}'}'"
    if what.startswith("site"):
        site = what.split("'")[1]
        return site, (0.0, 0.0, 0.0), f"{what}, the farthest point from the joint of {last}"
    frame = _named_frame(model, body)
    carrier = body
    while frame is None and carrier != hand:  # a joint-less body: its point in its parent's
        rot = np.zeros(9)                     # frame, up to the hand body
        mujoco.mju_quat2Mat(rot, model.body_quat[carrier])
        point = model.body_pos[carrier] + rot.reshape(3, 3) @ point
        carrier = int(model.body_parentid[carrier])
        frame = _named_frame(model, carrier)
    if frame is None:
        raise ConfigError(str(path), "task frame", f"a name on the arm's last body (#{hand}), "
                          f"a named site on it or a named joint in it, to hang the task frame on "
                          f"(name one in the MJCF, or pass --task-frame NAME: "
                          f"{element_names(model)})", f"body #{hand}: none of them is named")
    label, origin, rot = frame
    offset = tuple(float(round(v, 6)) + 0.0 for v in rot.T @ (point - origin))
    return label, offset, (f"{what} (the farthest point from the joint of {last}), as "
                           f"'{label}' + task_offset_m")


def _home(model: mujoco.MjModel, coupling: JointCoupling, body: MujocoBody,
          home: str | None) -> tuple[FloatArray, str]:
    lo, hi = body.lower_rad, body.upper_rad
    if home == "middle":
        return np.round(0.5 * (lo + hi), 4), "the middle of every joint's range (--home middle)"
    if home == "qpos0":
        qpos, why = model.qpos0, "qpos0 (--home qpos0)"
    elif home is not None:
        k = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, home)
        if k < 0:
            names = [model.key(i).name for i in range(model.nkey)]
            raise ConfigError("--home", home, f"middle, qpos0 or a keyframe of the MJCF {names}")
        qpos, why = model.key_qpos[k], f"keyframe '{home}'"
    elif model.nkey:
        qpos, why = model.key_qpos[0], f"the first keyframe '{model.key(0).name or 0}'"
    else:
        qpos, why = model.qpos0, "qpos0 (the MJCF has no keyframe)"
    q = np.array(qpos[coupling.qpos_adr], dtype=float)
    margin = HOME_MARGIN * (hi - lo)
    inside = np.clip(q, lo + margin, hi - margin)
    moved = [model.joint(j).name for j, a, b in zip(coupling.independent, q, inside) if a != b]
    if moved:
        why += (f", moved {100 * HOME_MARGIN:.0f} % of the range inside the limits for "
                f"{', '.join(moved)}")
    return np.round(inside, 4), why


def survey(path: Path, home: str | None = None, task_frame: str | None = None) -> Survey:
    """Read the MJCF at ``path`` and make the proposals of the module docstring.

    ``home``: a keyframe name, ``qpos0`` or ``middle`` (of every joint's range) instead of the
    first keyframe or qpos0; ``task_frame``: the user's choice (a body, site or joint).
    """
    model = compile_spec(mjcf_spec(path), path)
    coupling = JointCoupling(model, str(path))
    _check_joint_names(model, coupling, path)
    body = MujocoBody(model, coupling)
    muscles, why_muscles = _muscles(model)
    if not muscles:
        raise ConfigError(str(path), "<tendon>", "spatial tendons or muscle actuators on "
                          "tendons: the muscles", _no_muscles(model))
    _check_muscles_reach(body, muscles, path)
    hand, branches = _hand_body(model)
    offset: tuple[float, ...]
    if task_frame is not None:
        if body.find_frame(task_frame, np.zeros(3)) is None:
            raise ConfigError("--task-frame", task_frame, body.frame_names())
        frame, offset, why_task = task_frame, (0.0, 0.0, 0.0), "given with --task-frame"
    else:
        frame, offset, why_task = _task_frame(model, hand, branches, path)
    home_q, why_home = _home(model, coupling, body, home)
    return Survey(path=Path(path), model=model, body=body, joints=body.joint_names,
                  coupled=tuple(coupling.describe()), muscles=muscles,
                  muscles_reason=why_muscles, hand_body=model.body(hand).name or str(hand),
                  task_frame=frame, task_offset_m=offset, task_reason=why_task,
                  home_pose_rad=home_q, home_reason=why_home)
