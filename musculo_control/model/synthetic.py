"""Synthetic chain arms of any size, written as ordinary config folders (benchmarks and tests).

``write_synthetic_arm(folder, n_joints, n_muscles)`` writes ``arm.urdf``, ``muscles.yaml`` and
``robot.yaml`` for a hanging chain of equal links whose revolute joints alternate between the
x and y axes. With at least 2 n muscles every joint gets an agonist/antagonist pair of
mono-articular muscles; the remaining muscles are bi-articular, spanning two neighbouring
joints with the four sign combinations of their offsets. Beyond 4 (n - 1) of them, further
layers of bi-articular muscles follow, each with its offsets at another angle and 25 % further
from the axis, so that no two muscles share a line of action (a full-arm model has ~300
muscles on ~40 joints). With fewer (down to n + ceil(n / 2), as in MyoSuite's MyoArm: 63
muscles on 38 joints) every joint gets one mono-articular agonist and each pair of joints
(1, 2), (3, 4), ... one bi-articular antagonist pulling both back (an odd last joint a
mono-articular one): the three muscles of a pair still pull its two joints every way. The
muscles left over are bi-articular as above. It is not a model of anything: it scales the
controller's problem (m muscles, n joints) with a well-conditioned, fully controllable arm.

``SyntheticRobot`` (= :class:`Robot`) loads such a folder.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from musculo_control.model.robot import Robot

#: Offset angle of each layer of bi-articular muscles (4 (n - 1) muscles each), between the
#: directions across the two joints' axes [rad].
_LAYER_ANGLES_RAD = tuple(math.radians(d) for d in (45.0, 30.0, 60.0, 15.0, 75.0))
_BIARTICULAR_LAYERS = len(_LAYER_ANGLES_RAD)


def _axis(j: int) -> tuple[int, int, int]:
    return (1, 0, 0) if j % 2 == 0 else (0, 1, 0)


def _perpendicular(j: int) -> np.ndarray:
    """The in-plane direction across joint j's axis along which its muscles are offset."""
    return np.array([0.0, 1.0, 0.0]) if j % 2 == 0 else np.array([1.0, 0.0, 0.0])


def write_synthetic_arm(folder: Path, n_joints: int, n_muscles: int, *,
                        link_length_m: float = 0.1, link_mass_kg: float = 0.4,
                        offset_m: float = 0.03, limit_rad: float = 1.2,
                        home_bend_rad: float = 0.35) -> Path:
    """Write a synthetic arm config folder; returns ``folder``.

    Needs ``fewest_muscles(n_joints) <= n_muscles <= 2 n_joints + 4 (n_joints - 1)
    _BIARTICULAR_LAYERS``.
    """
    n, m = n_joints, n_muscles
    most = 2 * n + 4 * (n - 1) * _BIARTICULAR_LAYERS
    if n < 2 or not fewest_muscles(n) <= m <= most:
        raise ValueError(f"{m} muscles for {n} joints: need at least 2 joints and between "
                         f"{fewest_muscles(max(n, 2))} and {most} muscles")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "arm.urdf").write_text(_urdf(n, m, link_length_m, link_mass_kg, limit_rad))
    muscles = _synthetic_muscles(n, m, link_length_m, offset_m)
    (folder / "muscles.yaml").write_text(yaml.safe_dump(
        {"length_range_samples": 4096, "length_range_seed": 0, "muscles": muscles},
        sort_keys=False))
    home = [home_bend_rad * (1 if j % 3 else -1) for j in range(n)]
    robot = {
        "arm": {"urdf": "arm.urdf", "joints": [f"j{j + 1}" for j in range(n)],
                "task_frame": "hand", "gravity_m_s2": [0.0, 0.0, -9.81]},
        "muscles_file": "muscles.yaml",
        "hill": {"f1_n": 200.0, "f2_n": 40.0, "f_min_n": 5.0},
        "home_pose_rad": home,
    }
    (folder / "robot.yaml").write_text(yaml.safe_dump(robot, sort_keys=False))
    return folder


def _urdf(n: int, m: int, link_length_m: float, link_mass_kg: float, limit_rad: float) -> str:
    """The URDF of a hanging chain of ``n`` equal links (length [m], mass [kg]) whose
    revolute joints (+- ``limit_rad``) alternate between the x and y axes, with a ``hand``
    at the end."""
    L = link_length_m
    inertia = link_mass_kg * L * L / 12.0
    links = ['  <link name="base"/>']
    joints = []
    for j in range(n):
        links.append(
            f'  <link name="link{j + 1}"><inertial><origin xyz="0 0 {-L / 2}"/>'
            f'<mass value="{link_mass_kg}"/><inertia ixx="{inertia}" iyy="{inertia}" '
            f'izz="{inertia / 10}" ixy="0" ixz="0" iyz="0"/></inertial></link>')
        parent = "base" if j == 0 else f"link{j}"
        z = 0.0 if j == 0 else -L
        ax = " ".join(map(str, _axis(j)))
        joints.append(
            f'  <joint name="j{j + 1}" type="revolute"><parent link="{parent}"/>'
            f'<child link="link{j + 1}"/><origin xyz="0 0 {z}"/><axis xyz="{ax}"/>'
            f'<limit lower="{-limit_rad}" upper="{limit_rad}" effort="100" velocity="3"/>'
            f'</joint>')
    links.append('  <link name="hand"/>')
    joints.append(f'  <joint name="hand_fixed" type="fixed"><parent link="link{n}"/>'
                  f'<child link="hand"/><origin xyz="0 0 {-L}"/></joint>')
    return "\n".join(['<?xml version="1.0"?>', f'<robot name="synthetic_{n}_{m}">', *links,
                      *joints, "</robot>", ""])


def _synthetic_muscles(n: int, m: int, link_length_m: float,
                       offset_m: float) -> list[dict[str, Any]]:
    """The ``m`` muscles of a chain of ``n`` joints as muscles.yaml entries (see the module
    docstring): the mono-articular pairs, or an agonist per joint and an antagonist per pair
    of joints, then layers of bi-articular muscles."""
    made = _MuscleMaker(link_length_m, offset_m)
    if m >= 2 * n:
        for j in range(n):
            made.mono(j, 1.0, "a")
            made.mono(j, -1.0, "b")
    else:  # one agonist per joint, one antagonist per pair of joints
        for j in range(n):
            made.mono(j, 1.0, "a")
        for j in range(0, n - 1, 2):
            made.biarticular(f"p{j + 1}_{j + 2}", j, -1.0, -1.0, 0)
        if n % 2:
            made.mono(n - 1, -1.0, "b")
    signs = ((1, 1), (1, -1), (-1, 1), (-1, -1))
    k = 0
    while len(made.muscles) < m:
        j, (s1, s2) = k % (n - 1), signs[(k // (n - 1)) % 4]
        made.biarticular(f"b{j + 1}_{j + 2}_{k // (n - 1)}", j, s1, s2, k // (4 * (n - 1)))
        k += 1
    return made.muscles


class _MuscleMaker:
    """Two-point muscles of a synthetic chain, numbered in the order made: each from a point
    on a joint's parent link to one on a link below it, offset across the joints' axes."""

    def __init__(self, link_length_m: float, offset_m: float) -> None:
        self.L = link_length_m
        self.h = 0.4 * link_length_m  # how far from the joint the muscle attaches, along the link
        self.offset_m = offset_m
        self.muscles: list[dict[str, Any]] = []

    def _parent_point(self, j: int, offset: np.ndarray) -> tuple[str, list[float]]:
        """A point on joint j's parent link, h above the joint."""
        z = (0.0 if j == 0 else -self.L) + self.h
        return ("base" if j == 0 else f"link{j}"), [*map(float, offset[:2]), z]

    def _add(self, name: str, origin: tuple[str, list[float]],
             insertion: tuple[str, list[float]]) -> None:
        self.muscles.append({"name": name, "actuator_id": len(self.muscles) + 1,
                             "path": [{"link": origin[0], "point_m": origin[1]},
                                      {"link": insertion[0], "point_m": insertion[1]}]})

    def mono(self, j: int, sign: float, tag: str) -> None:
        """A mono-articular muscle across joint ``j``, on the ``sign`` side."""
        off = sign * self.offset_m * _perpendicular(j)
        self._add(f"m{j + 1}{tag}", self._parent_point(j, off),
                  (f"link{j + 1}", [*map(float, off[:2]), -self.h]))

    def biarticular(self, name: str, j: int, s1: float, s2: float, layer: int) -> None:
        """A bi-articular muscle across joints ``j`` and ``j + 1``, offset by the signs
        ``s1``, ``s2`` across their axes, in bi-articular ``layer``."""
        # layer 0: offsets at 45 degrees between the two joints' directions; later layers at
        # other angles (never 0 or 90: that muscle would act on one joint only) and further out
        angle = _LAYER_ANGLES_RAD[layer]
        radius = self.offset_m * (1.0 + 0.25 * layer)
        off = radius * (s1 * math.cos(angle) * _perpendicular(j)
                        + s2 * math.sin(angle) * _perpendicular(j + 1))
        self._add(name, self._parent_point(j, off),
                  (f"link{j + 2}", [*map(float, off[:2]), -self.h]))


def fewest_muscles(n_joints: int) -> int:
    """The fewest muscles of a synthetic arm of ``n_joints``: an agonist per joint and an
    antagonist per pair of joints."""
    return n_joints + (n_joints + 1) // 2


#: Loads a synthetic folder. Plain :class:`Robot` since it samples the joint-box corners only
#: up to ten joints (a 28-joint box has 2^28); the name stays for the benchmarks.
SyntheticRobot = Robot


def full_task_mask(n_rows: int, n_joints: int) -> tuple[tuple[bool, ...], ...]:
    """A decoupling mask that lets every task row use every joint (no eq. 13 decoupling)."""
    return tuple(tuple(True for _ in range(n_joints)) for _ in range(n_rows))
