"""How the supervisor writes down a job's end: its final state and verdict, with its usage row
in the same transaction, or its suspension (the step saved, its GPUs given back); and the
alerts the job asked for, queued for the detached sender (trainhub.alerts); and the MLflow
mirror's sender started (trainhub.tracking)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from trainhub import settings
from trainhub.alerts.announce import announce_job
from trainhub.backends.local.accounting import usage_store
from trainhub.backends.local.store import Store
from trainhub.backends.local.tracking import job_ended
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.states import JobState
from trainhub.jobs.suspension import saved_step
from trainhub.lifecycle.notify import end_alert_kind
from trainhub.lifecycle.verdict import end_state
from trainhub.usage.compute import UsageRow, job_usage


def record_suspension(
    store: Store,
    record: JobRecord,
    jobdir: JobDir,
    still: Callable[[sqlite3.Connection], bool] = lambda conn: True,
) -> None:
    """Record the suspension: its latest checkpoint's step, its GPUs and slots given back
    (admission counts only active jobs), nothing retried; nothing when ``still`` says, in the
    same transaction, that the job is no longer what the caller found."""
    step = saved_step(record.job_dir)
    with store.transaction() as conn:
        if not still(conn):
            return
        store.update(
            conn,
            record.id,
            state=JobState.SUSPENDED,
            suspended_step=step,
            suspend_requested=False,
            assigned_gpus=[],
        )
    jobdir.emit("suspended", step=step, attempt=record.attempt)
    jobdir.emit("state", state=JobState.SUSPENDED.value, step=step)


def record_ending(
    home: Path, store: Store, record: JobRecord, jobdir: JobDir, verdict: Verdict | None
) -> None:
    """The job ended: succeeded without a verdict, else cancelled or failed by it."""
    state = end_state(verdict)
    if verdict is not None:
        verdict.retriable = False
    ended = {
        "state": state,
        "finished_at": time.time(),
        "verdict": verdict.model_dump(mode="json") if verdict else None,
    }
    usage = usage_row(record.model_copy(update={**ended, "verdict": verdict}), jobdir)
    rows = usage_store(store) if usage is not None else None  # its table, made outside
    with store.transaction() as conn:
        store.update(conn, record.id, **ended)
        # In the same transaction: whoever sees the job ended sees its usage row too.
        if rows is not None and usage is not None:
            rows.record([usage], conn)
    jobdir.emit("state", state=state.value, **({"reason": verdict.reason} if verdict else {}))
    kind = end_alert_kind(record.spec.notify, state)
    if kind is not None:
        announce(home, record.model_copy(update={**ended, "verdict": verdict}), jobdir, kind)
    mirror_ending(home, record.id, jobdir)


def mirror_ending(home: Path, job_id: str, jobdir: JobDir) -> None:
    """The MLflow mirror's sender, so that the run's end follows soon (trainhub.tracking)."""
    try:
        job_ended(home, job_id)
    except Exception as error:  # the mirror never stands in the way of finishing a job
        jobdir.emit("mlflow", error=f"The MLflow mirror could not be started: {error}")


def announce(home: Path, record: JobRecord, jobdir: JobDir, kind: str) -> None:
    """Queue the job's alert; the detached sender delivers it (trainhub.alerts)."""
    problem = announce_job(home, record, kind)
    if problem:
        jobdir.emit("alert", error=problem)


def usage_row(ended: JobRecord, jobdir: JobDir) -> UsageRow | None:
    """The ended job's usage row; a report backfills it when this fails, so accounting
    never stands in the way of finishing a job."""
    try:
        return job_usage(ended, threshold_pct=settings.waste_utilization_pct())
    except Exception as error:
        jobdir.emit("usage", error=f"Usage accounting failed: {error!r}.")
        return None
