"""A comment as kept (:class:`Comment`, a record of trainhub.jobs.records) and as the API
takes and answers it."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from trainhub.jobs.records import Record
from trainhub.jobs.specparts import NotBlank

MAX_BODY = 10_000  # characters of Markdown: a discussion, not a document
MAX_TARGET = 200


class CommentState(StrEnum):
    POSTED = "posted"  # never "running": a comment is nothing a reconcile advances


class Comment(Record):
    state: CommentState = CommentState.POSTED
    kind: str  # trainhub.comments.kinds
    target: str  # the object's id
    team: str | None = None
    body: str
    # Each teammate mentioned, and when (their notice's time: a mention added by an edit is
    # announced when it was added, one kept from before is not announced again).
    mentions: dict[str, float] = Field(default_factory=dict)
    edited_at: float | None = None
    # Whether the team reads the object: on a team volume the comment's file is then readable
    # by the team, else its author's alone.
    shared: bool = False


class CommentText(BaseModel):
    model_config = ConfigDict(extra="forbid")

    body: NotBlank = Field(
        min_length=1,
        max_length=MAX_BODY,
        description="Markdown; `@name` mentions a member of the team (who is notified)",
    )


class NewComment(CommentText):
    kind: str = Field(description="What is commented on: job, sweep, pipeline_run or model_version")
    target: str = Field(
        min_length=1, max_length=MAX_TARGET, description="Its id (a model version: NAME/VERSION)"
    )


class CommentView(BaseModel):
    id: str
    kind: str
    target: str
    user: str = Field(description="Who wrote it")
    created_at: float
    edited_at: float | None = Field(description="When it was last edited (None: never)")
    body: str = Field(description="Markdown, as written")
    mentions: list[str] = Field(description="The teammates it mentions")
    mine: bool = Field(description="Whether the reader wrote it (and may edit or delete it)")


class CommentList(BaseModel):
    comments: list[CommentView] = Field(description="Oldest first")


def view(comment: Comment, reader: str | None) -> CommentView:
    return CommentView(
        id=comment.id,
        kind=comment.kind,
        target=comment.target,
        user=comment.user,
        created_at=comment.created_at,
        edited_at=comment.edited_at,
        body=comment.body,
        mentions=list(comment.mentions),
        mine=reader is None or comment.user == reader,
    )
