"""TensorBoard inside JupyterLab: "Open in TensorBoard" on one job or several.

``POST trainhub/tensorboard {"ids": [...]}`` starts (or reuses) a TensorBoard over those jobs'
directories (:mod:`trainhub.metrics.tensorboard_processes`) and answers its URL,
``trainhub/tensorboard/<board>/``, which this server proxies to it: the user's session is the
only way in (Jupyter's authentication and the ``trainhub`` authorization, as every route), and
only jobs the user may read (their own, or shared with their team) are ever given to it.

These routes serve TensorBoard's pages, so they sit beside the REST API, not in it.
"""

from __future__ import annotations

import asyncio
import time

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import httpclient, web

from trainhub.errors import BackendUnavailable
from trainhub.jobs.spec import field_error
from trainhub.metrics.tensorboard_processes import Board
from trainhub_server.base import TrainhubHandlerMixin
from trainhub_server.handlers import TrainhubAPIHandler

PATH = "trainhub/tensorboard"
START_SECONDS = 90.0  # TensorBoard loads its plugins before it listens
MAX_JOBS = 50  # one board's runs: each is a job directory TensorBoard reads in full
# What goes either way: never the session's cookies or token (TensorBoard needs neither).
REQUEST_HEADERS = ("Accept", "Content-Type", "If-None-Match", "X-XSRF-Protected")
ANSWER_HEADERS = ("Content-Type", "Cache-Control", "ETag", "Expires", "X-Content-Type-Options")


def board_url(base_url: str, board: Board) -> str:
    return url_path_join(base_url, PATH, board.id) + "/"


class TensorBoardOpenHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        ids = self.body_json(required=True).get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise field_error("ids", "must be a list of job ids")
        if len(ids) > MAX_JOBS:
            raise field_error("ids", f"at most {MAX_JOBS} jobs in one TensorBoard")
        owner = self.owner
        # Each id is looked up as this user: another's private job is not found (404).
        runs = {
            job_id: (await self.calls.call(self.service.jobdir, job_id, owner)).root
            for job_id in dict.fromkeys(ids)
        }
        # Started here, on the event loop's thread: the board dies with the thread that
        # started it, and this one lives as long as the server.
        board = self.app.tensorboards.open(owner, runs)
        await _listening(board)
        self.reply({"url": board_url(self.base_url, board), "runs": sorted(runs)})


async def _listening(board: Board) -> None:
    deadline = time.monotonic() + START_SECONDS
    while board.listening_port() is None:
        if board.process.poll() is not None or time.monotonic() > deadline:
            raise BackendUnavailable(f"TensorBoard did not start: {board.output()[-500:]}")
        await asyncio.sleep(0.2)


class TensorBoardProxyHandler(TrainhubHandlerMixin, JupyterHandler):
    """TensorBoard's pages and data, for the user whose board it is."""

    def get_login_url(self) -> str:
        # Refused as the API refuses (403), not sent to a login page inside the tab's frame.
        raise web.HTTPError(403)

    def check_xsrf_cookie(self) -> None:
        # TensorBoard's own pages send every POST with this header, and TensorBoard refuses a
        # POST without it; a page of another site cannot set it (no CORS here).
        if self.request.headers.get("X-XSRF-Protected") == "1":
            return
        super().check_xsrf_cookie()

    @web.authenticated
    @authorized
    async def get(self, board_id: str, path: str) -> None:
        await self._proxy(board_id, path)

    @web.authenticated
    @authorized
    async def post(self, board_id: str, path: str) -> None:
        await self._proxy(board_id, path)

    async def _proxy(self, board_id: str, path: str) -> None:
        board = self.app.tensorboards.get(board_id, self.owner)
        if board is None or board.listening_port() is None:
            raise web.HTTPError(404, "No such TensorBoard (it stops after a while unused)")
        query = f"?{self.request.query}" if self.request.query else ""
        headers = {h: self.request.headers[h] for h in REQUEST_HEADERS if h in self.request.headers}
        answer = await httpclient.AsyncHTTPClient().fetch(
            board.upstream(path) + query,
            method=self.request.method,
            headers=headers,
            body=self.request.body if self.request.method == "POST" else None,
            follow_redirects=False,
            raise_error=False,
            request_timeout=300,
        )
        if answer.code == 599:  # no answer at all: it died meanwhile
            raise BackendUnavailable("TensorBoard stopped answering")
        self.set_status(answer.code)
        for name in ANSWER_HEADERS:
            if name in answer.headers:
                self.set_header(name, answer.headers[name])
        location = answer.headers.get("Location")
        if location:  # TensorBoard's redirects are below its own prefix: map them onto ours
            own = board.upstream("")
            location = location.removeprefix(own.removesuffix(board.prefix + "/"))
            mine = board_url(self.base_url, board)
            self.set_header("Location", location.replace(board.prefix + "/", mine, 1))
        self.finish(answer.body or b"")
