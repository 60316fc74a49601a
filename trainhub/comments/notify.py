"""A mention reaches the person twice: as a notice in their JupyterLab (their server reads the
comments that mention them, :func:`mention_notices`, pure) and as an alert to the channels
they configured (:func:`announce_mention`, queued into the outbox as the writer posts it).

The person's channels are their alerts file: on a team's volume each member's
``.trainhub/users/<name>/alerts.yaml`` (trainhub.alerts.channels.member_alerts_path), read
without following links; in a personal installation its one user's file. No file, or one the
writer's process may not read, is no alert (the notice in JupyterLab still comes).
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from trainhub.alerts.announce import announce_own
from trainhub.alerts.channels import (
    Channels,
    member_alerts_path,
    member_channels,
    user_alerts_file,
    user_channels,
)
from trainhub.alerts.message import Alert, scrub, secret_values
from trainhub.comments.model import Comment

EXCERPT = 200  # characters of the comment a notice or an alert quotes


@dataclass(frozen=True)
class MentionNotice:
    id: int  # milliseconds since the epoch of the mention: read on with ``after``
    time: float
    message: str
    source: str  # who wrote the comment


def excerpt(body: str) -> str:
    text = " ".join(body.split())
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def sentence(comment: Comment, label: str) -> str:
    return f"{comment.user} mentioned you on {label} {comment.target}: {excerpt(comment.body)}"


def mention_notices(
    comments: Iterable[tuple[Comment, str]], reader: str, after: int
) -> list[MentionNotice]:
    """The notices of the ``(comment, kind label)`` pairs that mention ``reader`` (not by
    themselves) after notice id ``after``, oldest first."""
    found = []
    for comment, label in comments:
        when = comment.mentions.get(reader)
        if when is None or comment.user == reader or int(when * 1000) <= after:
            continue
        found.append(MentionNotice(int(when * 1000), when, sentence(comment, label), comment.user))
    return sorted(found, key=lambda n: n.id)


def team_root(alerts_file: Path, user: str) -> Path | None:
    """The team volume whose member file ``alerts_file`` is (a hub's session), else None."""
    relative = member_alerts_path(user).parts
    if alerts_file.parts[-len(relative) :] != relative:
        return None
    return Path(*alerts_file.parts[: -len(relative)])


def person_channels(person: str, writer: str, home: Path | None = None) -> Channels | None:
    """The channels ``person`` configured, as the writer's process may read them; None where
    it knows none of theirs (raises where their file is broken)."""
    mine = user_alerts_file(home)
    root = team_root(mine, writer)
    if root is not None:
        return member_channels(root, person)
    return user_channels(mine) if person == getpass.getuser() else None


def mention_alert(comment: Comment, label: str) -> Alert:
    secrets = secret_values(os.environ)
    return Alert(
        kind="mention",
        subject=scrub(f"{comment.user} mentioned you on {label} {comment.target}", secrets),
        text=scrub(sentence(comment, label), secrets),
        fields=((label, comment.target), ("by", comment.user)),
    )


def announce_mention(
    home: Path, comment: Comment, label: str, person: str, *, start_sender: bool = True
) -> str | None:
    """Queue the mention of ``person`` to their channels (once per comment, person and
    mention); returns why it could not be, else None."""
    try:
        channels = person_channels(person, comment.user, home)
    except Exception as error:  # an alert never stands in the way of a comment
        return f"The mention alert of {person} could not be queued: {error}"
    if channels is None or channels.empty:
        return None
    key = f"mention-{comment.id}-{person}-{int(comment.mentions[person] * 1000)}"
    return announce_own(
        home,
        mention_alert(comment, label),
        None,  # the person's own channels: a mention is not the team's news
        key=key,
        owner=lambda: channels,
        start_sender=start_sender,
    )
