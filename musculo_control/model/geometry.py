"""The muscle-geometry interface: muscle lengths l(q) and the muscle Jacobian Jm = dl/dq.

Every consumer (the dynamics snapshot, the fresh state of a tick, the muscle-stiffness baseline,
the safety consistency check, the markers, the Hill ranges) sees the muscles only through
:class:`MuscleGeometry`, so the way l(q) is obtained is a choice of backend:

- :class:`~musculo_control.model.muscles.ViaPointGeometry`: straight via-point chains on the
  links of a URDF (SPEC section 9), evaluated on a Pinocchio pass;
- :class:`~musculo_control.model.mujoco_tendons.MujocoTendonGeometry`: the spatial tendons of an
  MJCF as MuJoCo computes them (sites, wrapping over spheres and cylinders, pulleys);
- a mapping learned from the robot's own recordings (doc/learned_mapping.md) needs only ``q``.

Conventions (SPEC section 2): ``Jm`` is (m, n); a pulling muscle shortens, so the torque of
tensions ``f`` is ``-Jm^T f``; the moment arm of muscle i about joint j is ``-Jm[i, j]``.

Each backend keeps its scratch memory per thread, so one geometry object may serve the 20 Hz
estimator and the 125 Hz tick of the same process.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


class MuscleKinematics(NamedTuple):
    """Muscle lengths and Jacobian at one configuration."""

    length_m: FloatArray  # (m,) [m]
    jacobian: FloatArray  # (m, n) dl/dq [m/rad]; torque is -jacobian.T @ f


@runtime_checkable
class MuscleGeometry(Protocol):
    """What every muscle-geometry backend offers. Arrays in muscle order, joints in robot order."""

    #: muscle names, in the muscles file's order
    names: tuple[str, ...]
    #: one line naming the backend and its source, for reports ("MuJoCo tendons of arm.xml")
    source: str

    def lengths_at(self, q: FloatArray) -> FloatArray:
        """(m,) muscle lengths at ``q`` [m]."""
        ...

    def kinematics_at(self, q: FloatArray) -> MuscleKinematics:
        """Lengths and Jacobian at ``q``."""
        ...

    def kinematics_after_jacobians(self, q: FloatArray, data: Any) -> MuscleKinematics:
        """Lengths and Jacobian at ``q``, where the dynamics pass of the snapshot has just run
        on ``data``, a workspace of the arm's rigid-body backend (Pinocchio's
        ``computeJointJacobians``; MuJoCo's position stages): a backend built on the same
        library reuses it, the others ignore it."""
        ...

    def paths_at(self, q: FloatArray) -> list[FloatArray]:
        """One (k_i, 3) polyline of world points [m] per muscle, what a viewer draws."""
        ...
