"""Names of reruns, the search rule, and what the job directory and the store keep for them:
edits after submission, the latest scalar, and a store written before the search column."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from trainhub.backends.local.store import Store
from trainhub.jobs.directory import SCALAR_TAIL_BYTES, JobDir, append_jsonl
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.models import JobRecord
from trainhub.jobs.naming import slug_name, successor_name
from trainhub.jobs.search import matches, search_text
from trainhub.jobs.spec import default_name, parse_spec
from trainhub.jobs.states import JobState


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("sweep-lr-0.001", "sweep-lr-0-001"),
        ("  My Run (v2)!  ", "my-run-v2"),
        ("...", "job"),
        ("a" * 39 + "-b", "a" * 39),
    ],
)
def test_slug_name(text: str, name: str) -> None:
    assert slug_name(text) == name
    assert parse_spec({"name": name, "source": {"path": "a.ipynb"}}).name == name


def test_default_name_uses_the_same_rule() -> None:
    assert default_name("dir/Sweep LR 0.001.ipynb") == "sweep-lr-0-001"


def test_successor_name() -> None:
    assert successor_name("train", []) == "train-2"
    assert successor_name("train", ["train", "train-2", "train-7", "trainer-9"]) == "train-8"
    assert successor_name("train-2", ["train", "train-2"], numbered=True) == "train-3"
    assert successor_name("resnet-50", ["resnet-50"]) == "resnet-50-2"  # not a number of ours
    long = successor_name("x" * 40, [])
    assert len(long) == 40 and long.endswith("-2")


def test_search_rule() -> None:
    text = search_text("resnet", ["Baseline"], "diverged at 900", {"lr": 0.001, "opt": "adam"})
    for search in ("resnet", "baseline", "DIVERGED", "lr=0.001", "0.001 adam", ""):
        assert matches(text, search), search
    assert not matches(text, "resnet sgd")


def test_edits_live_in_the_job_directory(tmp_path: Path) -> None:
    jobdir = JobDir(tmp_path / "job").create()
    never = {"tags": ["submitted"], "note": "", "shared": "private"}
    assert jobdir.read_edits(["submitted"]) == never
    jobdir.write_edits(["best"], "kept")
    assert jobdir.read_edits(["submitted"]) == {
        "tags": ["best"],
        "note": "kept",
        "shared": "private",
    }
    jobdir.write_edits(["best"], "kept", "team")
    assert jobdir.read_edits(["submitted"])["shared"] == "team"
    # Anything but the one word the owner's edit writes is private.
    (jobdir.root / "edits.json").write_text('{"tags": [], "note": "", "shared": "everyone"}')
    assert jobdir.read_edits(["submitted"])["shared"] == "private"
    # A job that swapped the file for a link is not read through: the submitted tags stand.
    (jobdir.root / "edits.json").unlink()
    (jobdir.root / "edits.json").symlink_to("/etc/passwd")
    assert jobdir.read_edits(["submitted"]) == never
    jobdir.write_edits(["again"], "")  # replaced, never written through
    assert (jobdir.root / "edits.json").is_file() and not (jobdir.root / "edits.json").is_symlink()


def test_last_scalar_reads_the_tail(tmp_path: Path) -> None:
    jobdir = JobDir(tmp_path / "job").create()
    assert jobdir.last_scalar("loss") is None
    path = jobdir.metrics / "scalars.jsonl"
    append_jsonl(path, {"time": 1.0, "step": 0, "name": "acc", "value": 0.1})
    for step in range(5000):
        append_jsonl(path, {"time": 1.0, "step": step, "name": "loss", "value": 1.0 / (step + 1)})
    assert path.stat().st_size > SCALAR_TAIL_BYTES
    assert jobdir.last_scalar("loss")["step"] == 4999
    assert jobdir.last_scalar("acc") is None  # only in the head, past what a list reads
    with path.open("ab") as f:
        f.write(b'{"name": "loss", "step": 5000, "val')  # a line being written
    assert jobdir.last_scalar("loss")["step"] == 4999


OLD_SCHEMA = """
CREATE TABLE jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
    user TEXT NOT NULL, team TEXT, queue TEXT, priority INTEGER NOT NULL, state TEXT NOT NULL,
    spec TEXT NOT NULL, job_dir TEXT NOT NULL, gpus INTEGER NOT NULL,
    assigned_gpus TEXT NOT NULL DEFAULT '[]', created_at REAL NOT NULL, admitted_at REAL,
    started_at REAL, finished_at REAL, attempt INTEGER NOT NULL DEFAULT 0,
    retries TEXT NOT NULL DEFAULT '{}', verdict TEXT, cancel_requested INTEGER NOT NULL DEFAULT 0,
    cancel_reason TEXT, resubmitted_from TEXT, updated_at REAL NOT NULL
);
CREATE TABLE local_jobs (job_id TEXT PRIMARY KEY, slots INTEGER NOT NULL DEFAULT 0,
    supervisor_pid INTEGER, supervisor_start REAL, process_groups TEXT NOT NULL DEFAULT '[]');
PRAGMA user_version = 1;
"""


def test_a_store_written_before_search_is_found_and_editable(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    spec = {
        "name": "old-run",
        "source": {"path": "a.ipynb"},
        "parameters": {"lr": 0.003},
        "tags": ["legacy"],
    }
    conn.execute(
        "INSERT INTO jobs (id, name, user, priority, state, spec, job_dir, gpus, created_at,"
        " updated_at) VALUES ('old-run-1', 'old-run', 'ann', 1, 'succeeded', ?, '/x', 0, 1, 1)",
        (json.dumps(spec),),
    )
    conn.commit()
    conn.close()

    store = Store(path)
    try:
        record = store.get("old-run-1")
        assert record is not None and record.tags == ["legacy"] and record.note == ""
        assert [r.id for r in store.list_jobs(JobFilter(user="ann", search="lr=0.003 legacy"))] == [
            "old-run-1"
        ]
        assert store.count(JobFilter(user="ann", search="LEGACY")) == 1
        assert store.count(JobFilter(user="bob", search="legacy")) == 0
        store.edit("old-run-1", tags=["kept"], note="the first of its kind")
        assert store.count(JobFilter(user="ann", search="legacy")) == 0
        assert store.count(JobFilter(user="ann", search="first kind kept")) == 1
        assert store.get("old-run-1").spec.tags == ["legacy"]  # the spec as submitted
        plan = store.connection().execute(
            "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE user = ? AND search LIKE ?"
            " ORDER BY seq DESC LIMIT 50",
            ("ann", "%x%"),
        )
        assert "jobs_search" in " ".join(str(tuple(row)) for row in plan)
    finally:
        store.close()


def test_a_new_job_is_found_by_what_it_was_given(tmp_path: Path) -> None:
    store = Store(tmp_path / "jobs.db")
    try:
        spec = parse_spec(
            {"name": "fresh", "source": {"path": "a.ipynb"}, "parameters": {"bs": 64}}
        )
        record = JobRecord(
            id=f"fresh-{os.urandom(2).hex()}",
            name="fresh",
            user="ann",
            priority=1,
            state=JobState.QUEUED,
            spec=spec,
            job_dir="/x",
            gpus=0,
            created_at=time.time(),
            tags=["t1"],
        )
        with store.transaction() as conn:
            store.insert(conn, record)
        assert store.count(JobFilter(user="ann", search="bs=64 t1 fresh")) == 1
        assert store.count(JobFilter(user="ann", search="100%")) == 0  # % is itself
    finally:
        store.close()
