"""What RViz draws of the muscles: each path's via-points in the world, and a colour per muscle.

ROS-free: :class:`MusclePathModel` turns a joint vector into one (k_i, 3) polyline per muscle
from the muscle geometry itself (via-points, or MuJoCo's sites and wrap tangent points), so the
picture is what the controller computes with; :func:`colour_scale` maps a normalised load
(activation or tension over its full scale) to RGBA from blue (slack) through yellow to red
(full scale and beyond).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from musculo_control.errors import InputError
from musculo_control.model.robot import Robot

FloatArray = npt.NDArray[np.float64]

#: Colour stops (value, r, g, b) of the load scale.
_STOPS = np.array([
    [0.0, 0.20, 0.40, 1.00],  # slack: blue
    [0.5, 1.00, 0.85, 0.10],  # half: yellow
    [1.0, 1.00, 0.10, 0.10],  # full scale: red
])


class MusclePathModel:
    """World positions of every muscle's path at a joint vector."""

    def __init__(self, robot: Robot) -> None:
        self.robot = robot
        self.names = robot.muscle_names

    def paths(self, q_rad: npt.ArrayLike) -> list[FloatArray]:
        """One (k_i, 3) array of world points [m] per muscle, in muscles-file order."""
        q = self.robot.arm.check_q(q_rad, "q_rad")
        return self.robot.geometry.paths_at(q)


def colour_scale(load: npt.ArrayLike, alpha: float = 1.0) -> FloatArray:
    """(m, 4) RGBA for loads normalised to full scale (values outside [0, 1] are clipped).

    A non-finite load (no data yet) is drawn grey.
    """
    x = np.asarray(load, dtype=float).reshape(-1)
    if not 0.0 <= alpha <= 1.0:
        raise InputError("colour alpha", "a value in [0, 1]", alpha)
    good = np.isfinite(x)
    xc = np.clip(np.where(good, x, 0.0), 0.0, 1.0)
    rgba = np.empty((x.size, 4))
    for c in range(3):
        rgba[:, c] = np.interp(xc, _STOPS[:, 0], _STOPS[:, c + 1])
    rgba[~good, :3] = 0.5
    rgba[:, 3] = alpha
    return rgba


def normalised_load(values: npt.ArrayLike, low: float, full_scale: float) -> FloatArray:
    """(values - low) / (full_scale - low): 0 at ``low`` (e.g. f_min), 1 at ``full_scale``."""
    if not full_scale > low:
        raise InputError("load full scale", f"more than the low end {low}", full_scale)
    return (np.asarray(values, dtype=float) - low) / (full_scale - low)
