"""Health: what counts as a change (published at once by a node, recorded by the runner)."""

from musculo_control.loop.health import ERROR, OK, WARN, Health


def _recording() -> tuple[Health, list]:
    health = Health("stage")
    changes: list = []
    health.on_change = lambda level, message, t: changes.append((level, message, t))
    return health, changes


def test_a_new_level_is_a_change_and_a_new_number_in_the_same_sentence_is_not():
    health, changes = _recording()
    health.set(OK, "passing commands", 0.0)
    health.set(ERROR, "state 0.016 s old (limit 0.015 s)", 1.0)
    health.set(ERROR, "state 0.024 s old (limit 0.015 s)", 1.1)
    health.set(ERROR, "state 1e-3 s old (limit 0.015 s)", 1.2)
    assert [c[0] for c in changes] == [OK, ERROR]
    assert health.message == "state 1e-3 s old (limit 0.015 s)"
    assert health.since_s == 1.0


def test_a_new_sentence_at_the_same_level_is_a_change():
    """A second reason joining the first must reach the operator at once, not at the next
    periodic publication."""
    health, changes = _recording()
    health.set(ERROR, "minimum tension: watchdog, last command 0.02 s old", 0.0)
    health.set(ERROR, "minimum tension: watchdog, last command 0.03 s old; newest tendon "
                      "state 0.016 s old", 0.01)
    assert len(changes) == 2 and "tendon state" in changes[-1][1]


def test_an_explicit_key_overrides_the_sentence():
    health, changes = _recording()
    health.set(WARN, "no goal: holding the hand", 0.0, key=("no_goal",))
    health.set(WARN, "no goal: holding the hand where it is", 0.5, key=("no_goal",))
    health.set(WARN, "no goal", 0.6, key=("no_goal", "snapshot_late"))
    assert len(changes) == 2


def test_refused_inputs_are_counted_and_warned_about_with_a_throttle():
    health = Health("stage", throttle_s=1.0)
    seen = []
    health.on_refuse = lambda topic, reason, t: seen.append((topic, reason))
    for k in range(5):
        health.refuse("joint_states", "stamp not after the previous", 0.1 * k)
    assert len(seen) == 5
    warnings = health.take_warnings()
    assert 1 <= len(warnings) < 5 and "joint_states" in warnings[0]
    assert health.take_warnings() == []
    assert any("5" in v for v in health.values().values())
