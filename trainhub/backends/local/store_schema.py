"""The local store's SQLite tables and their migrations: what a new database is created
with, and how one written by an earlier trainhub is brought up to date when it is opened (the
store calls :func:`bring_up_to_date`; every process does, the first one migrates)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from trainhub.jobs.search import search_text

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
    pipeline_run      TEXT,
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
    process_groups    TEXT NOT NULL DEFAULT '[]',
    starts_from       TEXT
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
    "pipeline_run": (
        "TEXT",
        "CREATE INDEX IF NOT EXISTS jobs_by_pipeline_run ON jobs (pipeline_run, seq DESC)",
    ),
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

# Columns added to ``local_jobs`` since it was first written.
_ADDED_LOCAL_COLUMNS = {
    "starts_from": "TEXT",
    "workers": "INTEGER",
    "start_gpus": "INTEGER",
    "resize_reason": "TEXT",
}

# Databases written before ``local_jobs`` existed kept these columns in ``jobs``.
_MOVED_TO_LOCAL_JOBS = ("slots", "supervisor_pid", "supervisor_start", "process_groups")


def _fill_search(conn: sqlite3.Connection) -> None:
    """Tags (as submitted) and search text of the jobs written before the store kept them."""
    for job_id, raw in conn.execute("SELECT id, spec FROM jobs").fetchall():
        spec = json.loads(raw)
        tags = spec.get("tags") or []
        text = search_text(spec.get("name", ""), tags, "", spec.get("parameters") or {})
        conn.execute(
            "UPDATE jobs SET tags = ?, search = ? WHERE id = ?", (json.dumps(tags), text, job_id)
        )


def bring_up_to_date(
    conn: sqlite3.Connection, transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]
) -> None:
    """Create the tables a database lacks, migrate it to :data:`SCHEMA_VERSION` and add the
    columns of :data:`_ADDED_COLUMNS`; ``transaction``: the store's exclusive write
    transaction."""
    with conn:
        conn.executescript(SCHEMA)
    _migrate(conn, transaction)
    _add_columns(transaction)


def _migrate(
    conn: sqlite3.Connection, transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]
) -> None:
    """Bring a database written by an earlier trainhub up to :data:`SCHEMA_VERSION`."""
    if _version(conn) >= SCHEMA_VERSION:
        return
    with transaction() as conn:
        if _version(conn) >= SCHEMA_VERSION:
            return  # another process migrated it meanwhile
        columns = {row["name"] for row in conn.execute("PRAGMA table_info(jobs)")}
        if set(_MOVED_TO_LOCAL_JOBS) <= columns:
            moved = ", ".join(_MOVED_TO_LOCAL_JOBS)
            conn.execute(
                f"INSERT OR IGNORE INTO local_jobs (job_id, {moved}) SELECT id, {moved} FROM jobs"
            )
            for column in _MOVED_TO_LOCAL_JOBS:
                conn.execute(f"ALTER TABLE jobs DROP COLUMN {column}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _add_columns(transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]) -> None:
    """Add the columns of :data:`_ADDED_COLUMNS` (and their indexes) and of
    :data:`_ADDED_LOCAL_COLUMNS` a database lacks."""
    with transaction() as conn:
        columns = {row["name"] for row in conn.execute("PRAGMA table_info(jobs)")}
        for column, (kind, index) in _ADDED_COLUMNS.items():
            if column not in columns:
                conn.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
                if column == "search":
                    _fill_search(conn)
            if index:
                conn.execute(index)
        columns = {row["name"] for row in conn.execute("PRAGMA table_info(local_jobs)")}
        for column, kind in _ADDED_LOCAL_COLUMNS.items():
            if column not in columns:
                conn.execute(f"ALTER TABLE local_jobs ADD COLUMN {column} {kind}")


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])
