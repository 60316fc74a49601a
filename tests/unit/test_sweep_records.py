"""Sweep records in both homes: the local store's table and a cluster's jobs root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainhub.backends.local.store import Store
from trainhub.experiments.records import (
    FileSweeps,
    StoreSweeps,
    SweepRecord,
    SweepRecords,
    SweepState,
    Trial,
)
from trainhub.experiments.sweep import SweepSpec
from trainhub.jobs.confined import NotAJobFile
from trainhub.jobs.spec import parse_spec


def record(sweep_id: str, user: str = "ada", created: float = 1.0) -> SweepRecord:
    return SweepRecord(
        id=sweep_id,
        name="train",
        user=user,
        created_at=created,
        job=parse_spec({"name": "train", "source": {"path": "train.ipynb"}}),
        sweep=SweepSpec.model_validate({"space": {"lr": {"values": [0.1, 0.2]}}, "seed": 4}),
    )


@pytest.fixture(params=["store", "files"])
def records(request: pytest.FixtureRequest, tmp_path: Path) -> SweepRecords:
    if request.param == "store":
        return StoreSweeps(Store(tmp_path / "trainhub.db"))
    return FileSweeps(tmp_path / "jobs" / ".sweeps")


def test_records_keep_the_sweep_and_its_trials(records: SweepRecords) -> None:
    records.create(record("a-1", created=1.0))
    records.create(record("b-2", user="bo", created=2.0))
    assert [r.id for r in records.list()] == ["b-2", "a-1"]
    assert [r.id for r in records.list("ada")] == ["a-1"]
    assert records.get("missing") is None
    with records.change("a-1") as r:
        assert r is not None
        r.trials.append(Trial(trial=0, parameters={"lr": 0.1}, job_id="j0"))
    with records.change("b-2") as r:
        assert r is not None
        r.state = SweepState.CANCELLED
    again = records.get("a-1")
    assert again is not None and again.trials[0].job_id == "j0" and again.seed == 4
    assert records.active_ids() == ["a-1"]  # type: ignore[attr-defined]
    with records.change("missing") as nothing:
        assert nothing is None


def test_a_change_that_fails_leaves_the_record_as_it_was(records: SweepRecords) -> None:
    records.create(record("a-1"))
    with pytest.raises(RuntimeError), records.change("a-1") as r:
        assert r is not None
        r.state = SweepState.CANCELLED
        raise RuntimeError("the step failed")
    assert records.get("a-1").state == SweepState.RUNNING  # type: ignore[union-attr]


def test_a_record_replaced_by_a_link_is_refused(tmp_path: Path) -> None:
    records = FileSweeps(tmp_path / ".sweeps")
    records.create(record("a-1"))
    secret = tmp_path / "secret.json"
    secret.write_text(record("a-1", user="mallory").model_dump_json())
    os.replace(tmp_path / ".sweeps" / "a-1.json", tmp_path / "moved.json")
    os.symlink(secret, tmp_path / ".sweeps" / "a-1.json")
    with pytest.raises(NotAJobFile):
        records.get("a-1")
    assert records.list() == []  # one broken record never hides the others, nor is read
    assert records.get("../secret") is None and records.get(".lock") is None
