"""An authorizer that denies the "trainhub" resource shuts every route, even with a token."""

from __future__ import annotations

import re
from typing import Any

import pytest
from jupyter_server.auth.authorizer import Authorizer
from tornado.httpclient import HTTPClientError
from tornado.websocket import WebSocketHandler

from tests.server.test_auth import registered_routes, sample_path
from trainhub_server import routes


class DenyTrainhub(Authorizer):
    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return resource != "trainhub"


@pytest.fixture
def jp_server_config(jp_server_config: dict[str, Any]) -> dict[str, Any]:
    return {
        **jp_server_config,
        "ServerApp": {**jp_server_config["ServerApp"], "authorizer_class": DenyTrainhub},
    }


async def test_denied_resource_is_refused_everywhere(
    jp_serverapp: Any, jp_fetch: Any, jp_ws_fetch: Any
) -> None:
    for pattern, handler, *_ in registered_routes(jp_serverapp):
        path = sample_path(pattern)
        if issubclass(handler, WebSocketHandler):
            with pytest.raises(HTTPClientError) as refused:
                await jp_ws_fetch(path)
            assert refused.value.code == 403, path
            continue
        for name in routes.methods(handler):
            body = "{}" if name in ("post", "put", "patch") else None
            response = await jp_fetch(path, method=name.upper(), body=body, raise_error=False)
            assert response.code == 403, (name, path, response.code)
            assert re.search(rb"not authorized to \w+ on resource: trainhub", response.body)
