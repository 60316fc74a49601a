"""Records and API models of jobs (the REST API and the CLI's --json speak these)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainhub.jobs import limits
from trainhub.jobs.search import MAX_SEARCH_CHARS
from trainhub.jobs.sharing import Sharing
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import FailureClass, JobState


class Verdict(BaseModel):
    """How a job (or one attempt of it) ended badly, and the evidence for saying so."""

    failure_class: FailureClass
    reason: str  # one sentence for people
    retriable: bool = False
    rank: int | None = None
    cell_index: int | None = Field(
        None,
        description="The cell's position in the notebook from 0, markdown and raw cells "
        "counted; people read it as cell N from 1",
    )
    line: int | None = None
    exception: str | None = None
    message: str | None = None
    exit_code: int | None = None
    signal: str | None = None
    attempt: int = 0
    traceback: str | None = None  # the raising rank's traceback, as its cell printed it


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
    pipeline_run: str | None = None  # the pipeline run this job is a step of (spec.pipeline.run)
    # Editable after submission (JobEdit); the spec keeps the tags it was submitted with.
    tags: list[str] = Field(default_factory=list)
    note: str = ""
    # Who besides the owner may read it (trainhub.jobs.sharing): private, or the owner's team.
    shared: Sharing = Sharing.PRIVATE
    suspended_step: int | None = Field(
        None, description="While suspended: the checkpoint step it will resume after"
    )


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
    suspend_requested: bool = False

    @classmethod
    def of_spec(cls, spec: JobSpec, **fields: Any) -> JobRecord:
        """The record of a job of ``spec``: what the spec says of it (name, team, queue, the
        rank of its priority, GPUs, tags) with ``fields`` (id, user, state, ...) beside it, or
        in its place where a backend knows better (its own team and queue, edited tags)."""
        return cls(
            **{
                "name": spec.name,
                "team": spec.team,
                "queue": spec.queue,
                "priority": spec.priority.rank,
                "gpus": spec.resources.total_gpus,
                "tags": spec.tags,
                "spec": spec,
                **fields,
            }
        )

    @model_validator(mode="after")
    def _sweep_of_spec(self) -> JobRecord:
        # Derived, so every backend's record says it alike and the store can index it.
        self.sweep_id = self.spec.sweep.id if self.spec.sweep is not None else None
        self.pipeline_run = self.spec.pipeline.run if self.spec.pipeline is not None else None
        return self


class LatestScalar(BaseModel):
    """The last value a job logged of one training scalar."""

    name: str
    step: int
    value: float


class JobSummary(JobBase):
    """A row of the jobs list."""

    priority: str
    world_size: int
    wait_reason: str | None = None
    position: int | None = None  # queued jobs ahead of this one
    failure_class: FailureClass | None = None
    source: str  # notebook or script path
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="The parameters the job was given (spec.parameters)"
    )
    origin: str | None = Field(
        None, description="What it runs again, e.g. 'fork of train-1a2b at step 74'"
    )
    scalar: LatestScalar | None = Field(
        None, description="The latest value of the scalar the list was asked for (?scalar=)"
    )


class DataWait(BaseModel):
    """How much of the job's step time its ranks waited for data (their DataLoaders' wait,
    :mod:`trainhub.metrics.datawait`), and what to try when that dominates."""

    fraction: float | None = Field(description="Waiting share of the step time, all ranks")
    wait_s: float
    step_s: float
    ranks: dict[int, float | None] = Field(description="Each rank's own waiting share")
    num_workers: int | None = None
    pin_memory: bool | None = None
    advice: str | None = Field(None, description="The sentence shown when waiting dominates")


class DescribeJob(JobDetails, JobSummary):
    lineage: dict[str, Any] | None = None
    data_wait: DataWait | None = None
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
    pipeline_run: str | None = Field(None, description="Only the steps of this pipeline run")
    search: str | None = Field(
        None, max_length=MAX_SEARCH_CHARS, description="Words found in name, tags, note, parameters"
    )
    scalar: str | None = Field(
        None, max_length=200, description="Add each job's latest value of this scalar"
    )


class JobPage(BaseModel):
    jobs: list[JobSummary]
    next_before: int | None = None
    total: int


MAX_NOTE_CHARS = 2000


class JobEdit(BaseModel):
    """What may change of a job after submission: its tags, its note, and whether its team
    may read it (None: unchanged)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    tags: list[Annotated[str, Field(min_length=1, max_length=63)]] | None = None
    note: str | None = Field(None, max_length=MAX_NOTE_CHARS)
    shared: Sharing | None = Field(
        None, description="'team': the owner's team may read it (a hub with teams); 'private'"
    )

    @field_validator("tags")
    @classmethod
    def _few_tags(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        most = limits.current().tags
        if len(v) > most:
            raise ValueError(f"at most {most} tags")
        return list(dict.fromkeys(v))  # each once, in the order given
