"""What the API and the CLI say of a pipeline run: each step's status with its job, and which
steps reused an earlier result. Built by pure functions from the run's record and its steps'
statuses (trainhub.pipelines.plan)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainhub.jobs.sharing import Sharing
from trainhub.jobs.states import FailureClass, JobState
from trainhub.pipelines.graph import dependencies
from trainhub.pipelines.plan import Status, StepStatus
from trainhub.pipelines.records import RunRecord, RunState
from trainhub.pipelines.spec import Pipeline


class StepView(BaseModel):
    step: str
    status: StepStatus
    reason: str | None = Field(
        None, description="Why it waits or did not run, how it failed, whose result it reuses"
    )
    depends_on: list[str] = Field(default_factory=list, description="Its upstream steps")
    job_id: str | None = None
    reused_from: str | None = Field(None, description="The earlier job whose outputs it reuses")
    job_state: JobState | None = None
    failure_class: FailureClass | None = None
    started_at: float | None = None
    finished_at: float | None = None
    retry: int = Field(0, description="The run's retry this attempt belongs to")


class RunSummary(BaseModel):
    id: str
    name: str
    user: str
    file: str | None = None
    state: RunState
    created_at: float
    finished_at: float | None = None
    steps: int
    succeeded: int
    reused: list[str] = Field(default_factory=list, description="The steps that reused results")
    failed: list[str] = Field(default_factory=list, description="The steps that failed")
    retries: int = 0
    shared: Sharing = Sharing.PRIVATE
    started_from: str | None = Field(None, description="The run this one runs again")


class DescribeRun(RunSummary):
    parameters: dict[str, Any] = Field(default_factory=dict)
    cache: bool = True
    cancel_reason: str | None = None
    step_views: list[StepView] = Field(default_factory=list)
    pipeline: Pipeline


class RunList(BaseModel):
    runs: list[RunSummary]


class StartRun(BaseModel):
    """``POST pipelines/runs``: a pipeline file of the workspace, the pipeline itself, or
    an earlier run (one's own, or a teammate's shared one) to run again as one's own."""

    model_config = ConfigDict(extra="forbid")

    file: str | None = Field(None, description="A *.pipeline.yaml, relative to the workspace")
    pipeline: dict[str, Any] | None = Field(None, description="The pipeline, as the file says it")
    from_run: str | None = Field(
        None, description="A run to run again as one's own: its pipeline, code and parameters"
    )
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="Over its defaults (or over from_run's parameters)"
    )
    cache: bool = Field(True, description="False: every step runs, none reuses a result")

    @model_validator(mode="after")
    def _one_pipeline(self) -> StartRun:
        if self.from_run is not None and (self.file is not None or self.pipeline is not None):
            raise ValueError("from_run runs an earlier run again: send no file or pipeline too")
        return self


def summarize(run: RunRecord, now: Mapping[str, Status]) -> RunSummary:
    return RunSummary(**_summary_fields(run, now))


def _summary_fields(run: RunRecord, now: Mapping[str, Status]) -> dict[str, Any]:
    return {
        "id": run.id,
        "name": run.name,
        "user": run.user,
        "file": run.file,
        "state": run.state,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "steps": len(now),
        "succeeded": sum(1 for s in now.values() if s.status.done),
        "reused": [n for n, s in now.items() if s.status == StepStatus.REUSED],
        "failed": [n for n, s in now.items() if s.status == StepStatus.FAILED],
        "retries": run.retries,
        "shared": run.shared,
        "started_from": run.started_from,
    }


def describe(run: RunRecord, now: Mapping[str, Status]) -> DescribeRun:
    deps = dependencies(run.pipeline)
    views = []
    for name, status in now.items():
        attempt = run.steps.get(name)
        job = status.job
        views.append(
            StepView(
                step=name,
                status=status.status,
                reason=status.reason,
                depends_on=sorted(deps[name]),
                job_id=attempt.job_id if attempt else None,
                reused_from=attempt.reused_from if attempt else None,
                job_state=job.state if job is not None else None,
                failure_class=job.verdict.failure_class if job and job.verdict else None,
                started_at=job.started_at if job is not None else None,
                finished_at=job.finished_at if job is not None else None,
                retry=attempt.retry if attempt else run.retries,
            )
        )
    return DescribeRun(
        **_summary_fields(run, now),
        parameters=run.parameters,
        cache=run.cache,
        cancel_reason=run.cancel_reason,
        step_views=views,
        pipeline=run.pipeline,
    )
