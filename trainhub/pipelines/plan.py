"""Where a pipeline run stands and what it does next, from its record and its steps' jobs.
Pure: :func:`statuses` tells each step's status (and why it waits or did not run),
:func:`plan` the steps to start now and whether the run has ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from trainhub.jobs.models import JobRecord
from trainhub.jobs.states import JobState
from trainhub.pipelines.graph import dependencies, order
from trainhub.pipelines.records import RunRecord, RunState


class StepStatus(StrEnum):
    WAITING = "waiting"  # for the steps it depends on
    READY = "ready"  # its steps are done; it starts at the next advance
    ACTIVE = "active"  # its job is queued, starting or running (or being submitted)
    SUCCEEDED = "succeeded"
    REUSED = "reused"  # an earlier job's outputs stand for it (the cache)
    FAILED = "failed"
    CANCELLED = "cancelled"
    NOT_RUN = "not_run"  # a step it depends on failed or was cancelled

    @property
    def done(self) -> bool:
        return self in (StepStatus.SUCCEEDED, StepStatus.REUSED)

    @property
    def stopped(self) -> bool:
        return self in (StepStatus.FAILED, StepStatus.CANCELLED, StepStatus.NOT_RUN)


@dataclass(frozen=True)
class Status:
    status: StepStatus
    reason: str | None = None
    job: JobRecord | None = None


@dataclass
class Advance:
    """What one advance does: the steps to start, and the run's end (None: it goes on)."""

    start: list[str] = field(default_factory=list)
    ended: RunState | None = None


def statuses(run: RunRecord, jobs: Mapping[str, JobRecord]) -> dict[str, Status]:
    """Each step's status in the order the steps can run, with the sentence a person reads:
    why it waits, how it failed, which step kept it from running."""
    deps = dependencies(run.pipeline)
    result: dict[str, Status] = {}
    for name in order(run.pipeline):
        attempt = run.steps.get(name)
        if attempt is not None:
            result[name] = _of_attempt(attempt.job_id, attempt.reused_from, attempt.error, jobs)
            continue
        ups = sorted(deps[name])
        stopped = [u for u in ups if result[u].status.stopped]
        if stopped:
            what = "failed" if result[stopped[0]].status == StepStatus.FAILED else "did not finish"
            result[name] = Status(StepStatus.NOT_RUN, f"not run: step {stopped[0]} {what}")
        elif all(result[u].status.done for u in ups):
            result[name] = Status(StepStatus.READY)
        else:
            waiting = [u for u in ups if not result[u].status.done]
            result[name] = Status(StepStatus.WAITING, f"waits for {', '.join(waiting)}")
    return result


def _of_attempt(
    job_id: str | None, reused_from: str | None, error: str | None, jobs: Mapping[str, JobRecord]
) -> Status:
    if reused_from is not None:
        return Status(StepStatus.REUSED, f"reused from {reused_from}", jobs.get(reused_from))
    if error is not None:
        return Status(StepStatus.FAILED, error)
    if job_id is None:
        return Status(StepStatus.ACTIVE, "being submitted")
    job = jobs.get(job_id)
    if job is None:  # submitted, not listed yet (a cluster's cache): as a sweep's trial counts
        return Status(StepStatus.ACTIVE, f"job {job_id} submitted")
    if job.state == JobState.SUCCEEDED:
        return Status(StepStatus.SUCCEEDED, job=job)
    if job.state == JobState.FAILED:
        reason = job.verdict.reason if job.verdict is not None else "its job failed"
        return Status(StepStatus.FAILED, reason, job)
    if job.state == JobState.CANCELLED:
        reason = job.cancel_reason or (job.verdict.reason if job.verdict else "cancelled")
        return Status(StepStatus.CANCELLED, reason, job)
    return Status(StepStatus.ACTIVE, job=job)


def plan(run: RunRecord, jobs: Mapping[str, JobRecord]) -> Advance:
    """The steps to start now (every step whose upstream steps are done: they run side by
    side, the backend's queue and quota deciding when each starts), and the run's end once no
    step is active or can still start."""
    now = statuses(run, jobs)
    advance = Advance(start=[n for n, s in now.items() if s.status == StepStatus.READY])
    going = any(s.status in (StepStatus.ACTIVE, StepStatus.READY) for s in now.values())
    if not going:
        done = all(s.status.done for s in now.values())
        advance.ended = RunState.SUCCEEDED if done else RunState.FAILED
    return advance
