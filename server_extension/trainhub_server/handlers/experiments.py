"""Experiments (trainhub.experiments): sweeps (list, start, describe, cancel) and runs
compared side by side."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from trainhub.experiments.compare_scalars import parse_goals
from trainhub_server.handlers import TrainhubAPIHandler
from trainhub_server.payloads import CancelRequest, CompareParams


class SweepsHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.reply(await self.calls.call(self.service.list_sweeps, user=self.owner))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body_json(required=True)
        self.reply(await self.calls.call(self.service.create_sweep, body, user=self.owner), 201)


class SweepHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, sweep_id: str) -> None:
        self.reply(await self.calls.call(self.service.describe_sweep, sweep_id, user=self.owner))


class SweepCancelHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, sweep_id: str) -> None:
        reason = self.body_as(CancelRequest).reason
        self.reply(
            await self.calls.call(
                self.service.cancel_sweep, sweep_id, user=self.owner, reason=reason
            )
        )


class CompareHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        params = self.query(CompareParams)
        comparison = await self.calls.call(
            self.service.compare,
            params.ids.split(","),
            user=self.owner,
            goals=parse_goals(params.goal),
            scalars=params.scalars,
            series=params.series,
            points=params.points,
        )
        self.reply(comparison)
