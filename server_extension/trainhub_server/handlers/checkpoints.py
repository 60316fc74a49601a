"""A job's checkpoints: list them, read or delete one, download its files, fork from one."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from trainhub.checkpoint.layout import read_manifest
from trainhub_server.handlers import TrainhubAPIHandler
from trainhub_server.payloads import ChangeRequest


class CheckpointsHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        infos = await self.calls.call(self.service.checkpoints, job_id, user=self.owner)
        self.reply({"checkpoints": [i.model_dump(mode="json") for i in infos]})


class CheckpointHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str, step: str) -> None:
        jobdir = await self.calls.call(self.service.jobdir, job_id, self.owner)
        info = await self.calls.read(read_manifest, jobdir.checkpoints, step)
        self.reply(info)

    @web.authenticated
    @authorized
    async def delete(self, job_id: str, step: str) -> None:
        await self.calls.call(self.service.delete_checkpoint, job_id, int(step), user=self.owner)
        self.set_status(204)
        self.finish()


class CheckpointFileHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str, step: str, name: str) -> None:
        opened = await self.calls.call(
            self.service.open_checkpoint_file, job_id, int(step), name, user=self.owner
        )
        await self.send_download(*opened)


class CheckpointForkHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, job_id: str, step: str) -> None:
        overrides = self.body_as(ChangeRequest).overrides
        described = await self.calls.call(
            self.service.fork,
            job_id,
            int(step),
            user=self.owner,
            overrides=overrides,
            abandoned=self.abandoned,
        )
        self.reply(described, 201)
