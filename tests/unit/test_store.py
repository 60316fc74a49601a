"""The local backend's SQLite store: records, what only the local backend keeps, migrations."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from trainhub.backends.local.store import Store
from trainhub.backends.local.store_rows import LocalJob
from trainhub.backends.local.store_schema import SCHEMA_VERSION
from trainhub.jobs.filter import EVERY_JOB, JobFilter
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState

SPEC = parse_spec({"name": "train", "source": {"path": "train.ipynb"}})

# The jobs table as databases written before the local_jobs table have it.
SCHEMA_BEFORE_LOCAL_JOBS = """
CREATE TABLE jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
    user TEXT NOT NULL, team TEXT, queue TEXT, priority INTEGER NOT NULL, state TEXT NOT NULL,
    spec TEXT NOT NULL, job_dir TEXT NOT NULL, gpus INTEGER NOT NULL, slots INTEGER NOT NULL,
    assigned_gpus TEXT NOT NULL DEFAULT '[]', created_at REAL NOT NULL, admitted_at REAL,
    started_at REAL, finished_at REAL, attempt INTEGER NOT NULL DEFAULT 0,
    retries TEXT NOT NULL DEFAULT '{}', verdict TEXT, supervisor_pid INTEGER,
    supervisor_start REAL, process_groups TEXT NOT NULL DEFAULT '[]',
    cancel_requested INTEGER NOT NULL DEFAULT 0, cancel_reason TEXT, resubmitted_from TEXT,
    updated_at REAL NOT NULL
);
CREATE INDEX jobs_by_state ON jobs (state, priority DESC, seq);
CREATE INDEX jobs_by_user ON jobs (user, seq DESC);
"""


def record(job_id: str, state: JobState = JobState.QUEUED, user: str = "ada") -> JobRecord:
    return JobRecord(
        id=job_id,
        name="train",
        user=user,
        priority=1,
        state=state,
        spec=SPEC,
        job_dir=f"/jobs/{job_id}",
        gpus=0,
        created_at=1.0,
    )


def test_an_older_database_moves_the_local_columns_into_their_own_table(tmp_path: Path) -> None:
    path = tmp_path / "trainhub.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA_BEFORE_LOCAL_JOBS)
        conn.execute(
            "INSERT INTO jobs (id, name, user, priority, state, spec, job_dir, gpus, slots,"
            " created_at, attempt, retries, supervisor_pid, supervisor_start, process_groups,"
            " updated_at) VALUES ('old-1', 'train', 'ada', 1, 'running', ?, '/jobs/old-1', 0, 2,"
            " 1.0, 1, '{\"infrastructure\": 1}', 4242, 99.5, '[4243, 4244]', 1.0)",
            (SPEC.model_dump_json(),),
        )
    conn.close()

    store = Store(path)
    old = store.get("old-1")
    assert old is not None and old.state == JobState.RUNNING and old.seq == 1
    assert old.retries == {"infrastructure": 1} and old.attempt == 1
    assert store.local("old-1") == LocalJob(
        slots=2, supervisor_pid=4242, supervisor_start=99.5, process_groups=(4243, 4244)
    )
    assert store.holdings([JobState.RUNNING]) == [([], 2)]
    columns = {row["name"] for row in store._conn.execute("PRAGMA table_info(jobs)")}
    assert not columns & {"slots", "supervisor_pid", "supervisor_start", "process_groups"}
    store.close()

    again = Store(path)  # migrated once: opening it again changes nothing
    assert again._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert again.local("old-1").supervisor_pid == 4242
    with again.transaction() as conn:
        new = again.insert(conn, record("new-1"), LocalJob(slots=1))
    assert new.seq == 2
    again.close()


def test_local_fields_live_beside_the_record(tmp_path: Path) -> None:
    store = Store(tmp_path / "trainhub.db")
    with store.transaction() as conn:
        store.insert(conn, record("a", JobState.RUNNING), LocalJob(slots=3, supervisor_pid=7))
        store.insert(conn, record("b"))
    store.update_local(None, "a", process_groups=[8, 9], supervisor_start=2.5)
    store.update(None, "a", attempt=1)

    assert store.local("a") == LocalJob(
        slots=3, supervisor_pid=7, supervisor_start=2.5, process_groups=(8, 9)
    )
    assert store.local("b") == LocalJob() and store.local("missing") == LocalJob()
    [(running, local)] = store.with_local([JobState.RUNNING, JobState.STARTING])
    assert running.id == "a" and running.attempt == 1 and local.process_groups == (8, 9)
    assert store.queue_head(conn, limit=10) == [("b", 1, 2, 0, 0)]
    assert "supervisor_pid" not in json.loads(running.model_dump_json())
    store.close()


def test_list_and_count_filter_alike(tmp_path: Path) -> None:
    store = Store(tmp_path / "trainhub.db")
    with store.transaction() as conn:
        for i, (state, user) in enumerate(
            [
                (JobState.QUEUED, "ada"),
                (JobState.FAILED, "ada"),
                (JobState.QUEUED, "bo"),
                (JobState.QUEUED, "ada"),
            ]
        ):
            store.insert(conn, record(f"j{i}", state, user))
    queued = [JobState.QUEUED]
    assert [r.id for r in store.list_jobs(JobFilter(user="ada", states=queued))] == ["j3", "j0"]
    assert store.count(JobFilter(user="ada", states=queued)) == 2
    assert [r.id for r in store.list_jobs(EVERY_JOB, before_seq=4, limit=2)] == ["j2", "j1"]
    assert store.count() == 4 and store.count(JobFilter(states=[JobState.FAILED])) == 1
    store.close()
