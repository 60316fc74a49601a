"""What a job wrote, read back: its ranks' logs, its metrics, its outputs (downloads) and
its executed notebook (as JSON or as an HTML download)."""

from __future__ import annotations

from urllib.parse import quote

from jupyter_server.auth.decorator import authorized
from tornado import web

from trainhub_server.handlers import TrainhubAPIHandler
from trainhub_server.payloads import (
    LOG_CHUNK_MOST,
    LogParams,
    NotebookRankParams,
    OutputFileParams,
    RecordsParams,
)


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
