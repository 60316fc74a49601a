"""Durable pipeline runs: the pipeline as it was read, its parameters, the workspace frozen for
its steps, and which step became which job (or reused which earlier job's outputs).

Kept as sweeps are (trainhub.jobs.records): a ``pipelines`` table in the local store,
``.pipelines/<id>.json`` in a cluster team's jobs root, every change under an exclusive lock;
the frozen workspace in ``.pipelines/<id>/`` (trainhub.bundle.snapshot).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from trainhub.bundle.snapshot import Frozen
from trainhub.jobs.records import Record, Records, records_for, records_home
from trainhub.jobs.sharing import Sharing
from trainhub.pipelines.spec import Pipeline

KIND = "pipelines"  # the store's table; the folder .pipelines in a jobs root


class RunState(StrEnum):
    RUNNING = "running"  # steps left to run, or steps still active
    SUCCEEDED = "succeeded"  # every step succeeded or reused an earlier result
    FAILED = "failed"  # a step failed; the steps after it did not run
    CANCELLED = "cancelled"


class StepRun(BaseModel):
    """One step's attempt in a run: the job it became, or the earlier job whose outputs it
    reuses, or why it did not start. A claim (trainhub.jobs.records) until its job is noted."""

    step: str
    job_id: str | None = None
    reused_from: str | None = None  # a cache hit: that job's outputs stand for this step's
    cache_key: str | None = None
    error: str | None = None  # refused before it was a job: this sentence
    claimed_at: float | None = None
    retry: int = 0  # the run's retry it belongs to (0: the first run)


class RunRecord(Record):
    name: str  # the pipeline's
    file: str | None = None  # the pipeline file, relative to the workspace, when run from one
    pipeline: Pipeline
    parameters: dict[str, Any] = Field(default_factory=dict)  # the run's, defaults filled in
    cache: bool = True  # False: every step runs, none reuses an earlier result
    team: str | None = None
    state: RunState = RunState.RUNNING
    steps: dict[str, StepRun] = Field(default_factory=dict)  # each step's latest attempt
    earlier: list[StepRun] = Field(default_factory=list)  # attempts a retry replaced
    retries: int = 0
    finished_at: float | None = None
    cancel_reason: str | None = None
    shared: Sharing = Sharing.PRIVATE
    source: Frozen | None = None  # the workspace every step compiles from
    tag: str | None = None  # who started it, to find it again (a schedule's run)
    started_from: str | None = None  # the run it runs again (a teammate's shared one)


RunRecords = Records[RunRecord]


def runs_home(backend: Any) -> Path:
    """The folder of pipeline runs in ``backend``'s jobs root: their frozen workspaces, and on
    a cluster their records."""
    return records_home(backend, KIND)


def runs_for(backend: Any) -> RunRecords:
    return records_for(backend, KIND, RunRecord)
