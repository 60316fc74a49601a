"""What a reader sees of a schedule (CLI, REST, Python API): built from its record, pure."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from pydantic import BaseModel

from trainhub.jobs.states import JobState
from trainhub.schedules import cron
from trainhub.schedules.model import Run, RunState, ScheduleRecord, Target


class RunView(BaseModel):
    at: float | None  # the scheduled time; None: run now
    at_local: str | None  # the same, in the schedule's zone (ISO 8601)
    claimed_at: float | None
    state: RunState
    job_state: str | None  # the job's state now ("gone" once deleted)
    outcome: str | None  # the job's final state, once it ended
    job_id: str | None
    pipeline_run: str | None  # a pipeline target's run
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


def run_view(run: Run, tz: str, job_states: Mapping[str, str]) -> RunView:
    started = run.job_id or run.pipeline_run
    now = job_states.get(started) if started else None
    ended = now if now is not None and (now == "gone" or JobState(now).terminal) else None
    return RunView(
        at=run.at,
        at_local=_local(run.at, tz),
        claimed_at=run.claimed_at,
        state=run.state,
        job_state=run.outcome or now,
        outcome=run.outcome or ended,
        job_id=run.job_id,
        pipeline_run=run.pipeline_run,
        reason=run.reason,
    )


def view(
    record: ScheduleRecord, job_states: Mapping[str, str], limit: int | None = None
) -> ScheduleView:
    """The schedule, with its ``limit`` newest runs (all when None); ``job_states``: the state
    now of the runs' jobs whose outcome is not noted yet."""
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
        runs=[run_view(run, r.timezone, job_states) for run in runs],
    )
