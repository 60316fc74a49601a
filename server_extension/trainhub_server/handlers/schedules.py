"""Schedules (trainhub.schedules): list, create, describe with their history, pause, resume,
run now, delete."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from trainhub_server.handlers import TrainhubAPIHandler


class SchedulesHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.reply(await self.calls.call(self.service.schedules.list, user=self.owner))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body_json(required=True)
        created = await self.calls.call(self.service.schedules.create, body, user=self.owner)
        self.reply(created, 201)


class ScheduleHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, schedule_id: str) -> None:
        self.reply(
            await self.calls.call(self.service.schedules.describe, schedule_id, user=self.owner)
        )

    @web.authenticated
    @authorized
    async def delete(self, schedule_id: str) -> None:
        await self.calls.call(self.service.schedules.delete, schedule_id, user=self.owner)
        self.set_status(204)
        self.finish()


class SchedulePauseHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, schedule_id: str) -> None:
        self.reply(
            await self.calls.call(self.service.schedules.pause, schedule_id, user=self.owner)
        )


class ScheduleResumeHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, schedule_id: str) -> None:
        self.reply(
            await self.calls.call(self.service.schedules.resume, schedule_id, user=self.owner)
        )


class ScheduleRunNowHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, schedule_id: str) -> None:
        self.reply(
            await self.calls.call(self.service.schedules.run_now, schedule_id, user=self.owner)
        )
