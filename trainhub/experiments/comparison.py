"""The answer of a comparison of runs (:func:`trainhub.experiments.compare.compare`): the
models every front door returns and the OpenAPI document describes. One value per job in each
row, in the order the jobs were asked for."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from trainhub.jobs.models import Verdict
from trainhub.jobs.states import FailureClass, JobState

Goal = Literal["min", "max"]


class Row(BaseModel):
    """One property of every job: ``values[i]`` is job i's (null where it has none)."""

    name: str
    values: list[Any]
    differs: bool


class Point(BaseModel):
    step: int
    value: float
    time: float = Field(description="Seconds since the job started")


class ScalarRow(BaseModel):
    """The last and best value of one training scalar in each job (null where it has none)."""

    name: str
    goal: Goal = Field(description="min: the smallest value is best; max: the largest")
    last: list[Point | None]
    best: list[Point | None]
    best_job: str | None = Field(None, description="The job with the best of the best values")


class Series(BaseModel):
    """One job's curve of one scalar: ``[step, seconds since the job started, value]``."""

    name: str
    job_id: str
    points: list[tuple[int, float, float]]
    total: int = Field(description="Points before downsampling")


class CellChange(BaseModel):
    change: Literal["changed", "added", "removed"]
    before: int | None = Field(description="The baseline's cell index (0-based)")
    after: int | None = Field(description="This job's cell index (0-based)")
    diff: str = Field(description="Unified diff text (never HTML)")


class CodeDiff(BaseModel):
    """The code one job ran against the baseline's, cell by cell."""

    job_id: str
    against: str
    identical: bool
    changes: list[CellChange] = Field(default_factory=list)
    truncated: bool = False
    note: str | None = Field(None, description="Why the code could not be compared")


class ComparedJob(BaseModel):
    id: str
    name: str
    state: JobState
    failure_class: FailureClass | None = None
    verdict: Verdict | None = None
    source: str
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    elapsed_s: float | None = Field(None, description="Running time; null if it never started")
    attempts: int
    notes: list[str] = Field(default_factory=list, description="What could not be read")


class Comparison(BaseModel):
    jobs: list[ComparedJob]
    parameters: list[Row]
    lineage: list[Row]
    packages: list[Row] = Field(description="Only the packages whose versions differ")
    packages_same: int = Field(description="Packages installed alike in every job")
    datasets: list[Row]
    resources: list[Row]
    outcome: list[Row]
    code: list[CodeDiff]
    scalars: list[ScalarRow]
    series: list[Series] = Field(default_factory=list)
