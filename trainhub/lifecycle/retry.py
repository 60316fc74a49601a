"""Retry accounting: whether a failed attempt goes again, after how long, and how many retries
each failure class has used; the plan of the next attempt and the ``retry`` event that says so.

The job's :class:`~trainhub.jobs.specparts.RetryPolicy` says how many retries each class gets;
the count used so far lives in the job's record (``retries``, failure class -> count), kept by
the local supervisor for its retries and by the Kubernetes backend for Kueue's preemptions.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from trainhub.jobs.models import Verdict
from trainhub.jobs.specparts import RetryPolicy
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


@dataclass(frozen=True)
class RetryPlan:
    attempt: int  # the next attempt's number
    failure_class: str  # of the attempt that failed
    reason: str
    backoff_seconds: float
    not_before: float  # when the next attempt may start (epoch seconds)
    retries: dict[str, int] = field(default_factory=dict)  # used, this retry included

    def due(self, now: float) -> bool:
        return now >= self.not_before

    def fields(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.fields(), sort_keys=True)

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any]) -> RetryPlan:
        return cls(
            attempt=int(fields["attempt"]),
            failure_class=str(fields["failure_class"]),
            reason=str(fields.get("reason") or ""),
            backoff_seconds=float(fields["backoff_seconds"]),
            not_before=float(fields["not_before"]),
            retries={str(k): int(v) for k, v in (fields.get("retries") or {}).items()},
        )


def plan_retry(
    verdict: Verdict,
    policy: RetryPolicy,
    retries: Mapping[str, int],
    *,
    attempt: int,
    now: float,
    cancel_requested: bool = False,
) -> RetryPlan | None:
    """The next attempt after ``attempt`` failed with ``verdict``, or None when it ends the job
    (a cancel, a class the policy never retries, or its retries used up)."""
    if cancel_requested or not should_retry(verdict, policy, retries):
        return None
    used = count_retry(retries, verdict.failure_class)
    delay = backoff(policy, used[verdict.failure_class.value])
    return RetryPlan(
        attempt=attempt + 1,
        failure_class=verdict.failure_class.value,
        reason=verdict.reason,
        backoff_seconds=delay,
        not_before=now + delay,
        retries=used,
    )


def retry_event(plan: RetryPlan, resume_step: int | None) -> dict[str, Any]:
    """The fields of the job's ``retry`` event: the plan, and the step of the checkpoint the
    next attempt resumes from (:func:`trainhub.lifecycle.resume.resume_source`)."""
    return {**plan.fields(), "resume_step": resume_step}
