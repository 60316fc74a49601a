"""Retry accounting: whether a failed attempt goes again, after how long, and how many retries
each failure class has used.

The job's :class:`~trainhub.jobs.spec.RetryPolicy` says how many retries each class gets;
the count used so far lives in the job's record (``retries``, failure class -> count), kept by
the local supervisor for its retries and by the Kubernetes backend for Kueue's preemptions.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from trainhub.jobs.models import Verdict
from trainhub.jobs.spec import RetryPolicy
from trainhub.jobs.states import FailureClass

# The classes a policy may allow retries for; code errors and cancels never retry.
RETRIABLE = frozenset(
    {FailureClass.INFRASTRUCTURE, FailureClass.PREEMPTED, FailureClass.ENVIRONMENT}
)


def retry_limit(policy: RetryPolicy, failure_class: FailureClass | str) -> int:
    """How many retries ``policy`` allows for ``failure_class``."""
    cls = FailureClass(failure_class)
    return int(getattr(policy, cls.value)) if cls in RETRIABLE else 0


def retries_used(retries: Mapping[str, int], failure_class: FailureClass | str) -> int:
    return retries.get(FailureClass(failure_class).value, 0)


def should_retry(verdict: Verdict, policy: RetryPolicy, retries: Mapping[str, int]) -> bool:
    """Whether the attempt that ended with ``verdict`` is retried, given the retries used."""
    return retries_used(retries, verdict.failure_class) < retry_limit(policy, verdict.failure_class)


def count_retry(
    retries: Mapping[str, int], failure_class: FailureClass | str, used: int | None = None
) -> dict[str, int]:
    """``retries`` with one more retry of ``failure_class`` (or, given ``used``, that many)."""
    cls = FailureClass(failure_class).value
    return {**retries, cls: retries.get(cls, 0) + 1 if used is None else used}


def backoff(policy: RetryPolicy, retry_number: int) -> float:
    """Seconds to wait before retry number ``retry_number`` (1-based): exponential, capped."""
    delay = policy.backoff_seconds * policy.backoff_factor ** max(retry_number - 1, 0)
    return min(delay, policy.max_backoff_seconds)
