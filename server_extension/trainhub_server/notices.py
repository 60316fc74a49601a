"""Notices for the people using this server, kept in memory: what the hub's services (the
idle-GPU policy's warning) want said inside JupyterLab, which shows each new one once.

Who may post is who may use the server: on a hub, jupyterhub-singleuser admits only tokens
with ``access:servers`` for it (the user, admins, and the idle-GPU service).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from trainhub.jobs.specparts import NotBlank
from trainhub_server.base import MAX_INTEGER
from trainhub_server.payloads import Query

KEPT = 50  # notices are for now: the oldest go first
MESSAGE_MOST = 2000
SOURCE_MOST = 200

Level = Literal["info", "warning", "error"]


class NewNotice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: NotBlank = Field(
        min_length=1,
        max_length=MESSAGE_MOST,
        description="The sentence shown, as plain text (not blank)",
    )
    level: Level = "info"


class Notice(BaseModel):
    id: int = Field(
        ge=1,
        le=MAX_INTEGER,
        description="Increasing, also across restarts of the server (milliseconds since the "
        "epoch or more): read on with `after`",
    )
    time: float = Field(description="When it was posted (seconds since the epoch)")
    level: Level
    message: str
    source: str = Field(description="Who posted it (the user or hub service name)")


class NoticeList(BaseModel):
    notices: list[Notice] = Field(description="Oldest first")


class NoticesParams(Query):
    after: int = Field(0, ge=0, le=MAX_INTEGER, description="Only notices with a larger id")


class Notices:
    """The latest :data:`KEPT` notices of this server."""

    def __init__(self, kept: int = KEPT) -> None:
        self._notices: deque[Notice] = deque(maxlen=kept)
        self._last_id = 0

    def add(self, new: NewNotice, source: str, now: float | None = None) -> Notice:
        now = time.time() if now is None else now
        # Time-based ids keep increasing when the server restarts, so a JupyterLab that
        # remembers the last one it showed neither repeats nor misses one.
        self._last_id = max(self._last_id + 1, int(now * 1000))
        notice = Notice(
            id=self._last_id,
            time=now,
            level=new.level,
            message=new.message,
            source=source[:SOURCE_MOST],
        )
        self._notices.append(notice)
        return notice

    def after(self, notice_id: int) -> NoticeList:
        return NoticeList(notices=[n for n in self._notices if n.id > notice_id])
