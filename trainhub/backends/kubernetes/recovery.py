"""What the Kubernetes backend does about an attempt that ended badly: pure decisions, no I/O.

Failures: the Job controller cannot tell failure classes apart, so the Job has
``backoffLimit: 0`` and trainhub retries, with the policy the local supervisor applies
(:mod:`trainhub.lifecycle.retry`). A failed attempt whose class the job's retry policy still
allows gets a :class:`RetryPlan`: it is written as the job's ``retry`` event and as an
annotation on the failed Job (which then reads as ``retrying``); once its backoff has passed,
reconcile replaces that Job by the next attempt's, whose pods get ``TRAINHUB_ATTEMPT`` one
higher and ``TRAINHUB_RESUME_FROM`` naming the job's latest checkpoint.

Preemption stays Kueue's: it suspends the Job (its pods get SIGTERM and the grace period in
which the ranks' ``trainhub.checkpoint.on_stop`` callbacks save), requeues the Workload and
unsuspends the Job when it is admitted again; the new pods resume from that checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from trainhub.jobs.models import Verdict
from trainhub.jobs.spec import RetryPolicy
from trainhub.lifecycle.retry import backoff, count_retry, should_retry

# On a failed Job: the plan of the attempt that replaces it (JSON of a RetryPlan).
RETRY_ANNOTATION = "trainhub.io/retry"


@dataclass(frozen=True)
class RetryPlan:
    attempt: int  # the next attempt's number
    failure_class: str  # of the attempt that failed
    reason: str
    backoff_seconds: float
    not_before: float  # when the next attempt's Job may be created (epoch seconds)
    retries: dict[str, int] = field(default_factory=dict)  # used, this retry included

    def due(self, now: float) -> bool:
        return now >= self.not_before

    def fields(self) -> dict[str, Any]:
        """As the fields of the job's ``retry`` event."""
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


def pending_retry(job: Mapping[str, Any]) -> RetryPlan | None:
    """The plan a failed Job carries, once trainhub decided to retry it."""
    raw = ((job.get("metadata") or {}).get("annotations") or {}).get(RETRY_ANNOTATION)
    if not raw:
        return None
    try:
        return RetryPlan.from_fields(json.loads(raw))
    except (ValueError, KeyError, TypeError):
        return None  # not ours to read: the job then reads as its Job says
