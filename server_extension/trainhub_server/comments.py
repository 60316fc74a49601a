"""Comments in the REST API (trainhub.comments): their operations as the OpenAPI document
tells them, their query, and mentions among the notices JupyterLab shows.

The routes are generic over the commented object's kind (``?kind=job&target=<id>``), so a
new kind of trainhub.comments.kinds needs no route of its own.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from trainhub.comments.model import MAX_TARGET, CommentList, CommentText, CommentView, NewComment
from trainhub.comments.notify import MentionNotice
from trainhub_server.notices import MESSAGE_MOST, SOURCE_MOST, Notice, NoticeList
from trainhub_server.operations import Operation
from trainhub_server.payloads import Query

MENTIONS_SHOWN = 10  # the newest mentions a notice read adds
MENTIONS_FOR = 3 * 24 * 3600.0  # seconds a mention stays news (the comment stays listed)


class CommentsParams(Query):
    kind: str = Field(description="What is commented on: job, sweep, pipeline_run or model_version")
    target: str = Field(
        min_length=1, max_length=MAX_TARGET, description="Its id (a model version: NAME/VERSION)"
    )


COMMENT_PARAMETERS: dict[str, dict[str, Any]] = {
    "comment_id": {"type": "string", "minLength": 1},
}

COMMENT_OPERATIONS: dict[tuple[str, str], Operation] = {
    ("/comments", "get"): Operation(
        "The comments on an object the user may read (their own job, or one their team "
        "shared), oldest first",
        CommentList,
        query=CommentsParams,
        errors=(400, 404),
    ),
    ("/comments", "post"): Operation(
        "Comment on an object the user may read; each `@name` of a teammate who may read it "
        "notifies them (a notice in JupyterLab, an alert to their channels)",
        CommentView,
        status=201,
        body=NewComment,
        body_required=True,
        errors=(400, 404, 413),
    ),
    ("/comments/{comment_id}", "patch"): Operation(
        "Edit one's own comment (it shows as edited); another's is refused",
        CommentView,
        body=CommentText,
        body_required=True,
        errors=(400, 404, 413),
    ),
    ("/comments/{comment_id}", "delete"): Operation(
        "Delete one's own comment; another's is refused", errors=(400, 404)
    ),
}


def with_mentions(
    listed: NoticeList, mentions: list[MentionNotice], now: float | None = None
) -> NoticeList:
    """The server's notices and the newest recent mentions of the reader, oldest first."""
    since = (time.time() if now is None else now) - MENTIONS_FOR
    recent = [m for m in mentions if m.time >= since][-MENTIONS_SHOWN:]
    extra = [
        Notice(
            id=m.id,
            time=m.time,
            level="info",
            message=m.message[:MESSAGE_MOST],
            source=m.source[:SOURCE_MOST],
        )
        for m in recent
    ]
    return NoticeList(notices=sorted([*listed.notices, *extra], key=lambda n: n.id))
