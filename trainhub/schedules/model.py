"""What a schedule is: the request that creates one, the record kept of it, and its runs.

A schedule's target is a tagged union on ``kind``: a notebook job spec (the spec a submit
takes), or a pipeline file of the workspace with its parameters (what a pipeline run takes).
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from trainhub.bundle.snapshot import Frozen
from trainhub.jobs.naming import MAX_NAME_LENGTH
from trainhub.jobs.quantities import parse_duration
from trainhub.jobs.records import RUNNING, Record
from trainhub.jobs.spec import JobSpec, explain
from trainhub.jobs.specparts import NAME_PATTERN, Model
from trainhub.pipelines.spec import Pipeline
from trainhub.schedules import cron


class Concurrency(StrEnum):
    """What a due time does while an earlier run is active, as Kubernetes CronJob's
    ``concurrencyPolicy``."""

    FORBID = "forbid"  # the new time is skipped
    ALLOW = "allow"  # both run
    REPLACE = "replace"  # the active runs are cancelled, then the new one starts


class Missed(StrEnum):
    """What times that passed while nothing could fire them (the machine or the scheduler
    was down) do once it is back."""

    RUN_ONCE = "run-once"  # the latest of them fires once (CronJob's behaviour)
    SKIP = "skip"  # none fires; each is noted as skipped


class NotebookTarget(Model):
    kind: Literal["notebook"] = "notebook"
    job: JobSpec


class PipelineTarget(Model):
    kind: Literal["pipeline"] = "pipeline"
    file: str = Field(
        min_length=1,
        pattern=r"\.pipeline\.ya?ml$",
        description="A pipeline file, relative to the workspace",
    )
    parameters: dict[str, Any] = Field(default_factory=dict)
    cache: bool = Field(True, description="False: every step runs, none reuses a result")


Target = Annotated[NotebookTarget | PipelineTarget, Field(discriminator="kind")]


def is_pipeline_file(source: str) -> bool:
    """Whether a schedule of ``source`` runs a pipeline (else a notebook or script job)."""
    return source.endswith((".pipeline.yaml", ".pipeline.yml"))


# A time that fires later than this after it is due counts as missed (the scheduler was not
# running then), unless the schedule's starting deadline is longer.
ON_TIME_SECONDS = 60.0


class CreateSchedule(Model):
    """A schedule as asked for (CLI, REST, Python API)."""

    name: str = Field(min_length=1, max_length=MAX_NAME_LENGTH - 8, pattern=NAME_PATTERN)
    target: Target
    cron: str = Field(description="Five fields: minute hour day-of-month month day-of-week")
    timezone: str = Field("UTC", description="An IANA time zone, such as Europe/Berlin")
    concurrency: Concurrency = Concurrency.FORBID
    missed: Missed = Missed.RUN_ONCE
    starting_deadline: Annotated[timedelta | None, Field(description="As CronJob's")] = None
    paused: bool = False
    notify_failure: bool = Field(
        True, description="Announce a failed or refused run through the owner's alert channels"
    )

    @field_validator("cron")
    @classmethod
    def _cron(cls, v: str) -> str:
        return cron.check(" ".join(v.split()))

    @field_validator("timezone")
    @classmethod
    def _zone(cls, v: str) -> str:
        cron.zone(v)
        return v

    @field_validator("starting_deadline", mode="before")
    @classmethod
    def _deadline(cls, v: Any) -> timedelta | None:
        d = parse_duration(v)
        if d is not None and d.total_seconds() < 1:
            raise ValueError("at least one second")
        return d

    @property
    def deadline_seconds(self) -> float | None:
        return None if self.starting_deadline is None else self.starting_deadline.total_seconds()


def parse_schedule(data: dict[str, Any]) -> CreateSchedule:
    """A schedule from JSON-like data; SpecError naming each bad field."""
    try:
        return CreateSchedule.model_validate(data)
    except ValidationError as e:
        error = explain(e)
    for err in error.errors:  # explain() words a job source's kinds
        if err.field == "target" and err.message.startswith("kind must"):
            err.field, err.message = "target.kind", "kind must be 'notebook' or 'pipeline'"
    raise error


class RunState(StrEnum):
    CLAIMED = "claimed"  # being submitted
    SUBMITTED = "submitted"  # a job or a pipeline run; its outcome is theirs
    SKIPPED = "skipped"  # not run: ``reason`` says why
    REFUSED = "refused"  # the submit was refused: ``reason`` says why


class Run(Model):
    """One time the schedule fired or chose not to."""

    at: float | None = Field(description="The scheduled time (POSIX seconds); None: run now")
    state: RunState
    reason: str | None = None
    job_id: str | None = None
    pipeline_run: str | None = None  # a pipeline target's run
    claimed_at: float | None = None
    claimed_by: str | None = None  # the claiming process (trainhub.jobs.claims)
    outcome: str | None = None  # the job's (or pipeline run's) final state, once it ended
    announced: bool = False  # its failure went to the alerts


class ScheduleRecord(Record):
    """A schedule as kept (trainhub.jobs.records): a record of a kind that is deleted, never
    ends, so always in the state that may act (``running``; paused is the request's)."""

    model_config = ConfigDict(extra="forbid")

    team: str | None = None
    request: CreateSchedule
    state: Literal["running"] = RUNNING
    # The last scheduled time dealt with (fired, claimed or skipped); the next is after it.
    last_at: float | None = None
    runs: list[Run] = Field(default_factory=list)
    source: Frozen | None = None  # the workspace frozen at creation
    pipeline: Pipeline | None = None  # a pipeline target's file, as read at creation

    @property
    def since(self) -> float:
        """Due times after this are the schedule's to deal with."""
        return self.created_at if self.last_at is None else self.last_at


def run_tag(schedule_id: str, run: Run) -> str:
    """The tag that finds a run's job or pipeline run again (a claim whose submitter died):
    the schedule and the run's time, or for a run now the second it was asked (at most 60
    characters)."""
    when = f"{run.at:.0f}" if run.at is not None else f"n{run.claimed_at or 0:.0f}"
    return f"schedule:{schedule_id}@{when}"
