"""What the server offers beside jobs: its configuration, the team's datasets, the notices
of the hub's services, and a notebook's parameters for the submit dialog."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from pydantic import ValidationError
from tornado import web

from trainhub.jobs.spec import explain
from trainhub_server.comments import with_mentions
from trainhub_server.handlers import TrainhubAPIHandler
from trainhub_server.notices import NewNotice, NoticesParams
from trainhub_server.parameters import notebook_parameters
from trainhub_server.payloads import NotebookParams, config_payload


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
        after = self.query(NoticesParams).after
        # What the hub's services posted, and the comments that mention this user; comments
        # that cannot be read now never hold back the notices (the next read tries again).
        try:
            mentions = await self.calls.call(self.app.comments.mentions, self.owner, after)
        except Exception:
            self.log.exception("trainhub: the mentions of %s could not be read", self.owner)
            mentions = []
        self.reply(with_mentions(self.app.notices.after(after), mentions))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        try:
            new = NewNotice.model_validate(self.body_json(required=True))
        except ValidationError as e:
            raise explain(e) from None
        # Who posted is who authenticated, never what the body says.
        self.reply(self.app.notices.add(new, source=self.current_user.username), 201)


class NotebookParametersHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        path = self.query(NotebookParams).path
        self.reply(await self.calls.read(notebook_parameters, self.service.workspace_root, path))
