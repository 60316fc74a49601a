"""A job's sweep: the spec's ``sweep`` reference, the record's ``sweep_id``, and the store's
column and index that let the jobs list show one sweep's trials."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from trainhub.backends.local.store import Store
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import SpecError, parse_spec
from trainhub.jobs.states import JobState

from .test_store import SCHEMA_BEFORE_LOCAL_JOBS


def spec(sweep: object = None) -> dict:
    data: dict = {"name": "train", "source": {"path": "train.ipynb"}}
    if sweep is not None:
        data["sweep"] = sweep
    return data


def record(job_id: str, sweep_id: str | None) -> JobRecord:
    sweep = {"id": sweep_id, "trial": 0} if sweep_id else None
    return JobRecord(
        id=job_id,
        name="train",
        user="ada",
        priority=1,
        state=JobState.QUEUED,
        spec=parse_spec(spec(sweep)),
        job_dir=f"/jobs/{job_id}",
        gpus=0,
        created_at=1.0,
    )


def test_a_sweep_reference_is_validated_naming_the_field() -> None:
    assert parse_spec(spec({"id": "lr-3f2a", "trial": 4})).sweep.trial == 4  # type: ignore[union-attr]
    assert parse_spec(spec()).sweep is None
    with pytest.raises(SpecError) as bad_id:
        parse_spec(spec({"id": "Not A Sweep", "trial": 0}))
    assert bad_id.value.errors[0].field == "sweep.id"
    assert "lower-case letters" in bad_id.value.errors[0].message
    with pytest.raises(SpecError) as bad_trial:
        parse_spec(spec({"id": "lr-3f2a", "trial": -1}))
    assert bad_trial.value.errors[0].field == "sweep.trial"
    with pytest.raises(SpecError) as extra:
        parse_spec(spec({"id": "lr-3f2a", "trial": 0, "best": True}))
    assert extra.value.errors[0].field == "sweep.best"


def test_the_record_takes_its_sweep_id_from_the_spec() -> None:
    assert record("a", "lr-3f2a").sweep_id == "lr-3f2a"
    assert record("b", None).sweep_id is None
    # Whatever a caller says, the spec decides: the store's column cannot disagree with it.
    forced = record("c", None).model_dump()
    forced["sweep_id"] = "other"
    assert JobRecord.model_validate(forced).sweep_id is None


def test_the_store_lists_and_counts_one_sweep(tmp_path: Path) -> None:
    store = Store(tmp_path / "trainhub.db")
    with store.transaction() as conn:
        for i, sweep in enumerate(["s1", None, "s2", "s1"]):
            store.insert(conn, record(f"j{i}", sweep))
    assert [r.id for r in store.list_jobs(JobFilter(sweep_id="s1"))] == ["j3", "j0"]
    assert (
        store.count(JobFilter(sweep_id="s1")) == 2 and store.count(JobFilter(sweep_id="none")) == 0
    )
    assert store.get("j3").sweep_id == "s1"  # type: ignore[union-attr]
    plan = store._conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE sweep_id = ? ORDER BY seq DESC", ("s1",)
    ).fetchall()
    assert any("jobs_by_sweep" in row[-1] for row in plan)
    store.close()


def test_an_older_database_gains_the_sweep_column(tmp_path: Path) -> None:
    path = tmp_path / "trainhub.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA_BEFORE_LOCAL_JOBS)
    conn.close()
    store = Store(path)
    with store.transaction() as conn:
        store.insert(conn, record("new", "s1"))
    assert [r.id for r in store.list_jobs(JobFilter(sweep_id="s1"))] == ["new"]
    store.close()
    Store(path).close()  # opening it again adds nothing twice
