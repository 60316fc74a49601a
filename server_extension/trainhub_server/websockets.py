"""Websockets that follow a job: logs, events, metrics, and the user's job list.

Each is resumable: the client passes the byte offset it has (``?offset=N``) and every message
carries ``next_offset``, so a reconnect from the last ``next_offset`` loses nothing. Files are
polled on a short timer; whatever accumulated between two ticks goes out as one message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado import web
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from trainhub.jobs.confined import NotAJobFile
from trainhub.jobs.directory import EVENTS, METRIC_KINDS, JobDir, metrics_file
from trainhub.jobs.logs import LogFollower
from trainhub_server.base import TrainhubHandlerMixin, field_error
from trainhub_server.payloads import StreamParams
from trainhub_server.tails import JsonlTail

END = {"type": "end"}
STATE_CHECK_S = 1.0  # how often a follower asks whether the job has ended


class StreamHandler(TrainhubHandlerMixin, WebSocketMixin, WebSocketHandler, JupyterHandler):
    """Authenticates and authorizes the upgrade, then runs ``pump`` until it ends or the client
    goes."""

    _task: asyncio.Task[None] | None = None

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "read", self.auth_resource)
        )
        if not allowed:
            raise web.HTTPError(
                403, f"User is not authorized to read on resource: {self.auth_resource}."
            )
        # Resolve the job before the upgrade, so a wrong id answers 404 like the REST API.
        await self.setup(*args, **kwargs)
        await super().get(*args, **kwargs)

    async def setup(self, *args: Any, **kwargs: Any) -> None:
        """Check the request and find what to follow; raise to refuse the upgrade."""

    async def pump(self) -> None:
        raise NotImplementedError

    def open(self, *args: Any, **kwargs: Any) -> None:
        super().open(*args, **kwargs)
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            await self.pump()
        except (WebSocketClosedError, asyncio.CancelledError):
            return
        except NotAJobFile as e:  # the job replaced its file by a link or a FIFO while followed
            self.log.info("trainhub stream %s refused: %s", self.request.path, e)
            with contextlib.suppress(WebSocketClosedError):
                self.close(1008, str(e)[:120])
            return
        except Exception as e:  # the client sees a close with a reason; the log gets the details
            self.log.exception("trainhub stream %s failed", self.request.path)
            with contextlib.suppress(WebSocketClosedError):
                self.close(1011, str(e)[:120])
            return
        self.close(1000)

    def on_close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def on_message(self, message: str | bytes) -> None:
        """Streams only speak; anything the client says is ignored."""

    async def send(self, message: dict[str, Any]) -> None:
        await self.write_message(json.dumps(message, default=str))


class JobFollower(StreamHandler):
    """Follows one file of one job until the job has ended and all of it is sent."""

    interval = 0.25
    jobdir: JobDir
    job_id: str

    async def setup(self, job_id: str, *args: Any) -> None:
        self.offset = self.query(StreamParams).offset
        self.job_id = job_id
        self.jobdir = await self.calls.call(self.service.jobdir, job_id, self.owner)

    async def job_ended(self) -> bool:
        record = await self.calls.call(self.service.readable, self.job_id, self.owner)
        return record.state.terminal

    async def drain(self, *, final: bool) -> None:
        """Send everything readable now."""
        raise NotImplementedError

    async def pump(self) -> None:
        next_check = 0.0
        while True:
            ended = False
            if time.monotonic() >= next_check:
                ended = await self.job_ended()
                next_check = time.monotonic() + STATE_CHECK_S
            # Read after the state check: once the job has ended, this read sees all it wrote.
            await self.drain(final=ended)
            if ended:
                await self.send(END)
                return
            await asyncio.sleep(self.interval)


class LogStreamHandler(JobFollower):
    interval = 0.05

    async def setup(self, job_id: str, rank: str) -> None:  # type: ignore[override]
        self.offset = self.query(StreamParams).offset
        self.job_id = job_id
        self.jobdir = await self.calls.call(
            self.service.log_dir, job_id, user=self.owner, rank=int(rank)
        )
        # A log that is a link, a FIFO or a directory is refused before the upgrade (400).
        await self.calls.read(self.jobdir.has_log, int(rank))
        self.tail = LogFollower(self.jobdir.log_reader(int(rank)), self.offset or 0)

    async def drain(self, *, final: bool) -> None:
        while chunk := await self.calls.read(self.tail.read, final=final):
            await self.send(chunk.message())


class EventsStreamHandler(JobFollower):
    async def setup(self, job_id: str) -> None:  # type: ignore[override]
        await super().setup(job_id)
        self.tail = JsonlTail(self.jobdir, EVENTS, self.offset or 0)
        await self.calls.read(self.tail.check)  # a link or FIFO: 400 before the upgrade

    async def drain(self, *, final: bool) -> None:
        while events := await self.calls.read(self.tail.read):
            await self.send({"events": events, "next_offset": self.tail.offset})


class MetricsStreamHandler(JobFollower):
    interval = 1.0

    async def setup(self, job_id: str, kind: str) -> None:  # type: ignore[override]
        if kind not in METRIC_KINDS:
            raise field_error("kind", f"must be one of {', '.join(METRIC_KINDS)}")
        await super().setup(job_id)
        self.tail = JsonlTail(self.jobdir, metrics_file(kind), self.offset or 0)
        await self.calls.read(self.tail.check)

    async def drain(self, *, final: bool) -> None:
        while records := await self.calls.read(self.tail.read):
            await self.send({"records": records, "next_offset": self.tail.offset})


class JobsStreamHandler(StreamHandler):
    """Pushes ``{"type": "job", "job": JobSummary}`` for each of the user's jobs that changed
    (all of them once, on connect), from the server's one watcher (:class:`watch.JobsWatcher`)."""

    async def pump(self) -> None:
        sub = self.app.jobs_watcher.subscribe(self.owner)
        try:
            while True:
                for job in await sub.next():
                    await self.send({"type": "job", "job": job.model_dump(mode="json")})
        finally:
            self.app.jobs_watcher.unsubscribe(sub)
