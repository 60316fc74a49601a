"""Comments (trainhub.comments): which @names are mentions, who may read, add, edit and delete
a comment (the object's rule; one's own comment only), where a comment's file is readable on
a team's volume, and how a mention reaches the person (a notice, an alert to their channels).
On a real local store; sharing with a team is the cluster's (tests/k8s/test_comments.py)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.server.conftest import insert_job
from trainhub.alerts.outbox import deliver_due
from trainhub.backends.local.backend import LocalBackend
from trainhub.comments import kinds
from trainhub.comments.board import Comments, team_members
from trainhub.comments.mentions import mentioned, named
from trainhub.comments.model import Comment
from trainhub.comments.notify import announce_mention, mention_notices, team_root
from trainhub.errors import NotFound, ReadOnly, TrainhubError
from trainhub.jobs.records import FileRecords
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import SpecError
from trainhub.jobs.states import JobState

TEAM = {"una", "ivo", "a.b-c"}


# --- mentions (pure) ---------------------------------------------------------------------------
def test_mentions_are_teammates_named_in_prose_each_once() -> None:
    text = "@una see this, @ivo. And @una again; (@a.b-c) and @zed and @ivo-"
    assert mentioned(text, TEAM) == ["una", "ivo", "a.b-c"]  # @zed: no member, plain text
    assert named("mail ivo@example.org or x@una") == []  # an address is no mention
    assert named("@ivo's idea, @una.") == ["ivo", "una"]  # trailing punctuation is the sentence's


def test_code_is_not_an_address() -> None:
    text = "run `@una` or\n```python\n@ivo\n```\n    @a.b-c\n~~~\n@una\n~~~\nthanks @ivo"
    assert mentioned(text, TEAM) == ["ivo"]
    assert mentioned("````\n```\n@una\n````\n@una", TEAM) == ["una"]  # a longer fence holds


def test_an_unknown_kind_is_refused_naming_the_field() -> None:
    with pytest.raises(SpecError) as refused:
        kinds.kind_of("model")
    assert refused.value.errors[0].field == "kind"
    assert "job, sweep, pipeline_run" in refused.value.errors[0].message


# --- the board on a real local store --------------------------------------------------------
@pytest.fixture
def board(tmp_path: Path) -> Comments:
    service = JobService(
        LocalBackend(tmp_path / "home", slots=2), jobs_root=tmp_path / "home" / "jobs"
    )
    return Comments(service, home=tmp_path / "home")


def test_the_owner_comments_and_another_user_sees_nothing_of_it(board: Comments) -> None:
    job = insert_job(board.service, user="una", state=JobState.SUCCEEDED)
    insert_job(board.service, user="ivo", state=JobState.SUCCEEDED)
    assert team_members(board.service, "una") == {"una", "ivo"}
    made = board.add(
        {"kind": "job", "target": job.id, "body": "loss **spiked**, @ivo @zed"}, user="una"
    )
    assert made.mentions == ["ivo"] and made.mine and made.edited_at is None
    (listed,) = board.list("job", job.id, user="una").comments
    assert listed.body == "loss **spiked**, @ivo @zed" and listed.user == "una"
    assert board.list("job", job.id, user=None).comments[0].mine  # the CLI of its own store

    # A private job: another user neither reads nor comments on it, nor touches a comment.
    for call in (
        lambda: board.list("job", job.id, user="ivo"),
        lambda: board.add({"kind": "job", "target": job.id, "body": "hi"}, user="ivo"),
        lambda: board.edit(made.id, {"body": "mine now"}, user="ivo"),
        lambda: board.delete(made.id, user="ivo"),
    ):
        with pytest.raises(NotFound):
            call()
    # ivo was mentioned, but cannot read the job: no notice for him.
    assert board.mentions("ivo") == []


def test_editing_keeps_a_marker_and_mentions_added_are_news(board: Comments) -> None:
    job = insert_job(board.service, user="una", state=JobState.SUCCEEDED)
    insert_job(board.service, user="ivo", state=JobState.SUCCEEDED)
    made = board.add({"kind": "job", "target": job.id, "body": "first"}, user="una")
    time.sleep(0.01)
    edited = board.edit(made.id, {"body": "second, @una"}, user="una")
    assert edited.body == "second, @una" and edited.edited_at and edited.edited_at > made.created_at
    assert edited.mentions == ["una"] and board.mentions("una") == []  # oneself: no notice
    with pytest.raises(SpecError) as blank:
        board.edit(made.id, {"body": "  \n"}, user="una")
    assert blank.value.errors[0].field == "body"
    with pytest.raises(SpecError):
        board.add({"kind": "job", "target": job.id, "body": "x" * 10_001}, user="una")
    board.delete(made.id, user="una")
    assert board.list("job", job.id, user="una").comments == []
    with pytest.raises(NotFound):
        board.delete(made.id, user="una")


def test_a_sweep_and_a_pipeline_run_follow_their_own_rules(board: Comments) -> None:
    with pytest.raises(NotFound, match="No sweep"):
        board.list("sweep", "nope-1a2b3c", user="una")
    with pytest.raises(NotFound, match="No pipeline run"):
        board.add({"kind": "pipeline_run", "target": "nope", "body": "x"}, user="una")


class Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        Receiver.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def ivos_webhook(tmp_path: Path, monkeypatch) -> Iterator[list[dict[str, Any]]]:
    """una's session on a team volume where ivo configured a webhook (a real receiver): what
    it receives."""
    Receiver.bodies = []
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    volume = tmp_path / "team"
    theirs = volume / ".trainhub" / "users" / "ivo" / "alerts.yaml"
    theirs.parent.mkdir(parents=True)
    theirs.write_text(f"webhooks: [http://127.0.0.1:{server.server_port}/hook]\n")
    mine = volume / ".trainhub" / "users" / "una" / "alerts.yaml"
    monkeypatch.setenv("TRAINHUB_ALERTS_FILE", str(mine))
    monkeypatch.setenv("TRAINHUB_ALERTS_OUTBOX", str(tmp_path / "outbox"))
    yield Receiver.bodies
    server.shutdown()


@pytest.fixture
def team_kind() -> Any:
    """A kind every member reads (as a model version of the team's registry will be): one
    registry entry, taken out again after the test."""
    kinds.register(
        kinds.CommentKind(
            "note", "note", lambda s, i, u: kinds.Target("note", i, "una", None, True)
        )
    )
    yield
    del kinds.KINDS["note"]


def test_on_an_object_both_read_only_the_author_edits_or_deletes(
    board: Comments, team_kind: Any, ivos_webhook: list[dict[str, Any]]
) -> None:
    insert_job(board.service, user="ivo", state=JobState.SUCCEEDED)
    made = board.add({"kind": "note", "target": "n1", "body": "@ivo look"}, user="una")
    assert board.list("note", "n1", user="ivo").comments[0].mine is False
    with pytest.raises(ReadOnly, match=r"Comment .* is una's: only they can edit it"):
        board.edit(made.id, {"body": "ivo's now"}, user="ivo")
    with pytest.raises(ReadOnly, match="only they can delete it"):
        board.delete(made.id, user="ivo")
    assert board.list("note", "n1", user="una").comments[0].body == "@ivo look"
    # ivo reads the note: his notice says who mentioned him where.
    (notice,) = board.mentions("ivo")
    assert notice.message == "una mentioned you on note n1: @ivo look" and notice.source == "una"
    assert board.mentions("ivo", after=notice.id) == []
    # ...and the sender, started as the comment was added, told his webhook.
    deadline = time.monotonic() + 30
    while not ivos_webhook and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [b["text"] for b in ivos_webhook] == [notice.message]
    # An edit that keeps the mention is no news for him.
    board.edit(made.id, {"body": "@ivo look again"}, user="una")
    assert board.mentions("ivo", after=notice.id) == []


def test_a_model_version_is_the_teams_to_discuss_by_its_number(board: Comments) -> None:
    from tests.unit.test_model_registry import make_job
    from trainhub.registry.refs import Source

    insert_job(board.service, user="ivo", state=JobState.SUCCEEDED)
    job = make_job(board.service.jobs_root)
    board.service.registry.register("clf", Source(job.id, path="model.pt"), job, user="una")
    made = board.add({"kind": "model_version", "target": "clf/v1", "body": "@ivo ok?"}, user="una")
    assert (made.target, made.mentions) == ("clf/1", ["ivo"])
    # Every member reads the team's registry: ivo reads, is told, and cannot edit una's.
    assert [c.body for c in board.list("model_version", "clf/1", user="ivo").comments] == [
        "@ivo ok?"
    ]
    assert [n.message for n in board.mentions("ivo")] == [
        "una mentioned you on model version clf/1: @ivo ok?"
    ]
    with pytest.raises(ReadOnly):
        board.edit(made.id, {"body": "no"}, user="ivo")
    with pytest.raises(SpecError) as moving:  # an alias moves: a discussion stays with a number
        board.list("model_version", "clf@production", user="una")
    assert moving.value.errors[0].field == "target"
    with pytest.raises(NotFound):
        board.list("model_version", "clf/9", user="una")


# --- on a team's volume -----------------------------------------------------------------------
def comment(**fields: Any) -> Comment:
    data = {
        "id": "c-1",
        "user": "una",
        "created_at": 1.0,
        "kind": "job",
        "target": "j",
        "body": "b",
    }
    return Comment.model_validate({**data, **fields})


def test_on_a_guarded_volume_a_comment_is_the_teams_to_read_only_on_a_shared_object(
    tmp_path: Path,
) -> None:
    root = tmp_path / ".comments"
    root.mkdir()
    os.chmod(root, 0o1777)  # as the controller prepares it: members own their files
    files = FileRecords(root, Comment, team_readable=lambda c: c.shared)
    files.create(comment(id="c-private"))
    files.create(comment(id="c-shared", shared=True))
    assert (root / "c-private.json").stat().st_mode & 0o777 == 0o600
    assert (root / "c-shared.json").stat().st_mode & 0o777 == 0o644
    with files.change("c-shared") as kept:
        assert kept is not None
        kept.body = "edited"
    assert (root / "c-shared.json").stat().st_mode & 0o777 == 0o644


# --- how a mention reaches the person ---------------------------------------------------------
def test_a_notice_for_each_mention_of_the_reader_not_by_themselves() -> None:
    found = mention_notices(
        [
            (comment(id="c-2", mentions={"ivo": 2.0}, body="two\n lines"), "job"),
            (comment(id="c-1", mentions={"ivo": 1.0, "una": 1.0}), "sweep"),
            (comment(id="c-3", user="ivo", mentions={"ivo": 3.0}), "job"),
        ],
        "ivo",
        after=0,
    )
    assert [(n.id, n.message) for n in found] == [
        (1000, "una mentioned you on sweep j: b"),
        (2000, "una mentioned you on job j: two lines"),
    ]
    assert [
        n.id for n in mention_notices([(comment(mentions={"ivo": 1.0}), "job")], "ivo", 1000)
    ] == []


def test_a_mention_goes_to_the_channels_the_person_configured(
    tmp_path: Path, ivos_webhook: list[dict[str, Any]]
) -> None:
    mine = Path(os.environ["TRAINHUB_ALERTS_FILE"])
    assert team_root(mine, "una") == tmp_path / "team"
    assert team_root(tmp_path / "alerts.yaml", "una") is None
    said = comment(id="c-9", mentions={"ivo": 5.0}, body="@ivo token=abcdef123456 looks off")
    for _ in range(2):  # queued once per comment, person and mention
        assert announce_mention(tmp_path, said, "job", "ivo", start_sender=False) is None
    deliver_due(tmp_path / "outbox", time.time())
    (body,) = ivos_webhook
    assert body["text"] == "una mentioned you on job j: @ivo token=[redacted] looks off"
    # Nobody configured anything for una: nothing is queued for her.
    assert (
        announce_mention(tmp_path, comment(mentions={"una": 5.0}), "job", "una", start_sender=False)
        is None
    )


# --- the command line ---------------------------------------------------------------------------
def test_the_cli_lists_adds_edits_and_deletes(board: Comments, monkeypatch, capsys) -> None:
    import getpass

    from trainhub.cli import parser
    from trainhub.comments import cli

    monkeypatch.setattr(cli, "_comments", lambda: board)  # the CLI's board, on this store
    me = getpass.getuser()
    job = insert_job(board.service, user=me, state=JobState.SUCCEEDED)

    def run(*argv: str) -> str:
        args = parser().parse_args(["comments", *argv])
        assert args.func(args) == 0
        return capsys.readouterr().out

    assert run(job.id) == "No comments.\n"
    made = run("add", job.id, "loss *spiked*\nat step 40").strip()
    run("edit", made, "loss *spiked* at step 40")
    listed = run(job.id)
    assert listed.startswith(f"{made}  {me}  ") and "ago (edited)" in listed
    assert listed.endswith("\n    loss *spiked* at step 40\n")
    assert json.loads(run(job.id, "--json"))["comments"][0]["edited_at"] is not None
    assert run("delete", made) == f"{made}: deleted\n"
    with pytest.raises(TrainhubError, match="usage: trainhub comments"):
        run("add", job.id)
