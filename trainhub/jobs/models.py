"""Records and API models of jobs (the REST API and the CLI's --json speak these)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import FailureClass, JobState


class Verdict(BaseModel):
    """How a job (or one attempt of it) ended badly, and the evidence for saying so."""

    failure_class: FailureClass
    reason: str  # one sentence for people
    retriable: bool = False
    rank: int | None = None
    cell_index: int | None = None
    line: int | None = None
    exception: str | None = None
    message: str | None = None
    exit_code: int | None = None
    signal: str | None = None
    attempt: int = 0


class JobBase(BaseModel):
    """What a job's record and every view of it say alike: which job, whose, where it stands."""

    id: str
    name: str
    user: str
    state: JobState
    team: str | None = None
    queue: str | None = None
    gpus: int
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    attempt: int = 0
    seq: int | None = None  # submission order; page with ListJobsQuery.before
    sweep_id: str | None = None  # the sweep this job is a trial of (spec.sweep.id)


class JobDetails(BaseModel):
    """What a job's record and its description say alike beyond the basics."""

    spec: JobSpec
    job_dir: str
    assigned_gpus: list[int] = Field(default_factory=list)
    verdict: Verdict | None = None
    retries: dict[str, int] = Field(default_factory=dict)  # failure class -> retries used
    resubmitted_from: str | None = None


class JobRecord(JobDetails, JobBase):
    """A job as its backend keeps it. Backend-neutral: what only one backend needs (the local
    backend's processes and CPU slots) that backend keeps itself."""

    model_config = ConfigDict(extra="forbid")

    priority: int  # the rank of spec.priority, so that queues order by it
    admitted_at: float | None = None
    cancel_requested: bool = False
    cancel_reason: str | None = None

    @model_validator(mode="after")
    def _sweep_of_spec(self) -> JobRecord:
        # Derived, so every backend's record says it alike and the store can index it.
        self.sweep_id = self.spec.sweep.id if self.spec.sweep is not None else None
        return self


class JobSummary(JobBase):
    """A row of the jobs list."""

    priority: str
    world_size: int
    wait_reason: str | None = None
    position: int | None = None  # queued jobs ahead of this one
    failure_class: FailureClass | None = None
    source: str  # notebook or script path


class DescribeJob(JobDetails, JobSummary):
    lineage: dict[str, Any] | None = None
    timeline: list[dict[str, Any]] = Field(default_factory=list)


def fields_of(model: BaseModel, part: type[BaseModel]) -> dict[str, Any]:
    """``model``'s values of the fields that ``part`` declares, as they are (not re-validated)."""
    return {name: getattr(model, name) for name in part.model_fields}


class ListJobsQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    states: list[JobState] | None = None
    limit: int = Field(50, ge=1, le=500)
    before: int | None = Field(None, description="Return jobs submitted before this seq (paging)")
    sweep: str | None = Field(None, description="Only the trials of this sweep")


class JobPage(BaseModel):
    jobs: list[JobSummary]
    next_before: int | None = None
    total: int
