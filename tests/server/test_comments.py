"""/trainhub/api/comments as two users of one server (their tokens): the owner of a job adds,
lists, edits and deletes comments on it; the other neither sees a private job's comments nor
touches them; on an object both read, another's comment is refused; a mention of a teammate
is among their notices. The users have names no other server test uses (the store is shared)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.server.conftest import insert_job
from tests.server.token_users import token_header, token_users_config
from trainhub.comments import kinds
from trainhub.jobs.service import JobService
from trainhub.jobs.states import JobState

TOKENS = {"token-of-rin": "rin", "token-of-oto": "oto"}


@pytest.fixture
def jp_server_config(jp_server_config: dict[str, Any], monkeypatch) -> dict[str, Any]:
    return token_users_config(jp_server_config, TOKENS, monkeypatch)


@pytest.fixture
def as_user(jp_fetch: Any) -> Any:
    async def call(
        user: str, method: str, *parts: str, body: Any = None, **params: str
    ) -> tuple[int, Any]:
        response = await jp_fetch(
            "trainhub",
            "api",
            *parts,
            method=method,
            params=params,
            body=None if body is None else json.dumps(body),
            headers=token_header(TOKENS, user),
            raise_error=False,
        )
        return response.code, json.loads(response.body or b"null")

    return call


@pytest.fixture
def team_note() -> Iterator[None]:
    """A kind both users read (as a model version of the team's registry will be)."""
    kinds.register(
        kinds.CommentKind(
            "note", "note", lambda s, i, u: kinds.Target("note", i, "rin", None, True)
        )
    )
    yield
    del kinds.KINDS["note"]


async def test_the_owner_comments_and_the_other_user_sees_nothing(
    as_user: Any, server_service: JobService
) -> None:
    job = insert_job(server_service, user="rin", state=JobState.SUCCEEDED)
    insert_job(server_service, user="oto", state=JobState.SUCCEEDED)
    status, made = await as_user(
        "rin",
        "POST",
        "comments",
        body={"kind": "job", "target": job.id, "body": "**up** @oto @nob"},
    )
    assert status == 201, made
    assert made["mentions"] == ["oto"] and made["user"] == "rin" and made["edited_at"] is None
    status, listed = await as_user("rin", "GET", "comments", kind="job", target=job.id)
    assert status == 200 and [c["body"] for c in listed["comments"]] == ["**up** @oto @nob"]
    assert listed["comments"][0]["mine"] is True
    status, edited = await as_user("rin", "PATCH", "comments", made["id"], body={"body": "up"})
    assert status == 200 and edited["body"] == "up" and edited["edited_at"] >= made["created_at"]

    # rin's job is private: oto neither reads its comments nor adds to them nor touches one.
    for method, parts, body, params in (
        ("GET", ("comments",), None, {"kind": "job", "target": job.id}),
        ("POST", ("comments",), {"kind": "job", "target": job.id, "body": "hi"}, {}),
        ("PATCH", ("comments", made["id"]), {"body": "mine"}, {}),
        ("DELETE", ("comments", made["id"]), None, {}),
    ):
        status, refused = await as_user("oto", method, *parts, body=body, **params)
        assert status == 404, (method, refused)
    _, notices = await as_user("oto", "GET", "notices")
    assert not [n for n in notices["notices"] if n["source"] == "rin"]  # nothing he may open

    # Bad input is refused naming the field.
    status, error = await as_user("rin", "GET", "comments", kind="model", target=job.id)
    assert status == 400 and error["errors"][0]["field"] == "kind", error
    status, error = await as_user(
        "rin", "POST", "comments", body={"kind": "job", "target": job.id, "body": " "}
    )
    assert status == 400 and error["errors"][0]["field"] == "body", error

    status, _ = await as_user("rin", "DELETE", "comments", made["id"])
    assert status == 204
    _, listed = await as_user("rin", "GET", "comments", kind="job", target=job.id)
    assert listed["comments"] == []


async def test_on_an_object_both_read_another_comment_is_refused_and_a_mention_is_a_notice(
    as_user: Any, server_service: JobService, team_note: None
) -> None:
    insert_job(server_service, user="oto", state=JobState.SUCCEEDED)
    _, made = await as_user(
        "rin", "POST", "comments", body={"kind": "note", "target": "n1", "body": "@oto look"}
    )
    status, refused = await as_user("oto", "PATCH", "comments", made["id"], body={"body": "x"})
    assert status == 403 and "only they can edit it" in refused["message"], refused
    status, refused = await as_user("oto", "DELETE", "comments", made["id"])
    assert status == 403, refused
    _, listed = await as_user("oto", "GET", "comments", kind="note", target="n1")
    assert [(c["body"], c["mine"]) for c in listed["comments"]] == [("@oto look", False)]
    _, notices = await as_user("oto", "GET", "notices")
    (notice,) = [n for n in notices["notices"] if n["source"] == "rin"]
    assert notice["message"] == "rin mentioned you on note n1: @oto look"
    _, later = await as_user("oto", "GET", "notices", after=str(notice["id"]))
    assert not [n for n in later["notices"] if n["source"] == "rin"]
