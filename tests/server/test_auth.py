"""Every trainhub route is authenticated and authorized (after the JupyterLab extension
template's check_auth): by inspecting the decorators of each method of each registered
handler, and by calling each route without credentials."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from types import CodeType
from typing import Any

import pytest
from jupyter_server.auth.decorator import authorized, ws_authenticated
from tornado import web
from tornado.httpclient import HTTPClientError
from tornado.websocket import WebSocketHandler

from trainhub_server import routes
from trainhub_server.base import AUTH_RESOURCE

SAMPLE = {
    "job_id": "some-job",
    "rank": "0",
    "kind": "scalars",
    "step": "1",
    "name": "state.pt",
    "sweep_id": "some-sweep",
    "schedule_id": "some-schedule",
    "run_id": "some-run",
    "board_id": "0123456789abcdef",
    "path": "data/plugin/scalars/tags",
    "model_name": "some-model",
    "version": "1",
    "alias": "staging",
    "comment_id": "c-0123456789abcdef",
}


def _noop(self: Any) -> None: ...


AUTHENTICATED = web.authenticated(_noop).__code__
AUTHORIZED = authorized(_noop).__code__
WS_AUTHENTICATED = ws_authenticated(_noop).__code__


def decorator_codes(method: Callable[..., Any]) -> list[CodeType]:
    """The code objects of every wrapper layer (functools.wraps keeps the chain)."""
    codes = []
    while method is not None:
        codes.append(method.__code__)
        method = getattr(method, "__wrapped__", None)
    return codes


def registered_routes(jp_serverapp: Any) -> list[tuple[str, type]]:
    return jp_serverapp.extension_manager.extension_points["trainhub"].app.handlers


def sample_path(pattern: str) -> str:
    return re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: SAMPLE[m.group(1)], pattern)


def test_every_route_method_is_decorated(jp_serverapp: Any) -> None:
    registered = registered_routes(jp_serverapp)
    assert len(registered) == len(routes.ROUTES) + len(routes.PAGES)
    missing = []
    for pattern, handler, *_ in registered:
        assert handler.auth_resource == AUTH_RESOURCE, handler
        for name in routes.methods(handler):
            codes = decorator_codes(getattr(handler, name))
            required = (
                [WS_AUTHENTICATED]
                if issubclass(handler, WebSocketHandler)
                else [AUTHENTICATED, AUTHORIZED]
            )
            missing += [f"{name.upper()} {pattern}" for code in required if code not in codes]
    assert not missing, f"routes without auth decorators: {missing}"


def test_the_inspection_catches_a_missing_decorator() -> None:
    class Bare(web.RequestHandler):
        @web.authenticated
        def get(self) -> None: ...

    assert AUTHENTICATED in decorator_codes(Bare.get)
    assert AUTHORIZED not in decorator_codes(Bare.get)


async def test_every_route_refuses_requests_without_credentials(
    jp_serverapp: Any, jp_fetch: Any, jp_ws_fetch: Any
) -> None:
    anonymous = {"Authorization": ""}
    for pattern, handler, *_ in registered_routes(jp_serverapp):
        path = sample_path(pattern)
        if issubclass(handler, WebSocketHandler):
            with pytest.raises(HTTPClientError) as refused:
                await jp_ws_fetch(path, headers=anonymous)
            assert refused.value.code == 403, path
            continue
        for name in routes.methods(handler):
            body = json.dumps({}) if name in ("post", "put", "patch") else None
            response = await jp_fetch(
                path, method=name.upper(), headers=anonymous, body=body, raise_error=False
            )
            assert response.code == 403, (name, path, response.code)
