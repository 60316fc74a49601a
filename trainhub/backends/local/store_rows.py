"""A job in the local store's rows: a JobRecord as a ``jobs`` row and back (its JSON columns,
its search text), and :class:`LocalJob`, what only this backend keeps (``local_jobs``)."""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from trainhub.jobs.models import JobRecord
from trainhub.jobs.search import search_text
from trainhub.jobs.spec import JobSpec

# The local backend keeps one user's jobs: nothing is shared with a team (trainhub.jobs.sharing).
_NOT_STORED = frozenset({"shared"})
RECORD_COLUMNS = tuple(f for f in JobRecord.model_fields if f not in _NOT_STORED)
_JSON_COLUMNS = ("spec", "assigned_gpus", "retries", "verdict", "tags")


@dataclass(frozen=True)
class LocalJob:
    """What only the local backend keeps of a job: the CPU slots it holds while admitted, the
    processes it runs as (its detached supervisor, and the process groups of its agents), and
    the checkpoint its first attempt starts from (the submit's placement)."""

    slots: int = 0
    supervisor_pid: int | None = None
    supervisor_start: float | None = None  # the supervisor's create time: pids are reused
    process_groups: tuple[int, ...] = ()
    starts_from: str | None = None
    # An elastic job's grant (None for a fixed size): the workers it may run now (queued: MIN),
    # the GPUs it asks to start with, and why the grant last changed (its supervisor's event).
    workers: int | None = None
    start_gpus: int | None = None
    resize_reason: str | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> LocalJob:
        return cls(
            slots=row["slots"] or 0,
            supervisor_pid=row["supervisor_pid"],
            supervisor_start=row["supervisor_start"],
            process_groups=tuple(json.loads(row["process_groups"] or "[]")),
            starts_from=row["starts_from"],
            workers=row["workers"],
            start_gpus=row["start_gpus"],
            resize_reason=row["resize_reason"],
        )


@functools.lru_cache(maxsize=4096)
def _stored_spec(raw: str) -> JobSpec:
    """A stored spec, parsed once: a spec never changes after submission, and validating it
    again (its limits, its parameters) was most of the cost of a page of the job list."""
    return JobSpec.model_validate_json(raw)


def search_of(record: JobRecord) -> str:
    return search_text(record.name, record.tags, record.note, record.spec.parameters)


def record_of(row: sqlite3.Row) -> JobRecord:
    """The JobRecord of a ``jobs`` row (selected by :data:`RECORD_COLUMNS`)."""
    data = {col: row[col] for col in RECORD_COLUMNS}
    for col in _JSON_COLUMNS:
        if data[col] is not None:
            data[col] = _stored_spec(data[col]) if col == "spec" else json.loads(data[col])
    data["cancel_requested"] = bool(data["cancel_requested"])
    return JobRecord.model_validate(data)


def job_row(record: JobRecord) -> dict[str, Any]:
    """The ``jobs`` row of a new record: its columns by name, but ``seq`` (the store's)."""
    data = record.model_dump(mode="json", exclude={"seq", *_NOT_STORED})
    for col in _JSON_COLUMNS:
        data[col] = None if data[col] is None else json.dumps(data[col])
    data["cancel_requested"] = int(data["cancel_requested"])
    data["search"] = search_of(record)
    data["updated_at"] = time.time()
    return data


def job_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Changed fields of a record as ``jobs`` columns hold them (``fields`` is changed)."""
    for col in _JSON_COLUMNS:
        if col in fields and fields[col] is not None:
            fields[col] = json.dumps(fields[col], default=str)
    if "state" in fields:
        fields["state"] = str(fields["state"])
    if "cancel_requested" in fields:
        fields["cancel_requested"] = int(fields["cancel_requested"])
    fields["updated_at"] = time.time()
    return fields


def local_row(job_id: str, local: LocalJob) -> tuple[Any, ...]:
    """The ``local_jobs`` row of a new job: (job_id, slots, supervisor_pid, supervisor_start,
    process_groups, starts_from, workers, start_gpus)."""
    return (
        job_id,
        local.slots,
        local.supervisor_pid,
        local.supervisor_start,
        json.dumps(list(local.process_groups)),
        local.starts_from,
        local.workers,
        local.start_gpus,
    )


def local_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Changed fields of a :class:`LocalJob` as ``local_jobs`` columns hold them (``fields``
    is changed)."""
    if "process_groups" in fields:
        fields["process_groups"] = json.dumps(list(fields["process_groups"]))
    return fields
