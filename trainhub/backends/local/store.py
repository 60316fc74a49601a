"""SQLite (WAL) job store for the local backend.

Many processes share it: the CLI, the Jupyter server, and one supervisor per running job.
Admission happens inside ``BEGIN IMMEDIATE`` transactions, so two submitters can never both
see the same free GPU.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainhub.jobs.models import JobRecord
from trainhub.jobs.states import JobState

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    id                TEXT NOT NULL UNIQUE,
    name              TEXT NOT NULL,
    user              TEXT NOT NULL,
    team              TEXT,
    queue             TEXT,
    priority          INTEGER NOT NULL,
    state             TEXT NOT NULL,
    spec              TEXT NOT NULL,
    job_dir           TEXT NOT NULL,
    gpus              INTEGER NOT NULL,
    slots             INTEGER NOT NULL,
    assigned_gpus     TEXT NOT NULL DEFAULT '[]',
    created_at        REAL NOT NULL,
    admitted_at       REAL,
    started_at        REAL,
    finished_at       REAL,
    attempt           INTEGER NOT NULL DEFAULT 0,
    retries           TEXT NOT NULL DEFAULT '{}',
    verdict           TEXT,
    supervisor_pid    INTEGER,
    supervisor_start  REAL,
    process_groups    TEXT NOT NULL DEFAULT '[]',
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    cancel_reason     TEXT,
    resubmitted_from  TEXT,
    updated_at        REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, priority DESC, seq);
CREATE INDEX IF NOT EXISTS jobs_by_user ON jobs (user, seq DESC);
"""

_JSON_COLUMNS = ("spec", "assigned_gpus", "retries", "verdict", "process_groups")


class Store:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = self._connect()
        with self._conn:
            self._conn.executescript(SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN ourselves, so writers take the lock up front.
        conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=60000")
        return conn

    def close(self) -> None:
        self._conn.close()

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

    # --- rows <-> records --------------------------------------------------------------
    @staticmethod
    def _record(row: sqlite3.Row) -> JobRecord:
        data = dict(row)
        for col in _JSON_COLUMNS:
            if data.get(col) is not None:
                data[col] = json.loads(data[col])
        data["cancel_requested"] = bool(data["cancel_requested"])
        return JobRecord.model_validate(data)

    # --- writes -------------------------------------------------------------------------
    def insert(self, conn: sqlite3.Connection, record: JobRecord) -> JobRecord:
        data = record.model_dump(mode="json", exclude={"seq"})
        for col in _JSON_COLUMNS:
            data[col] = None if data[col] is None else json.dumps(data[col])
        data["cancel_requested"] = int(data["cancel_requested"])
        data["updated_at"] = time.time()
        cols = ", ".join(data)
        marks = ", ".join(f":{c}" for c in data)
        cur = conn.execute(f"INSERT INTO jobs ({cols}) VALUES ({marks})", data)
        return record.model_copy(update={"seq": cur.lastrowid})

    def update(self, conn: sqlite3.Connection | None, job_id: str, **fields: Any) -> None:
        for col in _JSON_COLUMNS:
            if col in fields and fields[col] is not None:
                fields[col] = json.dumps(fields[col], default=str)
        if "state" in fields:
            fields["state"] = str(fields["state"])
        if "cancel_requested" in fields:
            fields["cancel_requested"] = int(fields["cancel_requested"])
        fields["updated_at"] = time.time()
        assignments = ", ".join(f"{c} = :{c}" for c in fields)
        (conn or self._conn).execute(
            f"UPDATE jobs SET {assignments} WHERE id = :_id", {**fields, "_id": job_id}
        )

    # --- reads --------------------------------------------------------------------------
    def get(self, job_id: str, conn: sqlite3.Connection | None = None) -> JobRecord | None:
        row = (conn or self._conn).execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else self._record(row)

    def in_states(
        self, states: Sequence[JobState], conn: sqlite3.Connection | None = None
    ) -> list[JobRecord]:
        marks = ", ".join("?" for _ in states)
        rows = (conn or self._conn).execute(
            f"SELECT * FROM jobs WHERE state IN ({marks}) ORDER BY seq", [str(s) for s in states]
        )
        return [self._record(r) for r in rows]

    def queue_head(
        self, conn: sqlite3.Connection, limit: int, after: tuple[int, int] | None = None
    ) -> list[tuple[str, int, int, int, int]]:
        """(id, priority, seq, gpus, slots) of queued jobs in admission order, from ``after`` on.

        Only the columns admission needs: it runs on every submit and must stay cheap
        with thousands of jobs waiting.
        """
        sql = "SELECT id, priority, seq, gpus, slots FROM jobs WHERE state = 'queued'"
        args: list[Any] = []
        if after is not None:
            sql += " AND (priority < ? OR (priority = ? AND seq > ?))"
            args += [after[0], after[0], after[1]]
        sql += " ORDER BY priority DESC, seq LIMIT ?"
        return [tuple(r) for r in conn.execute(sql, [*args, limit])]  # type: ignore[misc]

    def holdings(self, states: Sequence[JobState], conn: sqlite3.Connection | None = None) -> list[tuple[list[int], int]]:
        """(assigned GPU indices, CPU slots) of every job in ``states``."""
        marks = ", ".join("?" for _ in states)
        rows = (conn or self._conn).execute(
            f"SELECT assigned_gpus, slots FROM jobs WHERE state IN ({marks})", [str(s) for s in states]
        )
        return [(json.loads(gpus), slots) for gpus, slots in rows]

    def jobs_ahead(self, record: JobRecord, conn: sqlite3.Connection | None = None) -> int:
        """How many queued jobs will be considered before this one."""
        (n,) = (conn or self._conn).execute(
            "SELECT COUNT(*) FROM jobs WHERE state = 'queued' AND"
            " (priority > ? OR (priority = ? AND seq < ?))",
            (record.priority, record.priority, record.seq),
        ).fetchone()
        return int(n)

    def list_jobs(
        self,
        *,
        user: str | None = None,
        states: Sequence[JobState] | None = None,
        limit: int = 50,
        before_seq: int | None = None,
    ) -> list[JobRecord]:
        """Newest first, paged by ``before_seq`` (keyset paging stays fast with many jobs)."""
        where: list[str] = []
        args: list[Any] = []
        if user is not None:
            where.append("user = ?")
            args.append(user)
        if states:
            where.append(f"state IN ({', '.join('?' for _ in states)})")
            args.extend(str(s) for s in states)
        if before_seq is not None:
            where.append("seq < ?")
            args.append(before_seq)
        sql = "SELECT * FROM jobs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seq DESC LIMIT ?"
        args.append(limit)
        return [self._record(r) for r in self._conn.execute(sql, args)]

    def count(self, *, user: str | None = None, states: Sequence[JobState] | None = None) -> int:
        where, args = [], []
        if user is not None:
            where.append("user = ?")
            args.append(user)
        if states:
            where.append(f"state IN ({', '.join('?' for _ in states)})")
            args.extend(str(s) for s in states)
        sql = "SELECT COUNT(*) FROM jobs" + (" WHERE " + " AND ".join(where) if where else "")
        return int(self._conn.execute(sql, args).fetchone()[0])
