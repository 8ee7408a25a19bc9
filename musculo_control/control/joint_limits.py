"""Predictive joint limits as linear rows on the activations (SPEC section 9).

Over a horizon h the joint angle is predicted as ``q + h qd + (h^2/2) qdd`` and kept inside
``[q_min + margin, q_max - margin]``. The acceleration follows from the equation of motion
without external force, ``M qdd = tau_muscle - g - C qd``, and the muscle torque is
``tau_muscle = -Jm^T f = -(B a + c_m)`` with ``B = Jm^T diag(f_a)`` and ``c_m = Jm^T f_p +
Jm_fixed^T f_fixed`` (SPEC section 2). So ``qdd = -M^-1 B a - M^-1 (c_m + g + C qd)``, linear in
``a``:

    G = -(h^2/2) M^-1 B,    q_lo - q - h qd + (h^2/2) M^-1 (c_m + g + C qd) <= G a <= (same, q_hi)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from musculo_control.control.qp_problem import LinearRows

FloatArray = npt.NDArray[np.float64]


def predictive_limit_rows(mass_matrix_inv: FloatArray, torque_matrix: FloatArray,
                          muscle_bias_nm: FloatArray, bias_nm: FloatArray, q: FloatArray,
                          qd: FloatArray, lower_rad: FloatArray, upper_rad: FloatArray,
                          horizon_s: float, margin_rad: float) -> LinearRows:
    """(n) rows ``G a`` in ``[lo, hi]`` that keep the predicted joint angles inside the limits.

    ``torque_matrix`` is B (n, m); ``muscle_bias_nm`` is c_m, the muscles' torque at zero
    activation (passive and uncontrolled), in the ``Jm^T f`` sign; ``bias_nm`` is g + C qd.
    """
    half_h2 = 0.5 * horizon_s * horizon_s
    G = -half_h2 * (mass_matrix_inv @ torque_matrix)
    drift = q + horizon_s * qd - half_h2 * (mass_matrix_inv @ (muscle_bias_nm + bias_nm))
    return LinearRows(G, lower_rad + margin_rad - drift, upper_rad - margin_rad - drift)
