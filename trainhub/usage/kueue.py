"""Kueue's Workload → the times a usage row needs (pure; the Workload as a dict).

Kueue writes them as status conditions: ``Admitted`` turns True when the workload got its
quota and passed its admission checks (after an eviction it turns False, and True again on
the next admission), ``Finished`` turns True once the Job ended. Each condition's
``lastTransitionTime`` says when.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class WorkloadTimes:
    created_at: float | None = None
    admitted_at: float | None = None  # the latest admission; None while not admitted
    finished_at: float | None = None


def timestamp(value: Any) -> float | None:
    """Epoch seconds of a Kubernetes timestamp (RFC 3339, ``Z`` or an offset); None when
    absent or not a time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _true_since(workload: dict[str, Any], type_: str) -> float | None:
    for c in (workload.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == type_:
            return timestamp(c.get("lastTransitionTime")) if c.get("status") == "True" else None
    return None


def workload_times(workload: dict[str, Any] | None) -> WorkloadTimes:
    if not workload:
        return WorkloadTimes()
    finished = _true_since(workload, "Finished")
    admitted = _true_since(workload, "Admitted")
    if admitted is None:
        # Admission checks still pending, or Admitted already reset as the workload ended:
        # the quota reservation is the best word on when it got its resources.
        reserved = _true_since(workload, "QuotaReserved")
        if reserved is not None and (finished is None or reserved <= finished):
            admitted = reserved
    return WorkloadTimes(
        created_at=timestamp((workload.get("metadata") or {}).get("creationTimestamp")),
        admitted_at=admitted,
        finished_at=finished,
    )
