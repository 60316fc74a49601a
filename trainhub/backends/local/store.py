"""SQLite (WAL) job store for the local backend.

Many processes share it: the CLI, the Jupyter server, and one supervisor per running job.
Admission happens inside ``BEGIN IMMEDIATE`` transactions, so two submitters can never both
see the same free GPU.

Each thread gets a connection of its own: SQLite keeps transactions apart per connection, so
the server can answer requests side by side (a transaction is never interleaved with another
thread's statements), and two of its threads wait on each other exactly as two processes do.

This module holds the connections and the queries; the tables and their migrations are
store_schema.py's, a job as rows and back store_rows.py's.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainhub.backends.local.store_rows import (
    RECORD_COLUMNS,
    LocalJob,
    job_fields,
    job_row,
    local_fields,
    local_row,
    record_of,
    search_of,
)
from trainhub.backends.local.store_schema import bring_up_to_date
from trainhub.jobs.filter import EVERY_JOB, JobFilter
from trainhub.jobs.models import JobRecord
from trainhub.jobs.search import words
from trainhub.jobs.states import JobState

_SELECT_JOBS = f"SELECT {', '.join(f'jobs.{c}' for c in RECORD_COLUMNS)} FROM jobs"
_WITH_LOCAL = " LEFT JOIN local_jobs ON local_jobs.job_id = jobs.id"


def _where(wanted: JobFilter, before_seq: int | None = None) -> tuple[str, list[Any]]:
    """The WHERE clause (empty when nothing is asked) and its arguments of a query over jobs;
    ``with_shared`` means nothing here (one user's machine)."""
    terms: list[str] = []
    args: list[Any] = []
    for word in words(wanted.search):  # every word found (trainhub.jobs.search)
        terms.append("jobs.search LIKE ? ESCAPE '\\'")
        args.append(_like_pattern(word))
    if wanted.sweep_id is not None:
        terms.append("jobs.sweep_id = ?")
        args.append(wanted.sweep_id)
    if wanted.pipeline_run is not None:
        terms.append("jobs.pipeline_run = ?")
        args.append(wanted.pipeline_run)
    if wanted.user is not None:
        terms.append("jobs.user = ?")
        args.append(wanted.user)
    if wanted.states:
        terms.append(f"jobs.state IN ({', '.join('?' for _ in wanted.states)})")
        args.extend(str(s) for s in wanted.states)
    if before_seq is not None:
        terms.append("jobs.seq < ?")
        args.append(before_seq)
    return (" WHERE " + " AND ".join(terms) if terms else ""), args


def _like_pattern(word: str) -> str:
    """A LIKE pattern (``ESCAPE '\\'``) finding ``word`` anywhere, its own % and _ literal."""
    return "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class _ThreadConnection:
    """One thread's connection, closed when that thread ends (its thread-local values go with
    it) or when the store is closed."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


class Store:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._held: weakref.WeakSet[_ThreadConnection] = weakref.WeakSet()
        self._held_lock = threading.Lock()
        bring_up_to_date(self._conn, self.transaction)

    @property
    def _conn(self) -> sqlite3.Connection:
        """The calling thread's connection, opened on its first use."""
        held = getattr(self._local, "held", None)
        if held is None:
            held = _ThreadConnection(self._connect())
            self._local.held = held
            with self._held_lock:
                self._held.add(held)
        return held.conn

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN ourselves, so writers take the lock up front.
        conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=60000")
        return conn

    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection, for tables kept beside the jobs (usage rows)."""
        return self._conn

    def close(self) -> None:
        with self._held_lock:
            held = list(self._held)
        for h in held:
            h.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """An exclusive write transaction (readers go on, thanks to WAL)."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # --- writes -------------------------------------------------------------------------
    def insert(
        self,
        conn: sqlite3.Connection,
        record: JobRecord,
        local: LocalJob = LocalJob(),  # noqa: B008 (frozen: one default for every call is safe)
    ) -> JobRecord:
        data = job_row(record)
        cols = ", ".join(data)
        marks = ", ".join(f":{c}" for c in data)
        cur = conn.execute(f"INSERT INTO jobs ({cols}) VALUES ({marks})", data)
        conn.execute(
            "INSERT INTO local_jobs"
            " (job_id, slots, supervisor_pid, supervisor_start, process_groups, starts_from,"
            " workers, start_gpus) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            local_row(record.id, local),
        )
        return record.model_copy(update={"seq": cur.lastrowid})

    def update(self, conn: sqlite3.Connection | None, job_id: str, **fields: Any) -> None:
        """Change fields of a job's record."""
        self._set(conn, "jobs", "id", job_id, job_fields(fields))

    def edit(self, job_id: str, *, tags: list[str] | None, note: str | None) -> JobRecord | None:
        """Change a job's tags and note (None: unchanged), and what a search finds it by."""
        with self.transaction() as conn:
            record = self.get(job_id, conn)
            if record is None:
                return None
            changed = record.model_copy(
                update={
                    "tags": record.tags if tags is None else tags,
                    "note": record.note if note is None else note,
                }
            )
            self.update(
                conn,
                job_id,
                tags=changed.tags,
                note=changed.note,
                search=search_of(changed),
            )
        return changed

    def update_local(self, conn: sqlite3.Connection | None, job_id: str, **fields: Any) -> None:
        """Change fields of what this backend keeps of a job (:class:`LocalJob`)."""
        self._set(conn, "local_jobs", "job_id", job_id, local_fields(fields))

    def _set(
        self,
        conn: sqlite3.Connection | None,
        table: str,
        key: str,
        job_id: str,
        fields: dict[str, Any],
    ) -> None:
        assignments = ", ".join(f"{c} = :{c}" for c in fields)
        (conn or self._conn).execute(
            f"UPDATE {table} SET {assignments} WHERE {key} = :_id", {**fields, "_id": job_id}
        )

    def seed_machine_setting(
        self, name: str, value: str, conn: sqlite3.Connection | None = None
    ) -> None:
        """Set a machine setting unless one is set already (the first process to ask wins)."""
        (conn or self._conn).execute(
            "INSERT OR IGNORE INTO machine (name, value) VALUES (?, ?)", (name, value)
        )

    def set_machine_setting(self, name: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO machine (name, value) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (name, value),
        )

    # --- reads --------------------------------------------------------------------------
    def machine_setting(self, name: str, conn: sqlite3.Connection | None = None) -> str | None:
        row = (
            (conn or self._conn)
            .execute("SELECT value FROM machine WHERE name = ?", (name,))
            .fetchone()
        )
        return None if row is None else str(row[0])

    def get(self, job_id: str, conn: sqlite3.Connection | None = None) -> JobRecord | None:
        row = (conn or self._conn).execute(f"{_SELECT_JOBS} WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else record_of(row)

    def local(self, job_id: str, conn: sqlite3.Connection | None = None) -> LocalJob:
        """What this backend keeps of a job (nothing, for a job it does not know)."""
        row = (
            (conn or self._conn)
            .execute("SELECT * FROM local_jobs WHERE job_id = ?", (job_id,))
            .fetchone()
        )
        return LocalJob() if row is None else LocalJob.from_row(row)

    def with_local(
        self, states: Sequence[JobState], conn: sqlite3.Connection | None = None
    ) -> list[tuple[JobRecord, LocalJob]]:
        """Every job in ``states``, oldest first, with what this backend keeps of it."""
        where, args = _where(JobFilter(states=states))
        columns = ", ".join([*(f"jobs.{c}" for c in RECORD_COLUMNS), "local_jobs.*"])
        rows = (conn or self._conn).execute(
            f"SELECT {columns} FROM jobs{_WITH_LOCAL}{where} ORDER BY jobs.seq", args
        )
        return [(record_of(r), LocalJob.from_row(r)) for r in rows]

    def queue_head(
        self, conn: sqlite3.Connection, limit: int, after: tuple[int, int] | None = None
    ) -> list[tuple[str, int, int, int, int]]:
        """(id, priority, seq, gpus, slots) of queued jobs in admission order, from ``after`` on.

        Only the columns admission needs: it runs on every submit and must stay cheap
        with thousands of jobs waiting.
        """
        sql = (
            "SELECT jobs.id, jobs.priority, jobs.seq, IFNULL(local_jobs.start_gpus, jobs.gpus),"
            " IFNULL(local_jobs.slots, 0)"
            f" FROM jobs{_WITH_LOCAL} WHERE jobs.state = 'queued'"
        )
        args: list[Any] = []
        if after is not None:
            sql += " AND (jobs.priority < ? OR (jobs.priority = ? AND jobs.seq > ?))"
            args += [after[0], after[0], after[1]]
        sql += " ORDER BY jobs.priority DESC, jobs.seq LIMIT ?"
        return [tuple(r) for r in conn.execute(sql, [*args, limit])]  # type: ignore[misc]

    def holdings(
        self, states: Sequence[JobState], conn: sqlite3.Connection | None = None
    ) -> list[tuple[list[int], int]]:
        """(assigned GPU indices, CPU slots) of every job in ``states``."""
        where, args = _where(JobFilter(states=states))
        rows = (conn or self._conn).execute(
            f"SELECT jobs.assigned_gpus, IFNULL(local_jobs.slots, 0) FROM jobs{_WITH_LOCAL}{where}",
            args,
        )
        return [(json.loads(gpus), slots) for gpus, slots in rows]

    def jobs_ahead(self, record: JobRecord, conn: sqlite3.Connection | None = None) -> int:
        """How many queued jobs will be considered before this one."""
        (n,) = (
            (conn or self._conn)
            .execute(
                "SELECT COUNT(*) FROM jobs WHERE state = 'queued' AND"
                " (priority > ? OR (priority = ? AND seq < ?))",
                (record.priority, record.priority, record.seq),
            )
            .fetchone()
        )
        return int(n)

    def list_jobs(
        self, wanted: JobFilter = EVERY_JOB, *, limit: int = 50, before_seq: int | None = None
    ) -> list[JobRecord]:
        """Newest first, paged by ``before_seq`` (keyset paging stays fast with many jobs); all
        of them for a ``limit`` of -1."""
        where, args = _where(wanted, before_seq)
        rows = self._conn.execute(
            f"{_SELECT_JOBS}{where} ORDER BY jobs.seq DESC LIMIT ?", [*args, limit]
        )
        return [record_of(r) for r in rows]

    def ended_without(self, table: str, key: str) -> list[str]:
        """Ids of ended jobs that have no row in ``table`` (keyed by job id in ``key``)."""
        rows = self._conn.execute(
            f"SELECT id FROM jobs WHERE state IN ('succeeded', 'failed', 'cancelled')"
            f" AND NOT EXISTS (SELECT 1 FROM {table} WHERE {table}.{key} = jobs.id)"
        )
        return [r[0] for r in rows]

    def count(self, wanted: JobFilter = EVERY_JOB) -> int:
        where, args = _where(wanted)
        return int(self._conn.execute(f"SELECT COUNT(*) FROM jobs{where}", args).fetchone()[0])
