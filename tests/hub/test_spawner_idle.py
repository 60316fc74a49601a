"""The idle-GPU policy: warn once, then stop, only on evidence of idleness."""

from __future__ import annotations

import pytest

from trainhub_spawner.idle import (
    Action,
    GpuServer,
    IdlePolicy,
    IdleState,
    decide,
    gpu_servers,
    observe,
    warning_sentence,
)

POLICY = IdlePolicy(threshold_percent=10, warn_after_minutes=20, stop_after_minutes=30)


def run(readings: list[float | None], step_minutes: float = 5) -> list[Action]:
    """Feed one reading per step; apply the service's own bookkeeping after each decision."""
    state, actions = IdleState(), []
    for i, util in enumerate(readings):
        now = i * step_minutes * 60
        state = observe(state, now, util, POLICY)
        action = decide(state, now, POLICY)
        if action is Action.WARN:
            state = IdleState(state.low_since, warned_at=now)
        actions.append(action)
    return actions


def test_idle_gpus_are_warned_once_then_stopped() -> None:
    # idle from t=0: warn at 20 min, stop at 30 min
    assert run([0, 1, 2, 3, 4, 5, 6]) == [Action.KEEP] * 4 + [Action.WARN, Action.KEEP, Action.STOP]


def test_a_busy_reading_starts_the_idle_stretch_over() -> None:
    actions = run([0, 0, 0, 0, 0, 50, 0, 0, 0, 0, 0, 0])
    assert actions[4] is Action.WARN
    assert Action.STOP not in actions[:11]
    assert actions[9] is Action.KEEP and actions[10] is Action.WARN  # a new stretch, a new warning
    assert actions[11] is Action.KEEP


def test_utilization_at_the_threshold_is_busy() -> None:
    assert run([10] * 10) == [Action.KEEP] * 10
    assert run([9.9] * 7)[-1] is Action.STOP


def test_missing_readings_never_count_as_idle() -> None:
    assert run([None] * 10) == [Action.KEEP] * 10
    actions = run([0, 0, 0, None, 0, 0, 0, 0])
    assert Action.STOP not in actions  # the gap restarted the stretch at 20 min


def test_warn_and_stop_together_when_warning_is_disabled_by_equal_minutes() -> None:
    p = IdlePolicy(threshold_percent=5, warn_after_minutes=30, stop_after_minutes=30)
    state = observe(IdleState(), 0, 0, p)
    assert decide(state, 29 * 60, p) is Action.KEEP
    assert decide(state, 30 * 60, p) is Action.STOP


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold_percent": 101}, "threshold_percent: 101 is not between 0 and 100"),
        (
            {"warn_after_minutes": 50, "stop_after_minutes": 40},
            "warn_after_minutes must be between",
        ),
    ],
)
def test_a_policy_that_makes_no_sense_is_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        IdlePolicy(**kwargs)


def test_the_warning_says_how_long_and_what_happens_next() -> None:
    state = IdleState(low_since=0)
    assert warning_sentence("ada", 1, state, 20 * 60, POLICY) == (
        "ada's server has used less than 10% of its 1 GPU for 20 minutes; "
        "it will be stopped in 10 minutes unless it gets busy"
    )


def test_only_ready_servers_holding_gpus_are_watched() -> None:
    users = [
        {
            "name": "ada",
            "servers": {
                "": {
                    "ready": True,
                    "user_options": {"gpus": "2"},
                    "state": {"pod_name": "jupyter-ada", "namespace": "team-nlp"},
                }
            },
        },
        {
            "name": "bob",
            "servers": {
                "": {
                    "ready": True,
                    "user_options": {"gpus": "0"},
                    "state": {"pod_name": "jupyter-bob", "namespace": "team-nlp"},
                }
            },
        },
        {
            "name": "cy",
            "servers": {
                "lab": {
                    "ready": False,
                    "user_options": {"gpus": "1"},
                    "state": {"pod_name": "jupyter-cy", "namespace": "t"},
                }
            },
        },
        {
            "name": "di",
            "servers": {"": {"ready": True, "user_options": {"gpus": "x"}, "state": {}}},
        },
        {"name": "ed", "servers": {}},
    ]
    assert gpu_servers(users) == [GpuServer("ada", "", "team-nlp", "jupyter-ada", 2)]
