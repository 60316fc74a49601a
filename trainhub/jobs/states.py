"""Job states and failure classes: the vocabulary every backend, the API and the UI share."""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    QUEUED = "queued"  # waiting for admission (local queue or Kueue)
    STARTING = "starting"  # admitted; processes or pods are being launched
    RUNNING = "running"
    RETRYING = "retrying"  # an attempt failed for a retriable reason; waiting out the backoff
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    # Stopped on request with its progress saved, its resources given back; `resume` queues
    # it again (same id, next attempt) and it continues from its latest checkpoint.
    SUSPENDED = "suspended"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES

    @property
    def active(self) -> bool:
        """Holds admitted resources."""
        return self in (JobState.STARTING, JobState.RUNNING, JobState.RETRYING)


TERMINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})


class FailureClass(StrEnum):
    """Why an attempt ended badly; decides whether it is retried."""

    CODE = "code"  # an exception raised by the user's own cell or script
    ENVIRONMENT = "environment"  # missing module, CUDA/driver mismatch, bad image, pip failure
    INFRASTRUCTURE = (
        "infrastructure"  # killed (OOM, node loss), NCCL/rendezvous timeout, lost supervisor
    )
    PREEMPTED = "preempted"  # evicted to make room for more important work
    CANCELLED = "cancelled"  # a person asked for it, or the max runtime ran out
    STOPPED_EARLY = "stopped_early"  # a sweep's early-stopping rule ended a lagging trial
