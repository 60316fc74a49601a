"""Jobs: list and submit, describe and edit one, cancel, suspend, resume, resubmit, and read
its events."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from trainhub.jobs.models import JobEdit, ListJobsQuery
from trainhub_server.handlers import TrainhubAPIHandler
from trainhub_server.payloads import (
    CancelRequest,
    ChangeRequest,
    ListJobsParams,
    RecordsParams,
    SubmitParams,
    dry_run,
)


class JobsHandler(TrainhubAPIHandler):
    _etag: str | None = None  # the page's, as it was made (compute_etag)

    @web.authenticated
    @authorized
    async def get(self) -> None:
        params = self.query(ListJobsParams)
        query = ListJobsQuery(
            states=params.state,
            limit=params.limit,
            before=params.before,
            sweep=params.sweep,
            pipeline_run=params.pipeline_run,
            search=params.q,
            scalar=params.scalar,
        )
        # JSON written on the service's thread, of the summaries it keeps serialized; a page
        # of unchanged jobs is sent as the bytes (and ETag) it was sent as before
        body = await self.calls.call(self.service.list_jobs_body, query, user=self.owner)
        self._etag = body.etag
        self.finish(body.data)

    def compute_etag(self) -> str | None:
        """The page's ETag, hashed when the page was made (the web server would hash every
        answer's body again)."""
        return self._etag or super().compute_etag()

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body_json(required=True)
        if self.query(SubmitParams).dry_run:
            self.reply(await self.calls.call(dry_run, self.service, body, user=self.owner))
            return
        described = await self.calls.call(
            self.service.submit, body, user=self.owner, abandoned=self.abandoned
        )
        self.reply(described, 201)


class JobHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        self.reply(await self.calls.call(self.service.describe, job_id, user=self.owner))

    @web.authenticated
    @authorized
    async def patch(self, job_id: str) -> None:
        change = self.body_as(JobEdit)
        self.reply(await self.calls.call(self.service.edit, job_id, change, user=self.owner))


class CancelHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, job_id: str) -> None:
        reason = self.body_as(CancelRequest).reason
        self.reply(
            await self.calls.call(self.service.cancel, job_id, user=self.owner, reason=reason)
        )


class SuspendHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, job_id: str) -> None:
        reason = self.body_as(CancelRequest).reason
        self.reply(
            await self.calls.call(self.service.suspend, job_id, user=self.owner, reason=reason)
        )


class ResumeHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, job_id: str) -> None:
        self.reply(await self.calls.call(self.service.resume, job_id, user=self.owner))


class ResubmitHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, job_id: str) -> None:
        overrides = self.body_as(ChangeRequest).overrides
        described = await self.calls.call(
            self.service.resubmit,
            job_id,
            user=self.owner,
            overrides=overrides,
            abandoned=self.abandoned,
        )
        self.reply(described, 201)


class EventsHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        params = self.query(RecordsParams)
        events, next_offset = await self.calls.call(
            self.service.events, job_id, user=self.owner, offset=params.offset, limit=params.limit
        )
        self.reply({"events": events, "next_offset": next_offset})
