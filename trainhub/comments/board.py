"""Comments of one :class:`~trainhub.jobs.service.JobService`: added, listed, edited and
deleted under the commented object's access rule (trainhub.comments.kinds), kept as records
where the backend keeps the team's (trainhub.jobs.records: a table of the local store, or
``.comments/<id>.json`` on the team's volume, each its author's file).

Who may read the object reads and adds its comments; a comment is its author's alone to edit
or delete (another's is refused as read-only, and an edit keeps its ``edited_at``). Mentions
resolve to the team's members (:func:`team_members`) and notify those who may read the
object (trainhub.comments.notify).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from trainhub import settings
from trainhub.comments.kinds import KINDS, Target, kind_of
from trainhub.comments.mentions import mentioned
from trainhub.comments.model import (
    Comment,
    CommentList,
    CommentText,
    CommentView,
    NewComment,
    view,
)
from trainhub.comments.notify import MentionNotice, announce_mention, mention_notices
from trainhub.errors import NotFound, ReadOnly, TrainhubError
from trainhub.jobs.filter import EVERY_JOB
from trainhub.jobs.records import records_for
from trainhub.jobs.spec import explain

if TYPE_CHECKING:
    from trainhub.jobs.service import JobService

log = logging.getLogger(__name__)
KIND = "comments"  # the records' table, or their folder .comments on a team's volume
ROSTER_JOBS = 2000  # the newest jobs whose owners make the team's roster


def team_members(service: JobService, user: str | None) -> set[str]:
    """Who is in the session's team: the owners of the jobs the backend keeps for it (a
    cluster: the team's namespace; a personal installation: its store), and the user."""
    jobs = service.backend.list_jobs(EVERY_JOB, limit=ROSTER_JOBS)
    return {j.user for j in jobs} | ({user} if user else set())


class Comments:
    def __init__(
        self,
        service: JobService,
        *,
        home: Path | None = None,
        members: Callable[[str | None], Iterable[str]] | None = None,
    ):
        self.service = service
        self.home = home  # whose outbox a mention's alert is queued in (None: the settings')
        self.members = members or (lambda user: team_members(service, user))
        self.records = records_for(service.backend, KIND, Comment, team_readable=_team_reads)

    # --- reads ------------------------------------------------------------------------------
    def list(self, kind: str, target: str, *, user: str | None) -> CommentList:
        """The object's comments, oldest first (the object as ``user`` may read it)."""
        found = kind_of(kind).readable(self.service, target, user)
        return CommentList(comments=[view(c, user) for c in self._of(found)])

    def mentions(self, user: str, after: int = 0) -> list[MentionNotice]:
        """The notices of the comments that mention ``user`` after notice id ``after``, on
        objects they may (still) read."""
        pairs = [
            (c, KINDS[c.kind].label)
            for c in self._all()
            if user in c.mentions and c.kind in KINDS and self._may_read(c.kind, c.target, user)
        ]
        return mention_notices(pairs, user, after)

    # --- changes ----------------------------------------------------------------------------
    def add(self, new: NewComment | dict[str, Any], *, user: str) -> CommentView:
        new = _parsed(NewComment, new)
        found = kind_of(new.kind).readable(self.service, new.target, user)
        now = time.time()
        comment = Comment(
            id=f"c-{secrets.token_hex(8)}",
            user=user,
            created_at=now,
            kind=found.kind,
            target=found.id,
            team=found.team,
            body=new.body,
            mentions=dict.fromkeys(self._mentioned(new.body, user), now),
            shared=found.shared,
        )
        self.records.create(comment)
        self._notify(comment, set(comment.mentions))
        return view(comment, user)

    def edit(
        self, comment_id: str, text: CommentText | dict[str, Any], *, user: str
    ) -> CommentView:
        text = _parsed(CommentText, text)
        old, found = self._own(comment_id, user, "edit")
        now = time.time()
        names = self._mentioned(text.body, user)
        with self.records.change(old.id) as comment:
            if comment is None:
                raise NotFound(f"No comment {comment_id}.")
            comment.body, comment.edited_at = text.body, now
            comment.mentions = {n: comment.mentions.get(n, now) for n in names}
            comment.shared = found.shared  # its file as readable as the object is now
        self._notify(comment, set(names) - set(old.mentions))
        return view(comment, user)

    def delete(self, comment_id: str, *, user: str) -> None:
        self._own(comment_id, user, "delete")
        self.records.delete(comment_id)

    # --- parts ------------------------------------------------------------------------------
    def _all(self) -> list[Comment]:
        return self.records.list()

    def _of(self, target: Target) -> list[Comment]:
        found = [c for c in self._all() if c.kind == target.kind and c.target == target.id]
        return sorted(found, key=lambda c: c.created_at)

    def _target(self, kind: str, target: str, user: str | None) -> Target | None:
        """The object as ``user`` may read it, or None."""
        try:
            return KINDS[kind].readable(self.service, target, user)
        except TrainhubError:
            return None

    def _may_read(self, kind: str, target: str, user: str | None) -> bool:
        return self._target(kind, target, user) is not None

    def _own(self, comment_id: str, user: str | None, verb: str) -> tuple[Comment, Target]:
        """A comment of ``user``'s and its object; another's on an object they may read is
        refused as read-only, anything else is not found."""
        try:
            comment = self.records.get(comment_id)
        except (PermissionError, ValueError):  # another member's private file, a broken one
            comment = None
        found = None
        if comment is not None and comment.kind in KINDS:
            found = self._target(comment.kind, comment.target, user)
        if comment is None or found is None:
            raise NotFound(f"No comment {comment_id}.")
        if user is not None and comment.user != user:
            raise ReadOnly(f"Comment {comment_id} is {comment.user}'s: only they can {verb} it.")
        return comment, found

    def _mentioned(self, body: str, user: str | None) -> list[str]:
        return mentioned(body, self.members(user))

    def _notify(self, comment: Comment, names: set[str]) -> None:
        """An alert to each newly mentioned teammate who may read the object (a notice in
        their JupyterLab comes from :meth:`mentions`)."""
        label, home = KINDS[comment.kind].label, self.home or settings.home()
        for name in sorted(names - {comment.user}):
            if not self._may_read(comment.kind, comment.target, name):
                continue
            problem = announce_mention(home, comment, label, name)
            if problem:
                log.warning("trainhub: comment %s: %s", comment.id, problem)


def _team_reads(comment: Comment) -> bool:
    return comment.shared


def _parsed(model: Any, given: Any) -> Any:
    if isinstance(given, model):
        return given
    try:
        return model.model_validate(given)
    except ValidationError as e:
        raise explain(e) from None
