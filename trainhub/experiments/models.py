"""What the API and the CLI say of a sweep: its trials with their jobs' states and scalars,
and the best trial. Built by pure functions from the sweep record, the trials' job records
and their scalars."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field

from trainhub.experiments.records import SweepRecord, SweepState
from trainhub.experiments.sweep import SweepSpec
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import FailureClass, JobState


class ScalarStat(BaseModel):
    """One training scalar of a trial: its last value, and the least and most it reached."""

    last: float
    min: float
    max: float
    step: int  # the step of the last value


class TrialView(BaseModel):
    trial: int
    parameters: dict[str, Any]
    job_id: str | None = None
    state: JobState | None = None  # None: not submitted (refused: see error)
    failure_class: FailureClass | None = None
    reason: str | None = None  # the verdict's sentence (why it stopped early, failed...)
    wait_reason: str | None = None
    error: str | None = None
    scalars: dict[str, ScalarStat] = Field(default_factory=dict)
    value: float | None = None  # the objective: best of the sweep's metric
    best: bool = False


class SweepSummary(BaseModel):
    id: str
    name: str
    user: str
    state: SweepState
    created_at: float
    finished_at: float | None = None
    sampler: str
    trials: int  # how many the sweep runs
    submitted: int
    active: int
    ended: int
    stopped_early: int
    metric: str | None = None
    mode: str = "min"


class DescribeSweep(SweepSummary):
    sweep: SweepSpec
    job: JobSpec
    seed: int
    best_trial: int | None = None
    trial_views: list[TrialView] = Field(default_factory=list)
    cancel_reason: str | None = None


class SweepList(BaseModel):
    sweeps: list[SweepSummary]


def scalar_stats(records: Iterable[Mapping[str, Any]]) -> dict[str, ScalarStat]:
    """Last, min and max of each scalar of ``metrics/scalars.jsonl`` lines (finite values)."""
    out: dict[str, ScalarStat] = {}
    for r in records:
        name, value, step = r.get("name"), r.get("value"), r.get("step")
        if not isinstance(name, str) or not isinstance(step, int):
            continue
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if not math.isfinite(value):
            continue
        seen = out.get(name)
        if seen is None:
            out[name] = ScalarStat(last=value, min=value, max=value, step=step)
        else:
            out[name] = ScalarStat(
                last=value if step >= seen.step else seen.last,
                min=min(seen.min, value),
                max=max(seen.max, value),
                step=max(step, seen.step),
            )
    return out


def curve(records: Iterable[Mapping[str, Any]], metric: str) -> list[tuple[int, float]]:
    """``(step, value)`` of one scalar, the last value kept of a step logged twice (a retry)."""
    points: dict[int, float] = {}
    for r in records:
        value, step = r.get("value"), r.get("step")
        if r.get("name") != metric or not isinstance(step, int) or isinstance(value, bool):
            continue
        if isinstance(value, int | float) and math.isfinite(value):
            points[step] = float(value)
    return sorted(points.items())


def objective(sweep: SweepSpec) -> tuple[str | None, str]:
    """The metric the sweep ranks trials by, and whether less or more is better."""
    if sweep.metric is not None:
        return sweep.metric, sweep.mode
    if sweep.early_stop is not None:
        return sweep.early_stop.metric, sweep.early_stop.mode
    return None, sweep.mode


def summarize(record: SweepRecord, jobs: Mapping[str, JobRecord]) -> SweepSummary:
    return SweepSummary(**_summary_fields(record, jobs))


def _summary_fields(record: SweepRecord, jobs: Mapping[str, JobRecord]) -> dict[str, Any]:
    mine = [jobs[t.job_id] for t in record.trials if t.job_id in jobs]
    metric, mode = objective(record.sweep)
    return {
        "id": record.id,
        "name": record.name,
        "user": record.user,
        "state": record.state,
        "created_at": record.created_at,
        "finished_at": record.finished_at,
        "sampler": record.sweep.sampler,
        "trials": record.sweep.trial_count(),
        "submitted": len(mine),
        "active": sum(1 for j in mine if not j.state.terminal),
        "ended": sum(1 for j in mine if j.state.terminal),
        "stopped_early": sum(
            1
            for j in mine
            if j.verdict is not None and j.verdict.failure_class == FailureClass.STOPPED_EARLY
        ),
        "metric": metric,
        "mode": mode,
    }


def describe(
    record: SweepRecord,
    jobs: Mapping[str, JobRecord],
    scalars: Mapping[str, dict[str, ScalarStat]],
    waits: Mapping[str, str | None] | None = None,
) -> DescribeSweep:
    """The sweep with a view of every trial; the best trial is the one with the best value of
    the sweep's metric among those that did not fail (a trial stopped early may still hold
    the best value so far, but never counts as best)."""
    metric, mode = objective(record.sweep)
    views = []
    for t in record.trials:
        job = jobs.get(t.job_id) if t.job_id else None
        stats = scalars.get(t.job_id or "", {})
        stat = stats.get(metric) if metric else None
        views.append(
            TrialView(
                trial=t.trial,
                parameters=t.parameters,
                job_id=t.job_id,
                state=job.state if job else None,
                failure_class=job.verdict.failure_class if job and job.verdict else None,
                reason=job.verdict.reason if job and job.verdict else None,
                wait_reason=(waits or {}).get(t.job_id or ""),
                error=t.error,
                scalars=stats,
                value=None if stat is None else (stat.min if mode == "min" else stat.max),
            )
        )
    best = best_trial(views, mode)
    for v in views:
        v.best = v.trial == best
    return DescribeSweep(
        **_summary_fields(record, jobs),
        sweep=record.sweep,
        job=record.job,
        seed=record.seed,
        best_trial=best,
        trial_views=views,
        cancel_reason=record.cancel_reason,
    )


def best_trial(views: Iterable[TrialView], mode: str) -> int | None:
    ranked = [
        v
        for v in views
        if v.value is not None
        and v.state in (JobState.SUCCEEDED, JobState.RUNNING, JobState.RETRYING)
    ]
    if not ranked:
        return None
    if mode == "min":  # ties go to the earlier trial
        return min(ranked, key=lambda v: (v.value, v.trial)).trial
    return max(ranked, key=lambda v: (v.value, -v.trial)).trial
