from trainhub.jobs.models import Verdict
from trainhub.jobs.specparts import RetryPolicy
from trainhub.jobs.states import FailureClass
from trainhub.lifecycle.retry import backoff, count_retry, retry_limit, should_retry


def test_retry_policy_never_retries_code_and_backs_off():
    policy = RetryPolicy(backoff_seconds=10, backoff_factor=2, max_backoff_seconds=30)
    assert retry_limit(policy, "code") == 0 and retry_limit(policy, "infrastructure") == 2
    assert retry_limit(policy, FailureClass.CANCELLED) == 0
    assert [backoff(policy, n) for n in (1, 2, 3)] == [10, 20, 30]


def test_retries_are_counted_per_failure_class():
    used = count_retry({}, FailureClass.INFRASTRUCTURE)
    assert used == {"infrastructure": 1}
    assert count_retry(used, "infrastructure") == {"infrastructure": 2}
    assert count_retry(used, FailureClass.PREEMPTED, used=3) == {
        "infrastructure": 1,
        "preempted": 3,
    }
    assert used == {"infrastructure": 1}  # counting makes a new mapping

    lost = Verdict(failure_class=FailureClass.INFRASTRUCTURE, reason="node lost")
    policy = RetryPolicy(infrastructure=2)
    assert should_retry(lost, policy, used) and not should_retry(
        lost, policy, count_retry(used, "infrastructure")
    )
