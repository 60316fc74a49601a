"""What each endpoint takes and answers beyond the job models, as pydantic models (the OpenAPI
document is generated from them), the config endpoint's answer and the dry run of a submit."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from annotated_types import Le
from pydantic import BaseModel, ConfigDict, Field, field_validator

from trainhub.backends.base import Backend
from trainhub.backends.capabilities import OneMachine
from trainhub.checkpoint.layout import CheckpointInfo
from trainhub.jobs import limits as job_limits
from trainhub.jobs.search import MAX_SEARCH_CHARS
from trainhub.jobs.service import JobService
from trainhub.jobs.sharing import Sharing
from trainhub.jobs.spec import FieldError
from trainhub.jobs.specparts import Resources
from trainhub.jobs.states import JobState
from trainhub.metrics.gpushare import SessionGpu, session_gpu
from trainhub.usage.models import DEFAULT_SINCE, Since, UsageBy
from trainhub_server.base import MAX_INTEGER

LOG_CHUNK_DEFAULT = 1 << 20
LOG_CHUNK_MOST = 16 << 20


class Query(BaseModel):
    """Query parameters: each field is one parameter, named as in the URL; those in
    ``repeated`` may be given more than once (``?state=a&state=b``)."""

    model_config = ConfigDict(extra="ignore")
    repeated: ClassVar[frozenset[str]] = frozenset()


class ListJobsParams(Query):
    repeated = frozenset({"state"})

    state: list[JobState] | None = Field(None, description="Only jobs in these states")
    limit: int = Field(50, ge=1, le=500)
    before: int | None = Field(
        None, ge=0, le=MAX_INTEGER, description="seq to page from (next_before of a page)"
    )
    q: str | None = Field(
        None,
        max_length=MAX_SEARCH_CHARS,
        description="Only jobs whose name, tags, note or parameters (name=value) hold every "
        "word of this",
    )
    scalar: str | None = Field(
        None, max_length=200, description="Add each job's latest value of this training scalar"
    )
    sweep: str | None = Field(None, max_length=63, description="Only the trials of this sweep")
    pipeline_run: str | None = Field(
        None, max_length=63, description="Only the steps of this pipeline run"
    )


class UsageParams(Query):
    since: Since = DEFAULT_SINCE
    by: UsageBy = Field(
        UsageBy.USER,
        description="Group by user, team, pool or UTC day. The signed-in user's own jobs; "
        "by team, the totals of the user's own team",
    )


class CompareParams(Query):
    repeated = frozenset({"goal"})

    ids: str = Field(
        min_length=1, max_length=2000, description="2 to 10 of the user's job ids, comma-separated"
    )
    goal: list[str] | None = Field(
        None,
        description="NAME:min or NAME:max: whether a scalar's best is its smallest or largest "
        "value (by default min for names with loss, err, perplexity, mse, mae, nll, wer or cer)",
    )
    scalars: bool = Field(
        True, description="Read the training scalars (false: a quick answer without them)"
    )
    series: bool = Field(True, description="Add each job's curve of every scalar")
    points: int | None = Field(
        None, ge=4, le=1_000_000, description="Downsample each curve to at most this many points"
    )


class SubmitParams(Query):
    dry_run: bool = Field(False, description="Only validate: spec, paths, capacity, bundle")


class StreamParams(Query):
    offset: int = Field(0, ge=0, le=MAX_INTEGER, description="Byte offset to read from")


class RecordsParams(StreamParams):
    limit: int | None = Field(None, ge=1, le=MAX_INTEGER, description="At most this many")


class LogParams(StreamParams):
    length: int = Field(
        LOG_CHUNK_DEFAULT,
        ge=1,
        le=MAX_INTEGER,
        description=f"Bytes to read at most (more than {LOG_CHUNK_MOST} reads {LOG_CHUNK_MOST})",
    )


class NotebookRankParams(Query):
    rank: int = Field(0, ge=0, le=MAX_INTEGER, description="Whose executed notebook: rank 0's")


class OutputFileParams(Query):
    path: str = Field(
        min_length=1,
        max_length=4096,
        description="The file, relative to the job's outputs directory ('/' separated)",
    )


class ExecutedNotebook(BaseModel):
    """A rank's executed notebook, nbformat 4: the cells it ran with their outputs (each cell's
    metadata.trainhub: cell_index in the submitted notebook, status, seconds)."""

    model_config = ConfigDict(extra="allow")

    cells: list[dict[str, Any]]
    metadata: dict[str, Any]
    nbformat: int
    nbformat_minor: int


class NotebookParams(Query):
    path: str = Field(min_length=1, description="Notebook path relative to the server root")


class CancelRequest(BaseModel):
    reason: str | None = Field(
        None,
        json_schema_extra={"maxLength": job_limits.Limits().reason_chars},  # by default
        description="Why, in a sentence, kept with the job",
    )

    @field_validator("reason")
    @classmethod
    def _short(cls, v: str | None) -> str | None:
        most = job_limits.current().reason_chars  # the limit in force, which an admin may set
        if v is not None and len(v) > most:
            raise ValueError(f"must be at most {most} characters")
        return v


class ShareRequest(BaseModel):
    """The body of a pipeline run's change: whether the owner's team may read it."""

    model_config = ConfigDict(extra="forbid")

    shared: Sharing = Field(description="'team': the owner's team may read it; 'private'")


class ChangeRequest(BaseModel):
    """The body of a resubmit or a fork: JobSpec fields to change (top-level keys replace)."""

    overrides: dict[str, Any] | None = Field(None, description="JobSpec fields to change")


class Error(BaseModel):
    """Every 4xx and 5xx answer; a validation error (400) names each bad field."""

    message: str
    errors: list[FieldError] = Field(default_factory=list)


class ConfigLimits(BaseModel):
    model_config = ConfigDict(extra="allow")  # an admin's limits may add keys

    max_workers: int
    max_processes_per_worker: int
    max_gpus_per_worker: int


class ServerConfig(BaseModel):
    backend: str
    features: list[str]
    images: list[dict[str, Any]]
    teams: list[dict[str, Any]] = Field(
        description="{name, queues, gpu_shares}: gpu_shares lists the shares of a GPU the "
        'team\'s pools offer a job, [{share: "1/4", queue, label}] (none: whole GPUs only)'
    )
    limits: ConfigLimits
    user: str
    allow_pip: bool
    session_gpu: SessionGpu | None = Field(
        None, description="The share of a GPU this session holds (trainhub/metrics/gpushare.py)"
    )


class DryRun(BaseModel):
    valid: Literal[True] = True
    warnings: list[str] = Field(
        default_factory=list, description="What the submit would note without refusing"
    )


class EventPage(BaseModel):
    events: list[dict[str, Any]]
    next_offset: int


class LogRanks(BaseModel):
    ranks: list[int]


class LogChunk(BaseModel):
    text: str = Field(description="Whole UTF-8 characters, cut back to a line when full")
    offset: int
    next_offset: int


class MetricPage(BaseModel):
    records: list[dict[str, Any]]
    next_offset: int


class CheckpointList(BaseModel):
    checkpoints: list[CheckpointInfo] = Field(description="Complete checkpoints, oldest first")


class NotebookParameters(BaseModel):
    parameters: dict[str, Any] = Field(
        description="name -> JSON value, or its source text when it is not a JSON literal"
    )
    cell_index: int | None
    source_text: list[str] = Field(description="Names whose value is source text")
    texts: dict[str, str] = Field(
        default_factory=dict, description="name -> its value's source text, as the cell has it"
    )


LIMIT_FIELDS = {
    "max_workers": "workers",
    "max_processes_per_worker": "processes_per_worker",
    "max_gpus_per_worker": "gpus_per_worker",
}


def spec_upper_bound(field: str) -> int:
    """The ``le=`` bound the JobSpec puts on a Resources field."""
    for item in Resources.model_fields[field].metadata:
        if isinstance(item, Le):
            return int(item.le)
    raise LookupError(f"Resources.{field} has no upper bound")


def backend_limits(backend: Backend) -> dict[str, int]:
    """The most a job may ask for: the spec's bounds, narrowed to the machine when it is known."""
    limits = {key: spec_upper_bound(field) for key, field in LIMIT_FIELDS.items()}
    if isinstance(backend, OneMachine):  # the local backend knows its machine
        capacity = backend.capacity()
        limits["max_workers"] = min(limits["max_workers"], capacity.slots)
        limits["max_processes_per_worker"] = min(limits["max_processes_per_worker"], capacity.slots)
        limits["max_gpus_per_worker"] = min(limits["max_gpus_per_worker"], len(capacity.gpus))
    return limits


def config_payload(
    backend: Backend,
    *,
    user: str,
    allow_pip: bool,
    images: list[dict[str, Any]],
    teams: list[dict[str, Any]],
    limits: dict[str, int],
) -> dict[str, Any]:
    catalog = backend.catalog()  # a cluster's teams file, unless the admin configured a list
    share = session_gpu()
    return {
        "backend": backend.name,
        "features": sorted(f.value for f in backend.features),
        "images": images or catalog["images"],
        "teams": teams or catalog["teams"],
        "limits": {**backend_limits(backend), **limits},
        "user": user,
        "allow_pip": allow_pip,
        "session_gpu": None if share is None else share.model_dump(mode="json"),
    }


def dry_run(service: JobService, body: dict[str, Any], *, user: str) -> DryRun:
    """Everything a submit checks, without making a job."""
    return DryRun(warnings=service.validate(body, user=user))
