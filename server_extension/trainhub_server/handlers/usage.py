"""Usage: the report over a period, the Usage panel, one job's usage and goodput, and the
user's jobs as Prometheus metrics."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from trainhub import settings
from trainhub.metrics.gpushare import session_gpu
from trainhub.usage.models import UsageQuery
from trainhub_server.handlers import TrainhubAPIHandler
from trainhub_server.payloads import UsageParams


class UsageHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        params = self.query(UsageParams)
        query = UsageQuery(since=params.since, by=params.by)
        # The user's own jobs; the team totals only of the team this session belongs to.
        report = await self.calls.call(
            self.service.usage, query, user=self.owner, team=settings.team()
        )
        self.reply(report)


class UsagePanelHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        # The user's own figures; the team's totals only of the team this session belongs to.
        panel = await self.calls.call(
            self.service.usage_panel, user=self.owner, team=settings.team()
        )
        # The GPU share this session holds, with the memory others use on it now.
        self.reply(panel.model_copy(update={"session_gpu": await self.calls.read(session_gpu)}))


class JobUsageHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        self.reply(await self.calls.call(self.service.job_usage, job_id, user=self.owner))


class PrometheusHandler(TrainhubAPIHandler):
    """The user's own jobs in Prometheus' text format (trainhub.usage.prometheus), computed at
    scrape time through a registry of its own."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from trainhub.usage import prometheus

        backend, owner = self.service.backend, self.owner
        body = await self.calls.call(
            prometheus.exposition,
            lambda: prometheus.backend_snapshot([backend], user=owner, per_job=True),
        )
        self.set_header("X-Content-Type-Options", "nosniff")
        self.finish(body, set_content_type=prometheus.CONTENT_TYPE)
