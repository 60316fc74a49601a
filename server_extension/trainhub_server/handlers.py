"""REST handlers: thin, each one a service call off the event loop (contract: openapi.py).

Every method is ``@tornado.web.authenticated`` and ``@authorized`` on the "trainhub" resource;
tests/server/test_auth.py fails when one is not.
"""

from __future__ import annotations

import json
import threading
from functools import cached_property
from typing import Any, BinaryIO, TypeVar
from urllib.parse import quote

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from pydantic import BaseModel, ValidationError
from tornado import web

from trainhub import settings
from trainhub.checkpoint.layout import read_manifest
from trainhub.errors import TooLarge
from trainhub.experiments.compare_scalars import parse_goals
from trainhub.jobs import limits
from trainhub.jobs.models import JobEdit, ListJobsQuery
from trainhub.jobs.spec import explain
from trainhub.usage.models import UsageQuery
from trainhub_server.base import TrainhubHandlerMixin, dump, field_error
from trainhub_server.nesting import too_deep
from trainhub_server.notices import NewNotice, NoticesParams
from trainhub_server.parameters import notebook_parameters
from trainhub_server.payloads import (
    LOG_CHUNK_MOST,
    CancelRequest,
    ChangeRequest,
    CompareParams,
    ListJobsParams,
    LogParams,
    NotebookParams,
    NotebookRankParams,
    OutputFileParams,
    RecordsParams,
    SubmitParams,
    UsageParams,
    config_payload,
    dry_run,
)

DOWNLOAD_CHUNK = 1 << 20
M = TypeVar("M", bound=BaseModel)


class TrainhubAPIHandler(TrainhubHandlerMixin, APIHandler):
    def body_json(self, *, required: bool = False) -> dict[str, Any]:
        raw = self.request.body
        if not raw:
            if required:
                raise field_error("body", "send a JSON object")
            return {}
        bounds = limits.current()
        if len(raw) > bounds.request_bytes:
            raise TooLarge(f"The request body is over {limits.size_text(bounds.request_bytes)}.")
        try:
            body = json.loads(raw)
        except RecursionError:  # deeper than the parser goes: find the field without it
            raise field_error(*too_deep(raw, bounds.nesting_depth)) from None
        except ValueError as e:
            raise field_error("body", f"is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise field_error("body", "must be a JSON object")
        return body

    def body_as(self, model: type[M]) -> M:
        """The JSON body validated by ``model`` (as the API's document says), naming a bad
        field."""
        try:
            return model.model_validate(self.body_json())
        except ValidationError as e:
            raise explain(e) from None

    @cached_property
    def abandoned(self) -> threading.Event:
        """Set once the client has gone away: a submit not yet handed to the backend stops."""
        return threading.Event()

    def on_connection_close(self) -> None:
        self.abandoned.set()
        super().on_connection_close()

    def reply(self, payload: Any, status: int = 200) -> None:
        self.set_status(status)
        self.finish(dump(payload))

    async def send_download(self, f: BinaryIO, filename: str, size: int) -> None:
        """A job's file as an attachment, from the descriptor that was checked (opened without
        following links): the checkpoint and output downloads alike."""
        # Always a download, never rendered: the browser must not guess a type.
        self.set_header("Content-Type", "application/octet-stream")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Content-Disposition", f"attachment; filename*=UTF-8''{quote(filename)}")
        with f:  # opened without following links: the file checked is the file sent
            self.set_header("Content-Length", str(size))
            left = size  # no more than announced, should the file grow meanwhile
            while left and (chunk := await self.calls.read(f.read, min(left, DOWNLOAD_CHUNK))):
                left -= len(chunk)
                self.write(chunk)
                await self.flush()
        self.finish(set_content_type="application/octet-stream")


class ConfigHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        app = self.app
        payload = await self.calls.call(
            config_payload,
            self.service.backend,
            user=self.owner,
            allow_pip=app.allow_pip,
            images=app.images,
            teams=app.teams,
            limits=app.limits,
        )
        self.reply(payload)


class DatasetsHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.reply(await self.calls.call(self.service.datasets))


class NoticesHandler(TrainhubAPIHandler):
    """The server's notices (notices.py): the hub's services post, JupyterLab reads on."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.reply(self.app.notices.after(self.query(NoticesParams).after))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        try:
            new = NewNotice.model_validate(self.body_json(required=True))
        except ValidationError as e:
            raise explain(e) from None
        # Who posted is who authenticated, never what the body says.
        self.reply(self.app.notices.add(new, source=self.current_user.username), 201)


class JobsHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        params = self.query(ListJobsParams)
        query = ListJobsQuery(
            states=params.state,
            limit=params.limit,
            before=params.before,
            sweep=params.sweep,
            search=params.q,
            scalar=params.scalar,
        )
        self.reply(await self.calls.call(self.service.list_jobs, query, user=self.owner))

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
        self.reply(
            await self.calls.call(self.service.usage_panel, user=self.owner, team=settings.team())
        )


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
        self.reply(await self.calls.call(self.service.resume_suspended, job_id, user=self.owner))


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


class LogRanksHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        self.reply(
            {"ranks": await self.calls.call(self.service.log_ranks, job_id, user=self.owner)}
        )


class LogHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str, rank: str) -> None:
        params = self.query(LogParams)
        offset = params.offset
        data, next_offset = await self.calls.call(
            self.service.log,
            job_id,
            user=self.owner,
            rank=int(rank),
            offset=offset,
            length=min(params.length, LOG_CHUNK_MOST),
        )
        # The data ends on a character boundary: only bytes that are not UTF-8 are replaced.
        self.reply(
            {"text": data.decode(errors="replace"), "offset": offset, "next_offset": next_offset}
        )


class MetricsHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str, kind: str) -> None:
        params = self.query(RecordsParams)
        records, next_offset = await self.calls.call(
            self.service.metrics,
            job_id,
            kind,
            user=self.owner,
            offset=params.offset,
            limit=params.limit,
        )
        self.reply({"records": records, "next_offset": next_offset})


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


class CheckpointResumeHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, job_id: str, step: str) -> None:
        overrides = self.body_as(ChangeRequest).overrides
        described = await self.calls.call(
            self.service.resume,
            job_id,
            int(step),
            user=self.owner,
            overrides=overrides,
            abandoned=self.abandoned,
        )
        self.reply(described, 201)


class OutputsHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        self.reply(await self.calls.call(self.service.outputs, job_id, user=self.owner))


class OutputFileHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        path = self.query(OutputFileParams).path
        opened = await self.calls.call(self.service.open_output_file, job_id, path, user=self.owner)
        await self.send_download(*opened)


class JobNotebookHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        rank = self.query(NotebookRankParams).rank
        self.reply(await self.calls.call(self.service.notebook, job_id, user=self.owner, rank=rank))


class JobNotebookHTMLHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, job_id: str) -> None:
        rank = self.query(NotebookRankParams).rank
        html = await self.calls.call(self.service.notebook_html, job_id, user=self.owner, rank=rank)
        # What the job displayed, as a page: a download, never rendered in this origin.
        name = f"{job_id}.html" if rank == 0 else f"{job_id}-rank-{rank}.html"
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Content-Disposition", f"attachment; filename*=UTF-8''{quote(name)}")
        self.finish(html, set_content_type="text/html; charset=utf-8")


class NotebookParametersHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        path = self.query(NotebookParams).path
        self.reply(await self.calls.read(notebook_parameters, self.service.workspace_root, path))
