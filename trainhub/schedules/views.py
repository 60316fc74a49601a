"""What a reader sees of a schedule (CLI, REST, Python API): built from its record, pure."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from trainhub.schedules import cron
from trainhub.schedules.model import Run, RunState, ScheduleRecord, Target


class RunView(BaseModel):
    at: float | None  # the scheduled time; None: run now
    at_local: str | None  # the same, in the schedule's zone (ISO 8601)
    claimed_at: float | None
    state: RunState
    outcome: str | None  # the job's final state, once it ended
    job_id: str | None
    reason: str | None


class ScheduleView(BaseModel):
    id: str
    name: str
    user: str
    team: str | None
    created_at: float
    target: Target
    cron: str
    cron_text: str  # the expression in words
    timezone: str
    paused: bool
    concurrency: str
    missed: str
    starting_deadline_seconds: float | None
    notify_failure: bool
    next_at: float | None
    next_at_local: str | None
    runs: list[RunView]  # newest first


class ScheduleList(BaseModel):
    schedules: list[ScheduleView]


def _local(t: float | None, tz: str) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, cron.zone(tz)).isoformat()


def run_view(run: Run, tz: str) -> RunView:
    return RunView(
        at=run.at,
        at_local=_local(run.at, tz),
        claimed_at=run.claimed_at,
        state=run.state,
        outcome=run.outcome,
        job_id=run.job_id,
        reason=run.reason,
    )


def view(record: ScheduleRecord, limit: int | None = None) -> ScheduleView:
    """The schedule, with its ``limit`` newest runs (all when None)."""
    r = record.request
    nxt = None if r.paused else cron.next_after(r.cron, r.timezone, record.since)
    runs = list(reversed(record.runs))[:limit]
    return ScheduleView(
        id=record.id,
        name=r.name,
        user=record.user,
        team=record.team,
        created_at=record.created_at,
        target=r.target,
        cron=r.cron,
        cron_text=cron.describe(r.cron),
        timezone=r.timezone,
        paused=r.paused,
        concurrency=r.concurrency.value,
        missed=r.missed.value,
        starting_deadline_seconds=r.deadline_seconds,
        notify_failure=r.notify_failure,
        next_at=nxt,
        next_at_local=_local(nxt, r.timezone),
        runs=[run_view(run, r.timezone) for run in runs],
    )
