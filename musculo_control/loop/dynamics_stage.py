"""The 20 Hz dynamics snapshot from the newest joint state (``dynamics_node``'s logic).

At each tick it takes the newest joint state and, unless that is stale (older than safety.yaml
``inputs.joint_state.hold_s``; older than its ``late_s`` it is used and reported) or is the
very sample the previous snapshot came from, computes the snapshot
(:class:`~musculo_control.estimation.snapshot.DynamicsEstimator`) stamped with that joint
state's stamp. Publishing a second snapshot of one sample would only be
refused downstream as out of order; a stale sample gives no snapshot, and the controller's
supervisor then sees the snapshot age and falls back by itself.
"""

from __future__ import annotations

from musculo_control.errors import InputError
from musculo_control.estimation.snapshot import DynamicsEstimator, DynamicsSnapshot
from musculo_control.hardware.potentiometer import PotentiometerReading
from musculo_control.loop import topics
from musculo_control.loop.health import ERROR, OK, WARN, Health
from musculo_control.streams import LATE, STALE, InputBounds, Latest, OwnPause

IN_TOPIC = topics.JOINT_STATES
OUT_TOPIC = topics.DYNAMICS


class DynamicsStage:
    """See the module docstring."""

    def __init__(self, estimator: DynamicsEstimator, joint_state: InputBounds,
                 warn_throttle_s: float = 1.0, pause: OwnPause | None = None) -> None:
        """``joint_state``: how old the joint state may be (safety.yaml
        ``inputs.joint_state``); ``pause``: the stage's own pauses (a tick that late after the
        previous one), after which a joint sample that was on time is aged from the tick after
        the pause (default: none seen)."""
        self.estimator = estimator
        self.bounds = joint_state
        self.pause = pause if pause is not None else OwnPause()
        self.joints: Latest[PotentiometerReading] = Latest(IN_TOPIC)
        self.health = Health("dynamics", warn_throttle_s)
        self.reset()

    def reset(self) -> None:
        self.joints.reset()
        self.pause.reset()
        self._last_source_s: float | None = None
        self.published = 0
        self.damped = 0
        self.late = 0  # snapshots from a late joint state

    def receive_joints(self, reading: PotentiometerReading) -> None:
        late = self.joints.offer(reading.stamp_s, reading)
        if late is not None:
            self.health.refuse(IN_TOPIC, late, reading.stamp_s)

    def tick(self, now_s: float) -> DynamicsSnapshot | None:
        """The snapshot to publish at ``now_s`` [s], or ``None`` (see the module docstring)."""
        self.pause.tick(now_s)
        joints = self.joints.value
        if joints is None:
            self.health.set(WARN, f"no {IN_TOPIC} yet", now_s)
            return None
        # its own pause is not the joint stream's: a snapshot at the arm as it was before it
        # beats none (the controller grades the snapshot's age the same way)
        age = self.pause.age_s(now_s, self.joints.stamp_s, self.bounds)
        grade = self.bounds.grade(age)
        if grade == STALE:
            self.health.set(ERROR, f"{IN_TOPIC} {age * 1e3:.1f} ms old (stale at "
                                   f"{self.bounds.hold_s * 1e3:.0f} ms): no snapshot", now_s)
            return None
        if joints.stamp_s == self._last_source_s:
            return None
        try:
            snap = self.estimator.compute(joints.q_rad, joints.qd_rad_s, joints.stamp_s)
        except InputError as exc:
            self.health.set(ERROR, f"snapshot not computed: {exc}", now_s)
            return None
        self._last_source_s = joints.stamp_s
        self.published += 1
        self.damped += int(snap.damped)
        self.late += int(grade == LATE)
        if grade == LATE:
            self.health.set(WARN, f"{IN_TOPIC} {age * 1e3:.1f} ms old (late beyond "
                                  f"{self.bounds.late_s * 1e3:.0f} ms): snapshot from it", now_s)
        elif snap.damped:
            self.health.set(WARN, f"near-singular task: damped inverse (smallest eigenvalue "
                                  f"{snap.min_task_eigenvalue:.2e})", now_s)
        else:
            self.health.set(OK, "publishing snapshots", now_s)
        return snap

    def values(self) -> dict[str, str]:
        return {"published": str(self.published), "damped": str(self.damped),
                "from a late joint state": str(self.late),
                **self.health.values()}
