"""A page of jobs as the REST API answers it (trainhub.jobs.views.PageRows.json): the JSON
JobPage's model writes, made of each row's JSON, which a kept summary writes once; and the page
as sent (PageRows.body), kept while it is made of the same rows."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.jobs.views import Bodies, PageRows, Row, Summaries, summary

QUEUED = ("waiting for 2 nvidia.com/gpu in pool a100 (8 of 8 in use)", 3)


class Backend:
    """What a summary asks of a backend when no wait is given: nothing here."""

    def wait_reason(self, record: JobRecord) -> tuple[str | None, int | None]:
        raise AssertionError("every wait is given")


def record(n: int, **fields: Any) -> JobRecord:
    spec = parse_spec(
        {
            "name": f"train-{n}",
            "source": {"path": 'nb/tränen "v2".ipynb'},
            "parameters": {"lr": 0.0003, "layers": [4, 8], "note": 'ü\n"q"', "big": 2**53},
            "tags": ["a", "ß"],
        }
    )
    return JobRecord.of_spec(
        spec,
        **{
            "id": f"train-{n}-1a2b3c4d",
            "user": "ada",
            "state": JobState.QUEUED,
            "job_dir": f"/volumes/nlp/jobs/train-{n}-1a2b3c4d",
            "created_at": 1796530934.4788394 + n,
            "seq": 1796530934478 + n,
            **fields,
        },
    )


def rows(*records: JobRecord) -> list[Row]:
    return [Row(summary(Backend(), r, QUEUED)) for r in records]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "page",
    [
        PageRows([], None, 0),
        PageRows(rows(record(1)), None, 1),
        PageRows(
            rows(
                record(1, note='a note — with "quotes" and \\ \u2028', shared="team"),
                record(
                    2,
                    state=JobState.FAILED,
                    verdict=Verdict(failure_class=FailureClass.CODE, reason="it raised"),
                    started_at=1796530999.5,
                    finished_at=1796531000.25,
                ),
                record(3, resubmitted_from="train-0-1a2b3c4d", attempt=2),
            ),
            1796530934481,
            1000,
        ),
    ],
)
def test_the_page_written_of_its_rows_is_what_the_model_writes(page: PageRows) -> None:
    assert page.json() == page.model().model_dump_json()
    assert json.loads(page.json())["total"] == page.total


def test_a_kept_summary_is_serialized_once_while_its_record_and_wait_stay() -> None:
    summaries, backend, job = Summaries(), Backend(), record(1)
    row = summaries.of(backend, job, QUEUED)  # type: ignore[arg-type]
    assert row.json is row.json  # written once
    assert summaries.of(backend, job, QUEUED) is row  # type: ignore[arg-type]
    moved = ("waiting for 2 nvidia.com/gpu in pool a100 (6 of 8 in use)", 1)
    again = summaries.of(backend, job, moved)  # type: ignore[arg-type]
    assert again is not row and json.loads(again.json)["wait_reason"] == moved[0]
    edited = job.model_copy(update={"note": "changed"})
    assert json.loads(summaries.of(backend, edited, moved).json)["note"] == "changed"  # type: ignore[arg-type]


def test_a_page_of_the_same_rows_is_sent_as_the_same_body_until_one_changes() -> None:
    summaries, backend, jobs = Summaries(), Backend(), [record(1), record(2)]

    def page(*made: Row, total: int = 2) -> PageRows:
        return PageRows(list(made), None, total, summaries.bodies)

    made = [summaries.of(backend, j, QUEUED) for j in jobs]  # type: ignore[arg-type]
    body = page(*made).body()
    assert body.data == page(*made).model().model_dump_json().encode()
    assert body.etag == f'"{hashlib.sha1(body.data).hexdigest()}"'  # as the web server hashes
    assert page(*made).body() is body  # the same rows: neither written nor hashed again
    assert page(*made, total=3).body() is not body  # another total
    edited = summaries.of(backend, jobs[1].model_copy(update={"note": "n"}), QUEUED)  # type: ignore[arg-type]
    changed = page(made[0], edited).body()
    assert changed is not body and json.loads(changed.data)["jobs"][1]["note"] == "n"
    assert PageRows(made, None, 2).body() == body  # not kept: written again, alike


def test_kept_bodies_are_bounded() -> None:
    bodies, row = Bodies(), rows(record(1))
    for total in range(Bodies.KEPT + 1):
        bodies.of(PageRows(row, None, total))
    assert len(bodies._held) <= Bodies.KEPT
