"""Records and API models of jobs (the REST API and the CLI's --json speak these)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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


class JobRecord(BaseModel):
    """One row of the local store."""

    model_config = ConfigDict(extra="ignore")

    seq: int | None = None
    id: str
    name: str
    user: str
    team: str | None = None
    queue: str | None = None
    priority: int
    state: JobState
    spec: JobSpec
    job_dir: str
    gpus: int
    slots: int
    assigned_gpus: list[int] = Field(default_factory=list)
    created_at: float
    admitted_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    attempt: int = 0
    retries: dict[str, int] = Field(default_factory=dict)
    verdict: Verdict | None = None
    supervisor_pid: int | None = None
    supervisor_start: float | None = None
    process_groups: list[int] = Field(default_factory=list)
    cancel_requested: bool = False
    cancel_reason: str | None = None
    resubmitted_from: str | None = None


class JobSummary(BaseModel):
    """A row of the jobs list."""

    id: str
    name: str
    user: str
    state: JobState
    priority: str
    team: str | None = None
    queue: str | None = None
    gpus: int
    world_size: int
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    attempt: int = 0
    wait_reason: str | None = None
    position: int | None = None  # queued jobs ahead of this one
    failure_class: FailureClass | None = None
    source: str  # notebook or script path
    seq: int | None = None  # submission order; page with ListJobsQuery.before


class DescribeJob(JobSummary):
    spec: JobSpec
    job_dir: str
    assigned_gpus: list[int] = Field(default_factory=list)
    verdict: Verdict | None = None
    retries: dict[str, int] = Field(default_factory=dict)
    lineage: dict[str, Any] | None = None
    timeline: list[dict[str, Any]] = Field(default_factory=list)
    resubmitted_from: str | None = None


class ListJobsQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    states: list[JobState] | None = None
    limit: int = Field(50, ge=1, le=500)
    before: int | None = Field(None, description="Return jobs submitted before this seq (paging)")


class JobPage(BaseModel):
    jobs: list[JobSummary]
    next_before: int | None = None
    total: int
