"""The paper's baselines (paper eq. 16-17, SPEC section 6): their math and configuration.

- Joint stiffness (eq. 16): ``min_f k ||f||^2 + ||Jm^T f + K (q_des - q) + g||^2``, ``f >= f_min``.
  The same bounded least squares as eq. 10 with tensions as the variables (``f_a = 1``,
  ``f_p = 0``, lower bound ``f_min``), so it is solved by the same :class:`ActivationQP`.
- Muscle stiffness (eq. 17): ``f_i = max(k_m (l_i - l_des,i), 0) + f_min`` with
  ``l_des = l(q_des)``: no optimisation at all.

The controllers that run them live in :mod:`musculo_control.control.baseline_controllers`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from musculo_control.config.parser import spec
from musculo_control.control.qp_problem import TorqueBalance

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class JointStiffnessConfig:
    """Eq. 16 (controller.yaml ``baselines.joint_stiffness``)."""

    stiffness_nm_rad: tuple[float, ...] = spec(
        min_length=1, ge=0.0, doc="diagonal of K, one per joint in robot.yaml order [Nm/rad] "
                                  "(the paper's 7-joint arm: 40, 40, 40, 15, 2, 2, 2)")
    k: float = spec(1e-5, gt=0.0, doc="tension weight k of eq. 16 [Nm^2/N^2]")


@dataclass(frozen=True, kw_only=True)
class MuscleStiffnessConfig:
    """Eq. 17 (controller.yaml ``baselines.muscle_stiffness``)."""

    stiffness_n_m: float = spec(gt=0.0, doc="muscle stiffness k_m [N/m]")


@dataclass(frozen=True, kw_only=True)
class BaselinesConfig:
    """Both baselines (controller.yaml ``baselines``)."""

    joint_stiffness: JointStiffnessConfig = spec(doc="paper eq. 16")
    muscle_stiffness: MuscleStiffnessConfig = spec(doc="paper eq. 17")


def joint_stiffness_torque(stiffness_nm_rad: FloatArray, q_des: FloatArray, q: FloatArray,
                           gravity_nm: FloatArray) -> FloatArray:
    """(n,) ``K (q_des - q) + g`` [Nm]: the torque the muscles should produce (paper eq. 16)."""
    return stiffness_nm_rad * (q_des - q) + gravity_nm


def joint_stiffness_balance(muscle_jacobian: FloatArray, target_torque_nm: FloatArray,
                            fixed_torque_nm: FloatArray) -> TorqueBalance:
    """Eq. 16 as the torque balance of the activation QP, with the tensions as variables.

    ``muscle_jacobian`` (m, n) of the controlled muscles; ``fixed_torque_nm`` is
    ``Jm_fixed^T f_fixed`` of the uncontrolled muscles.
    """
    m = muscle_jacobian.shape[0]
    return TorqueBalance(muscle_jacobian, np.ones(m), np.zeros(m),
                         target_torque_nm + fixed_torque_nm, None)


def muscle_stiffness_tension(length_m: FloatArray, length_des_m: FloatArray,
                             stiffness_n_m: float, f_min_n: float) -> FloatArray:
    """(m,) ``max(k_m (l - l_des), 0) + f_min`` [N] (paper eq. 17)."""
    return np.maximum(stiffness_n_m * (length_m - length_des_m), 0.0) + f_min_n
