"""Pipeline runs (trainhub.pipelines): start one (of a workspace file, or the pipeline sent
itself), check one, list, describe, retry, cancel and share them."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from trainhub.pipelines.models import StartRun
from trainhub_server.handlers import TrainhubAPIHandler
from trainhub_server.payloads import CancelRequest, ShareRequest


class PipelineRunsHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.reply(await self.calls.call(self.service.pipelines.list, user=self.owner))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body_as(StartRun)
        if body.from_run is not None:
            again = await self.calls.call(
                self.service.pipelines.start_again,
                body.from_run,
                user=self.owner,
                parameters=body.parameters,
                cache=body.cache,
            )
            self.reply(again, 201)
            return
        run = await self.calls.call(
            self.service.pipelines.start,
            user=self.owner,
            file=body.file,
            pipeline=body.pipeline,
            parameters=body.parameters,
            cache=body.cache,
        )
        self.reply(run, 201)


class PipelineCheckHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body_as(StartRun)
        pipeline = await self.calls.call(
            self.service.pipelines.validate,
            user=self.owner,
            file=body.file,
            pipeline=body.pipeline,
            parameters=body.parameters,
        )
        self.reply(pipeline)


class PipelineRunHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        self.reply(await self.calls.call(self.service.pipelines.describe, run_id, user=self.owner))

    @web.authenticated
    @authorized
    async def patch(self, run_id: str) -> None:
        shared = self.body_as(ShareRequest).shared
        self.reply(
            await self.calls.call(self.service.pipelines.share, run_id, shared, user=self.owner)
        )


class PipelineRetryHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, run_id: str) -> None:
        self.reply(await self.calls.call(self.service.pipelines.retry, run_id, user=self.owner))


class PipelineCancelHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, run_id: str) -> None:
        reason = self.body_as(CancelRequest).reason
        self.reply(
            await self.calls.call(
                self.service.pipelines.cancel,
                run_id,
                user=self.owner,
                reason=reason or f"its pipeline run was cancelled by {self.owner}",
            )
        )
