"""Which of a user's jobs changed since the last look, for every jobs/stream websocket at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from trainhub.errors import NotFound
from trainhub.jobs.models import JobSummary, ListJobsQuery
from trainhub.jobs.service import JobService
from trainhub.jobs.states import TERMINAL_STATES, JobState

ACTIVE_STATES = [s for s in JobState if s not in TERMINAL_STATES]
RECENT = 50
MAX_ACTIVE = 500
log = logging.getLogger(__name__)


def snapshot(service: JobService, user: str, watched: set[str]) -> dict[str, JobSummary]:
    """The user's newest jobs, every unfinished one, and any ``watched`` job (which may just
    have finished and dropped out of both lists)."""
    jobs: dict[str, JobSummary] = {}
    for query in (
        ListJobsQuery(limit=RECENT),
        ListJobsQuery(states=ACTIVE_STATES, limit=MAX_ACTIVE),
    ):
        jobs.update((j.id, j) for j in service.list_jobs(query, user=user).jobs)
    for job_id in watched - jobs.keys():
        try:
            described = service.describe(job_id, user=user)
        except NotFound:  # removed meanwhile: nothing more to report about it
            continue
        jobs[job_id] = JobSummary.model_validate(
            described.model_dump(include=set(JobSummary.model_fields))
        )
    return jobs


def changed(before: dict[str, dict[str, Any]], now: dict[str, JobSummary]) -> list[JobSummary]:
    """Jobs whose summary differs from what was last sent, oldest submission first."""
    out = [job for job_id, job in now.items() if before.get(job_id) != job.model_dump(mode="json")]
    return sorted(out, key=lambda j: (j.seq or 0, j.created_at))


def still_watched(now: dict[str, JobSummary]) -> set[str]:
    return {job_id for job_id, job in now.items() if not job.state.terminal}


class Subscription:
    """One connection's view: the latest summary of each job that changed since it last
    looked. A slow reader never makes this grow past one entry per job: a newer summary of a
    job replaces the one still waiting."""

    def __init__(self, user: str):
        self.user = user
        self.pending: dict[str, JobSummary] = {}
        self.sent: dict[str, dict[str, Any]] = {}
        self.ready = asyncio.Event()

    def offer(self, now: dict[str, JobSummary]) -> None:
        for job in changed(self.sent, now):
            self.pending[job.id] = job
        if self.pending:
            self.ready.set()

    async def next(self) -> list[JobSummary]:
        """The changes waiting for this connection, oldest submission first."""
        await self.ready.wait()
        self.ready.clear()
        out = sorted(self.pending.values(), key=lambda j: (j.seq or 0, j.created_at))
        self.pending.clear()
        for job in out:
            self.sent[job.id] = job.model_dump(mode="json")
        return out


class JobsWatcher:
    """One poller for every ``jobs/stream`` connection of the server: each tick it takes one
    snapshot per user that has a connection, whatever the number of connections, and offers
    it to each of that user's subscriptions."""

    def __init__(
        self,
        snapshot_of: Callable[[str, set[str]], Awaitable[dict[str, JobSummary]]],
        interval: float = 1.0,
    ):
        self._snapshot_of = snapshot_of
        self.interval = interval
        self._subscriptions: dict[str, set[Subscription]] = {}
        self._watched: dict[str, set[str]] = {}
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def subscribe(self, user: str) -> Subscription:
        sub = Subscription(user)
        self._subscriptions.setdefault(user, set()).add(sub)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())
        else:  # a new connection gets every job at the next tick, not after a full interval
            self._wake.set()
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._subscriptions.get(sub.user)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subscriptions[sub.user]
                self._watched.pop(sub.user, None)

    async def _run(self) -> None:
        while self._subscriptions:
            for user in list(self._subscriptions):
                try:
                    now = await self._snapshot_of(user, self._watched.get(user, set()))
                except Exception:  # the next tick tries again; a stream never dies of one
                    log.exception("trainhub: job list snapshot for %s failed", user)
                    continue
                self._watched[user] = still_watched(now)
                for sub in list(self._subscriptions.get(user, ())):
                    sub.offer(now)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)
            self._wake.clear()

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
