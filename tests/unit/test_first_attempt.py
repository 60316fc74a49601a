"""The checkpoint a local job's first attempt starts from is the one its submit decided, kept
in the store; a later attempt (a retry, a resume) looks for the latest again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.unit.test_checkpoint_confined import _write_checkpoint
from trainhub.backends.local.plan import starts_from
from trainhub.backends.local.store import Store
from trainhub.backends.local.store_rows import LocalJob
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState


def record(job_id: str, job_dir: Path, **spec: object) -> JobRecord:
    return JobRecord.of_spec(
        parse_spec({"name": "train", "source": {"path": "train.py"}, **spec}),
        id=job_id,
        user="ada",
        state=JobState.QUEUED,
        job_dir=str(job_dir),
        created_at=1.0,
    )


def test_a_first_attempt_starts_where_its_submit_decided_a_later_one_looks_again(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "trainhub.db")
    source_dir, fork_dir = tmp_path / "source-1", tmp_path / "fork-1"
    decided = str(_write_checkpoint(source_dir / "checkpoints", 10))
    fork_dir.mkdir()
    fork = record("fork-1", fork_dir, fork_from={"job_id": "source-1"})
    with store.transaction() as conn:
        store.insert(conn, record("source-1", source_dir))
        store.insert(conn, fork, LocalJob(slots=1, starts_from=decided))
    latest = str(_write_checkpoint(source_dir / "checkpoints", 20))  # saved after the submit

    assert store.local("fork-1").starts_from == decided
    assert starts_from(store, fork) == decided
    retry = fork.model_copy(update={"attempt": 1})
    assert starts_from(store, retry) == latest
    own = str(_write_checkpoint(fork_dir / "checkpoints", 3))  # once it saved its own
    assert starts_from(store, retry) == own
    assert starts_from(store, record("new-1", tmp_path / "new-1")) is None
    store.close()


def test_a_database_from_before_the_decision_was_kept_gains_its_column(tmp_path: Path) -> None:
    path = tmp_path / "trainhub.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE local_jobs DROP COLUMN starts_from")
    conn.close()
    store = Store(path)
    with store.transaction() as conn:
        store.insert(conn, record("a-1", tmp_path / "a-1"), LocalJob(starts_from="/ckpt"))
    assert store.local("a-1") == LocalJob(starts_from="/ckpt")
    store.close()
