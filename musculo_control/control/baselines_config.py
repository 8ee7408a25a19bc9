"""Configuration of the paper's baselines (paper eq. 16-17): controller.yaml ``baselines``.

Where a setting is ``null`` its rule computes it (:mod:`musculo_control.control.baselines`, which
also holds the baselines' math and controllers; doc/controller.md, "Baselines").
"""

from __future__ import annotations

from dataclasses import dataclass

from musculo_control.config.parser import spec


@dataclass(frozen=True, kw_only=True)
class JointStiffnessConfig:
    """Eq. 16 (controller.yaml ``baselines.joint_stiffness``)."""

    stiffness_nm_rad: tuple[float, ...] = spec(
        min_length=1, ge=0.0, doc="diagonal of K, one per joint in robot.yaml order [Nm/rad] "
                                  "(the paper's 7-joint arm: 40, 40, 40, 15, 2, 2, 2)")
    k: float | None = spec(
        None, gt=0.0, doc="tension weight k of eq. 16 [Nm^2/N^2]; null: the rule, qp.k on "
                          "each tension over its muscle's peak active force, (qp.k / f1_i^2) "
                          "f_i^2 (the paper's weight on activations, f = a f1 at l_o)")


@dataclass(frozen=True, kw_only=True)
class MuscleStiffnessConfig:
    """Eq. 17 (controller.yaml ``baselines.muscle_stiffness``)."""

    stiffness_n_m: float | None = spec(
        None, gt=0.0, doc="muscle stiffness k_m [N/m]; null: the rule, the k_m whose joint "
                          "stiffness at home_pose_rad matches eq. 16's K in least squares")


@dataclass(frozen=True, kw_only=True)
class BaselinesConfig:
    """Both baselines (controller.yaml ``baselines``)."""

    joint_stiffness: JointStiffnessConfig = spec(doc="paper eq. 16")
    muscle_stiffness: MuscleStiffnessConfig = spec(doc="paper eq. 17")
