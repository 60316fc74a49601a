"""What every trainhub handler shares: the owner of the request, service calls, error mapping."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from jupyter_server.extension.handler import ExtensionHandlerMixin
from pydantic import BaseModel

from trainhub.jobs.spec import field_error
from trainhub_server.error_map import error_response

if TYPE_CHECKING:
    from trainhub.jobs.service import JobService
    from trainhub_server.app import TrainhubExtension
    from trainhub_server.calls import ServiceCalls

AUTH_RESOURCE = "trainhub"
# The largest integer a browser's JSON numbers hold exactly; sequence numbers and byte offsets
# stay far below it, and SQLite's and the OS's 64-bit integers never overflow on one.
MAX_INTEGER = 2**53


class TrainhubHandlerMixin(ExtensionHandlerMixin):
    """Mixed into REST and websocket handlers (before the Jupyter handler classes)."""

    auth_resource = AUTH_RESOURCE

    @property
    def app(self) -> TrainhubExtension:
        return self.extensionapp  # type: ignore[return-value]

    @property
    def service(self) -> JobService:
        return self.app.service

    @property
    def calls(self) -> ServiceCalls:
        return self.app.calls

    @property
    def owner(self) -> str:
        """Whose jobs this request may see: another user's job answers 404."""
        return self.app.job_owner(self.current_user)  # type: ignore[attr-defined]

    def int_argument(
        self, name: str, default: int | None = None, *, minimum: int = 0
    ) -> int | None:
        raw = self.get_argument(name, None)  # type: ignore[attr-defined]
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise field_error(name, f"must be an integer, got {raw!r}") from None
        if value < minimum:
            raise field_error(name, f"must be {minimum} or more")
        if value > MAX_INTEGER:
            raise field_error(name, f"must be at most {MAX_INTEGER}")
        return value

    # --- the one error-mapping place -----------------------------------------------------
    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc_info = kwargs.get("exc_info")
        exc = exc_info[1] if exc_info else None
        status, body, _ = error_response(exc, status_code)
        self.set_status(status)  # type: ignore[attr-defined]
        self.set_header("Content-Type", "application/json")  # type: ignore[attr-defined]
        self.finish(json.dumps(body))  # type: ignore[attr-defined]

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        _, _, expected = error_response(value)
        if expected:
            self.log.info("%s %s: %s", self.request.method, self.request.path, value)  # type: ignore[attr-defined]
        else:
            super().log_exception(typ, value, tb)  # type: ignore[misc]


def dump(model: BaseModel | dict[str, Any] | list[Any]) -> str:
    if isinstance(model, BaseModel):
        return model.model_dump_json()
    return json.dumps(model, default=str)
