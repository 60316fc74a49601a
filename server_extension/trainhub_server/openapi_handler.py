"""Serves the OpenAPI document, built once from the models (trainhub_server.openapi)."""

from __future__ import annotations

import functools
import json

from jupyter_server.auth.decorator import authorized
from tornado import web

from trainhub_server.handlers import TrainhubAPIHandler
from trainhub_server.openapi import build


@functools.cache
def document_text() -> str:
    return json.dumps(build())


class OpenAPIHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(document_text())
