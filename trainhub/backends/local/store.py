"""SQLite (WAL) job store for the local backend.

Many processes share it: the CLI, the Jupyter server, and one supervisor per running job.
Admission happens inside ``BEGIN IMMEDIATE`` transactions, so two submitters can never both
see the same free GPU.

Each thread gets a connection of its own: SQLite keeps transactions apart per connection, so
the server can answer requests side by side (a transaction is never interleaved with another
thread's statements), and two of its threads wait on each other exactly as two processes do.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainhub.jobs.models import JobRecord
from trainhub.jobs.search import search_text, words
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import JobState

SCHEMA_VERSION = 1  # PRAGMA user_version of a database this module has brought up to date

# ``jobs`` holds the backend-neutral JobRecord; ``local_jobs`` what only this backend keeps;
# ``machine`` the settings every process on this machine must agree on (its CPU slots).
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
    assigned_gpus     TEXT NOT NULL DEFAULT '[]',
    created_at        REAL NOT NULL,
    admitted_at       REAL,
    started_at        REAL,
    finished_at       REAL,
    attempt           INTEGER NOT NULL DEFAULT 0,
    retries           TEXT NOT NULL DEFAULT '{}',
    verdict           TEXT,
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    cancel_reason     TEXT,
    suspend_requested INTEGER NOT NULL DEFAULT 0,
    suspended_step    INTEGER,
    resubmitted_from  TEXT,
    sweep_id          TEXT,
    tags              TEXT NOT NULL DEFAULT '[]',
    note              TEXT NOT NULL DEFAULT '',
    search            TEXT NOT NULL DEFAULT '',
    updated_at        REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, priority DESC, seq);
CREATE INDEX IF NOT EXISTS jobs_by_user ON jobs (user, seq DESC);
CREATE TABLE IF NOT EXISTS local_jobs (
    job_id            TEXT PRIMARY KEY REFERENCES jobs (id),
    slots             INTEGER NOT NULL DEFAULT 0,
    supervisor_pid    INTEGER,
    supervisor_start  REAL,
    process_groups    TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS machine (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
"""

# Columns added to ``jobs`` since it was first written, with the index each needs (added to a
# database that lacks them when it is opened).
_ADDED_COLUMNS = {
    "sweep_id": ("TEXT", "CREATE INDEX IF NOT EXISTS jobs_by_sweep ON jobs (sweep_id, seq DESC)"),
    "tags": ("TEXT NOT NULL DEFAULT '[]'", None),
    "note": ("TEXT NOT NULL DEFAULT ''", None),
    # trainhub.jobs.search.search_text of the job; the index holds it, so a search scans the
    # index in the list's order and stops at a page of matches.
    "search": (
        "TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX IF NOT EXISTS jobs_search ON jobs (user, seq DESC, search)",
    ),
    "suspend_requested": ("INTEGER NOT NULL DEFAULT 0", None),
    "suspended_step": ("INTEGER", None),
}

# Databases written before ``local_jobs`` existed kept these columns in ``jobs``.
_MOVED_TO_LOCAL_JOBS = ("slots", "supervisor_pid", "supervisor_start", "process_groups")

# The local backend keeps one user's jobs: nothing is shared with a team (trainhub.jobs.sharing).
_NOT_STORED = frozenset({"shared"})
_RECORD_COLUMNS = tuple(f for f in JobRecord.model_fields if f not in _NOT_STORED)
_JSON_COLUMNS = ("spec", "assigned_gpus", "retries", "verdict", "tags")
_SELECT_JOBS = f"SELECT {', '.join(f'jobs.{c}' for c in _RECORD_COLUMNS)} FROM jobs"
_WITH_LOCAL = " LEFT JOIN local_jobs ON local_jobs.job_id = jobs.id"


@dataclass(frozen=True)
class LocalJob:
    """What only the local backend keeps of a job: the CPU slots it holds while admitted, and
    the processes it runs as (its detached supervisor, and the process groups of its agents)."""

    slots: int = 0
    supervisor_pid: int | None = None
    supervisor_start: float | None = None  # the supervisor's create time: pids are reused
    process_groups: tuple[int, ...] = ()

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> LocalJob:
        return cls(
            slots=row["slots"] or 0,
            supervisor_pid=row["supervisor_pid"],
            supervisor_start=row["supervisor_start"],
            process_groups=tuple(json.loads(row["process_groups"] or "[]")),
        )


def _where(
    *,
    user: str | None = None,
    states: Sequence[JobState] | None = None,
    before_seq: int | None = None,
    sweep_id: str | None = None,
    search: str | None = None,
) -> tuple[str, list[Any]]:
    """The WHERE clause (empty when nothing is asked) and its arguments of a query over jobs."""
    terms: list[str] = []
    args: list[Any] = []
    for word in words(search):  # every word found (trainhub.jobs.search)
        terms.append("jobs.search LIKE ? ESCAPE '\\'")
        args.append(_like_pattern(word))
    if sweep_id is not None:
        terms.append("jobs.sweep_id = ?")
        args.append(sweep_id)
    if user is not None:
        terms.append("jobs.user = ?")
        args.append(user)
    if states:
        terms.append(f"jobs.state IN ({', '.join('?' for _ in states)})")
        args.extend(str(s) for s in states)
    if before_seq is not None:
        terms.append("jobs.seq < ?")
        args.append(before_seq)
    return (" WHERE " + " AND ".join(terms) if terms else ""), args


@functools.lru_cache(maxsize=4096)
def _stored_spec(raw: str) -> JobSpec:
    """A stored spec, parsed once: a spec never changes after submission, and validating it
    again (its limits, its parameters) was most of the cost of a page of the job list."""
    return JobSpec.model_validate_json(raw)


def _search_of(record: JobRecord) -> str:
    return search_text(record.name, record.tags, record.note, record.spec.parameters)


def _fill_search(conn: sqlite3.Connection) -> None:
    """Tags (as submitted) and search text of the jobs written before the store kept them."""
    for job_id, raw in conn.execute("SELECT id, spec FROM jobs").fetchall():
        spec = json.loads(raw)
        tags = spec.get("tags") or []
        text = search_text(spec.get("name", ""), tags, "", spec.get("parameters") or {})
        conn.execute(
            "UPDATE jobs SET tags = ?, search = ? WHERE id = ?", (json.dumps(tags), text, job_id)
        )


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
        with self._conn:
            self._conn.executescript(SCHEMA)
        self._migrate()
        self._add_columns()

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

    def _migrate(self) -> None:
        """Bring a database written by an earlier trainhub up to :data:`SCHEMA_VERSION`."""
        if self._version(self._conn) >= SCHEMA_VERSION:
            return
        with self.transaction() as conn:
            if self._version(conn) >= SCHEMA_VERSION:
                return  # another process migrated it meanwhile
            columns = {row["name"] for row in conn.execute("PRAGMA table_info(jobs)")}
            if set(_MOVED_TO_LOCAL_JOBS) <= columns:
                moved = ", ".join(_MOVED_TO_LOCAL_JOBS)
                conn.execute(
                    f"INSERT OR IGNORE INTO local_jobs (job_id, {moved})"
                    f" SELECT id, {moved} FROM jobs"
                )
                for column in _MOVED_TO_LOCAL_JOBS:
                    conn.execute(f"ALTER TABLE jobs DROP COLUMN {column}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _add_columns(self) -> None:
        """Add the columns of :data:`_ADDED_COLUMNS` (and their indexes) a database lacks."""
        with self.transaction() as conn:
            columns = {row["name"] for row in conn.execute("PRAGMA table_info(jobs)")}
            for column, (kind, index) in _ADDED_COLUMNS.items():
                if column not in columns:
                    conn.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
                    if column == "search":
                        _fill_search(conn)
                if index:
                    conn.execute(index)

    @staticmethod
    def _version(conn: sqlite3.Connection) -> int:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])

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

    # --- rows <-> records --------------------------------------------------------------
    @staticmethod
    def _record(row: sqlite3.Row) -> JobRecord:
        data = {col: row[col] for col in _RECORD_COLUMNS}
        for col in _JSON_COLUMNS:
            if data[col] is not None:
                data[col] = _stored_spec(data[col]) if col == "spec" else json.loads(data[col])
        data["cancel_requested"] = bool(data["cancel_requested"])
        return JobRecord.model_validate(data)

    # --- writes -------------------------------------------------------------------------
    def insert(
        self, conn: sqlite3.Connection, record: JobRecord, local: LocalJob = LocalJob()
    ) -> JobRecord:
        data = record.model_dump(mode="json", exclude={"seq", *_NOT_STORED})
        for col in _JSON_COLUMNS:
            data[col] = None if data[col] is None else json.dumps(data[col])
        data["cancel_requested"] = int(data["cancel_requested"])
        data["search"] = _search_of(record)
        data["updated_at"] = time.time()
        cols = ", ".join(data)
        marks = ", ".join(f":{c}" for c in data)
        cur = conn.execute(f"INSERT INTO jobs ({cols}) VALUES ({marks})", data)
        conn.execute(
            "INSERT INTO local_jobs"
            " (job_id, slots, supervisor_pid, supervisor_start, process_groups)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                record.id,
                local.slots,
                local.supervisor_pid,
                local.supervisor_start,
                json.dumps(list(local.process_groups)),
            ),
        )
        return record.model_copy(update={"seq": cur.lastrowid})

    def update(self, conn: sqlite3.Connection | None, job_id: str, **fields: Any) -> None:
        """Change fields of a job's record."""
        for col in _JSON_COLUMNS:
            if col in fields and fields[col] is not None:
                fields[col] = json.dumps(fields[col], default=str)
        if "state" in fields:
            fields["state"] = str(fields["state"])
        if "cancel_requested" in fields:
            fields["cancel_requested"] = int(fields["cancel_requested"])
        fields["updated_at"] = time.time()
        self._set(conn, "jobs", "id", job_id, fields)

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
                search=_search_of(changed),
            )
        return changed

    def update_local(self, conn: sqlite3.Connection | None, job_id: str, **fields: Any) -> None:
        """Change fields of what this backend keeps of a job (:class:`LocalJob`)."""
        if "process_groups" in fields:
            fields["process_groups"] = json.dumps(list(fields["process_groups"]))
        self._set(conn, "local_jobs", "job_id", job_id, fields)

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
        return None if row is None else self._record(row)

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
        where, args = _where(states=states)
        columns = ", ".join([*(f"jobs.{c}" for c in _RECORD_COLUMNS), "local_jobs.*"])
        rows = (conn or self._conn).execute(
            f"SELECT {columns} FROM jobs{_WITH_LOCAL}{where} ORDER BY jobs.seq", args
        )
        return [(self._record(r), LocalJob.from_row(r)) for r in rows]

    def queue_head(
        self, conn: sqlite3.Connection, limit: int, after: tuple[int, int] | None = None
    ) -> list[tuple[str, int, int, int, int]]:
        """(id, priority, seq, gpus, slots) of queued jobs in admission order, from ``after`` on.

        Only the columns admission needs: it runs on every submit and must stay cheap
        with thousands of jobs waiting.
        """
        sql = (
            "SELECT jobs.id, jobs.priority, jobs.seq, jobs.gpus, IFNULL(local_jobs.slots, 0)"
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
        where, args = _where(states=states)
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
        self,
        *,
        user: str | None = None,
        states: Sequence[JobState] | None = None,
        limit: int = 50,
        before_seq: int | None = None,
        sweep_id: str | None = None,
        search: str | None = None,
    ) -> list[JobRecord]:
        """Newest first, paged by ``before_seq`` (keyset paging stays fast with many jobs)."""
        where, args = _where(
            user=user, states=states, before_seq=before_seq, sweep_id=sweep_id, search=search
        )
        rows = self._conn.execute(
            f"{_SELECT_JOBS}{where} ORDER BY jobs.seq DESC LIMIT ?", [*args, limit]
        )
        return [self._record(r) for r in rows]

    def ended_without(self, table: str, key: str) -> list[str]:
        """Ids of ended jobs that have no row in ``table`` (keyed by job id in ``key``)."""
        rows = self._conn.execute(
            f"SELECT id FROM jobs WHERE state IN ('succeeded', 'failed', 'cancelled')"
            f" AND NOT EXISTS (SELECT 1 FROM {table} WHERE {table}.{key} = jobs.id)"
        )
        return [r[0] for r in rows]

    def count(
        self,
        *,
        user: str | None = None,
        states: Sequence[JobState] | None = None,
        sweep_id: str | None = None,
        search: str | None = None,
    ) -> int:
        where, args = _where(user=user, states=states, sweep_id=sweep_id, search=search)
        return int(self._conn.execute(f"SELECT COUNT(*) FROM jobs{where}", args).fetchone()[0])
