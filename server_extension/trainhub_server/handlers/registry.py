"""The team's model registry (trainhub.registry): models, versions with metrics and lineage,
aliases, the audit log; register, move an alias, archive."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from trainhub.registry import here
from trainhub.registry.refs import Ref
from trainhub.registry.requests import ArchiveVersion, MoveAlias, RegisterModel
from trainhub_server.base import field_error
from trainhub_server.handlers import TrainhubAPIHandler


def _version(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 2**31:
        raise field_error("version", f"{text!r} is not a version number (1, 2, ...)")
    return int(text)


class ModelsHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.reply(await self.calls.call(self.service.registry.list))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body_as(RegisterModel)
        version = await self.calls.call(
            here.register,
            self.service,
            body.name,
            body.source,
            user=self.owner,
            description=body.description,
        )
        self.reply(version, 201)


class ModelHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, model_name: str) -> None:
        self.reply(await self.calls.call(self.service.registry.describe, model_name))


class ModelVersionHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self, model_name: str, version: str) -> None:
        ref = Ref(model_name, version=_version(version))
        self.reply(await self.calls.call(self.service.registry.version, ref))


class ModelArchiveHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def post(self, model_name: str, version: str) -> None:
        body = self.body_as(ArchiveVersion)
        view = await self.calls.call(
            self.service.registry.archive,
            model_name,
            _version(version),
            user=self.owner,
            reason=body.reason,
            archived=body.archived,
        )
        self.reply(view)


class ModelAliasHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def put(self, model_name: str, alias: str) -> None:
        body = self.body_as(MoveAlias)
        view = await self.calls.call(
            self.service.registry.move_alias,
            model_name,
            alias,
            body.version,
            user=self.owner,
            reason=body.reason,
        )
        self.reply(view)
