"""The mirror's pass over the jobs enrolled in one mirror directory: each cursor that is due is
caught up (:func:`trainhub.tracking.sync.sync_job`); a failure (the server down, an answer
refused) is kept in the cursor with the time of its next try, backing off per job, so one job's
trouble delays neither its other steps' later tries nor another job. Whoever reconciles runs
passes: the local backend's detached sender, the cluster's controller. Never raises for a job."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from trainhub.errors import scrub_paths
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.tracking import cursor as cursors
from trainhub.tracking.config import MlflowServer
from trainhub.tracking.rest import Client
from trainhub.tracking.sync import sync_job

MAX_BACKOFF = 300.0

# job id -> the job's record, None when the job is gone
Lookup = Callable[[str], JobRecord | None]
# a record -> the team's server, None when the team mirrors no more
ServerOf = Callable[[JobRecord], MlflowServer | None]


def backoff_base() -> float:
    return float(os.environ.get("TRAINHUB_MLFLOW_BACKOFF_SECONDS") or 5.0)


def poll_interval() -> float:
    """Seconds between two catch-ups of a job still running (its scalars as they come)."""
    return float(os.environ.get("TRAINHUB_MLFLOW_INTERVAL_SECONDS") or 10.0)


def retry_delay(failures: int) -> float:
    return min(backoff_base() * 2 ** max(failures - 1, 0), MAX_BACKOFF)


def enroll(state: Path, job_id: str) -> bool:
    """Start mirroring a job (a cursor with nothing sent); False when it already is."""
    if cursors.load(state, job_id) is not None:
        return False
    cursors.save(state, cursors.Cursor(job_id=job_id))
    return True


SINCE = ".since"


def enroll_new(state: Path, records: list[JobRecord]) -> int:
    """Enroll those of ``records`` that have not ended, or ended since this mirror directory
    first enrolled (a team that starts mirroring does not send its whole history); returns
    how many were new."""
    mark = state / SINCE
    try:
        since = float(mark.read_text())
    except (OSError, ValueError):
        since = time.time()
        mark.write_text(repr(since))
    return sum(
        enroll(state, r.id)
        for r in records
        if not r.state.terminal or (r.finished_at or r.created_at) >= since
    )


@dataclass
class PassResult:
    synced: int = 0
    failed: int = 0
    next_due: float | None = None  # when the earliest pending cursor is due; None: none left


def run_pass(
    state: Path,
    lookup: Lookup,
    server_of: ServerOf,
    *,
    now: float | None = None,
    reading: Callable[[JobRecord], AbstractContextManager[None]] | None = None,
    writing: Callable[[], AbstractContextManager[None]] | None = None,
) -> PassResult:
    """Catch up every pending job that is due. ``reading``: how to read a job's directory (as
    its owner, on a cluster); ``writing``: how to write the cursors (as the mirror itself)."""
    now = time.time() if now is None else now
    result = PassResult()
    as_mirror = writing or contextlib.nullcontext

    def save(cursor: cursors.Cursor) -> None:
        with as_mirror():
            cursors.save(state, cursor)

    for cursor in cursors.pending(state):
        if cursor.next_try > now:
            result.next_due = min(result.next_due or cursor.next_try, cursor.next_try)
            continue
        try:
            record = lookup(cursor.job_id)
        except Exception as error:  # a store or cluster that cannot answer: later
            _failed(cursor, error, now, save, result)
            continue
        server = server_of(record) if record is not None else None
        if record is None or server is None:
            cursor.error = "the job is gone" if record is None else "its team mirrors no more"
            cursor.done = True
            save(cursor)
            continue
        cursor.error = None
        try:
            with reading(record) if reading is not None else contextlib.nullcontext():
                sync_job(
                    Client(server),
                    server.experiment_for(record.team or "default"),
                    record,
                    JobDir(record.job_dir),
                    cursor,
                    save,
                )
        except Exception as error:  # the mirror never stands in a job's way
            _failed(cursor, error, now, save, result)
            continue
        result.synced += 1
        if not cursor.done:  # still running: its next scalars in a while
            cursor.failures, cursor.next_try = 0, now + poll_interval()
            save(cursor)
            result.next_due = min(result.next_due or cursor.next_try, cursor.next_try)
    return result


def _failed(
    cursor: cursors.Cursor,
    error: Exception,
    now: float,
    save: Callable[[cursors.Cursor], None],
    result: PassResult,
) -> None:
    cursor.failures += 1
    cursor.error = scrub_paths(f"{type(error).__name__}: {error}")[:500]
    cursor.next_try = now + retry_delay(cursor.failures)
    result.failed += 1
    result.next_due = min(result.next_due or cursor.next_try, cursor.next_try)
    with contextlib.suppress(OSError):
        save(cursor)
