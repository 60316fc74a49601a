"""REST handlers: thin, each one a service call off the event loop (contract: openapi.py).
One module per resource; this package holds what they all extend, ``TrainhubAPIHandler``
(the JSON body, the answer, a file's download).

Every method is ``@tornado.web.authenticated`` and ``@authorized`` on the "trainhub" resource;
tests/server/test_auth.py fails when one is not.
"""

from __future__ import annotations

import json
import threading
from functools import cached_property
from typing import Any, BinaryIO, TypeVar
from urllib.parse import quote

from jupyter_server.base.handlers import APIHandler
from pydantic import BaseModel, ValidationError

from trainhub.errors import TooLarge
from trainhub.jobs import limits
from trainhub.jobs.spec import explain
from trainhub_server.base import TrainhubHandlerMixin, dump, field_error
from trainhub_server.nesting import too_deep

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
