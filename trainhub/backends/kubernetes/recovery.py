"""How the Kubernetes backend keeps the retry of an attempt that ended badly: pure, no I/O.

Failures: the Job controller cannot tell failure classes apart, so the Job has
``backoffLimit: 0`` and trainhub retries, with the policy the local supervisor applies
(:mod:`trainhub.lifecycle.retry`). A failed attempt whose class the job's retry policy still
allows gets a :class:`~trainhub.lifecycle.retry.RetryPlan`: it is written as the job's
``retry`` event and as an annotation on the failed Job (which then reads as ``retrying``);
once its backoff has passed, reconcile replaces that Job by the next attempt's, whose pods get
``TRAINHUB_ATTEMPT`` one higher and ``TRAINHUB_RESUME_FROM`` naming the checkpoint it resumes
from (:mod:`trainhub.lifecycle.resume`).

Preemption stays Kueue's: it suspends the Job (its pods get SIGTERM and the grace period in
which the ranks' ``trainhub.checkpoint.on_stop`` callbacks save), requeues the Workload and
unsuspends the Job when it is admitted again; the new pods resume from that checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trainhub.lifecycle.retry import RetryPlan

# On a failed Job: the plan of the attempt that replaces it (JSON of a RetryPlan).
RETRY_ANNOTATION = "trainhub.io/retry"


def retry_annotation(plan: RetryPlan) -> dict[str, Any]:
    """The patch that marks a failed Job for its next attempt."""
    return {"metadata": {"annotations": {RETRY_ANNOTATION: plan.to_json()}}}


def pending_retry(job: Mapping[str, Any]) -> RetryPlan | None:
    """The plan a failed Job carries, once trainhub decided to retry it."""
    raw = ((job.get("metadata") or {}).get("annotations") or {}).get(RETRY_ANNOTATION)
    if not raw:
        return None
    try:
        return RetryPlan.from_fields(json.loads(raw))
    except (ValueError, KeyError, TypeError):
        return None  # not ours to read: the job then reads as its Job says
