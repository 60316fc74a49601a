"""The server's notices: posted (by the hub's idle-GPU service, say), read on with ``after``,
the latest 50 kept, bad input refused naming the field; through the real server."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.conftest import USER
from trainhub_server.notices import KEPT, MESSAGE_MOST, NewNotice, Notices


def test_ids_increase_and_stay_above_those_of_an_earlier_run() -> None:
    notices = Notices()
    first = notices.add(NewNotice(message="a"), source="s", now=1000.0)
    second = notices.add(NewNotice(message="b"), source="s", now=1000.0)  # the same millisecond
    assert (first.id, second.id) == (1_000_000, 1_000_001)
    restarted = Notices()  # a new run of the server, a moment later, starts above them
    assert restarted.add(NewNotice(message="c"), source="s", now=1000.5).id > second.id


def test_only_the_latest_are_kept_oldest_first() -> None:
    notices = Notices(kept=3)
    added = [notices.add(NewNotice(message=str(i)), source="s", now=float(i)) for i in range(5)]
    assert [n.message for n in notices.after(0).notices] == ["2", "3", "4"]
    assert notices.after(added[3].id).notices == [added[4]]
    assert notices.after(added[4].id).notices == []


async def test_a_posted_notice_is_read_back_with_its_poster_as_source(api: Any) -> None:
    status, posted, _ = await api(
        "POST", "notices", body={"level": "warning", "message": "GPUs idle"}
    )
    assert status == 201, posted
    assert posted["level"] == "warning" and posted["message"] == "GPUs idle"
    assert posted["source"] == USER
    status, page, _ = await api("GET", "notices")
    assert status == 200
    assert page == {"notices": [posted]}


async def test_after_reads_on_in_order_and_only_the_latest_are_kept(api: Any) -> None:
    ids = []
    for i in range(KEPT + 5):
        status, posted, _ = await api("POST", "notices", body={"message": f"n{i}"})
        assert status == 201, posted
        assert posted["level"] == "info"
        ids.append(posted["id"])
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    _, page, _ = await api("GET", "notices")
    assert [n["message"] for n in page["notices"]] == [f"n{i}" for i in range(5, KEPT + 5)]
    _, page, _ = await api("GET", "notices", params={"after": str(ids[-3])})
    assert [n["id"] for n in page["notices"]] == ids[-2:]
    _, page, _ = await api("GET", "notices", params={"after": str(ids[-1])})
    assert page == {"notices": []}


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ("", "body", "send a JSON object"),
        ("[1]", "body", "must be a JSON object"),
        ({}, "message", "required"),
        ({"message": "   "}, "message", "must not be blank"),
        ({"message": "x" * (MESSAGE_MOST + 1)}, "message", str(MESSAGE_MOST)),
        ({"message": 5}, "message", "string"),
        ({"message": "hi", "level": "loud"}, "level", "'info', 'warning' or 'error'"),
        ({"message": "hi", "source": "admin"}, "source", "not a known field"),
    ],
)
async def test_a_bad_notice_is_refused_naming_the_field(
    api: Any, body: Any, field: str, words: str
) -> None:
    status, error, _ = await api("POST", "notices", body=body)
    assert status == 400, error
    assert [e["field"] for e in error["errors"]] == [field], error
    assert words in error["errors"][0]["message"], error
    _, page, _ = await api("GET", "notices")
    assert page == {"notices": []}


@pytest.mark.parametrize("after", ["-1", "soon", "", str(2**53 + 1)])
async def test_a_bad_after_is_refused_naming_it(api: Any, after: str) -> None:
    status, error, _ = await api("GET", "notices", params={"after": after})
    assert status == 400, error
    assert [e["field"] for e in error["errors"]] == ["after"], error
