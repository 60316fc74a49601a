"""What every trainhub handler shares: the owner of the request, service calls, error mapping."""

from __future__ import annotations

import inspect
import json
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_server.extension.handler import ExtensionHandlerMixin
from pydantic import BaseModel, ValidationError

from trainhub.jobs.spec import FieldError, SpecError, explain, field_error
from trainhub_server.error_map import error_response

if TYPE_CHECKING:
    from trainhub.jobs.service import JobService
    from trainhub_server.app import TrainhubExtension
    from trainhub_server.calls import ServiceCalls

AUTH_RESOURCE = "trainhub"
Q = TypeVar("Q", bound=BaseModel)
# The largest integer a browser's JSON numbers hold exactly; sequence numbers and byte offsets
# stay far below it, and SQLite's and the OS's 64-bit integers never overflow on one.
MAX_INTEGER = 2**53
# Parts of a path that are whole numbers. Routes take any text there, so that a bad one is
# refused naming it (400) rather than by the server's page for unknown URLs.
PATH_INTEGERS = ("rank", "step")


def whole_number(name: str, raw: str) -> int:
    """``raw`` as a whole number from 0 to MAX_INTEGER, or a refusal naming ``name``."""
    if not (raw.isascii() and raw.isdigit()):
        raise field_error(name, f"must be a whole number, 0 or more, got {raw[:40]!r}")
    value = int(raw[:20])  # a longer string of digits is over the bound anyway
    if len(raw) > 20 or value > MAX_INTEGER:
        raise field_error(name, f"must be at most {MAX_INTEGER}")
    return value


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

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        prepared = super().prepare(*args, **kwargs)  # type: ignore[misc]
        if inspect.isawaitable(prepared):
            await prepared
        if self.current_user is None:  # type: ignore[attr-defined]
            return  # refused as unauthenticated, before any input is looked at
        for name in PATH_INTEGERS:
            if name in self.path_kwargs:  # type: ignore[attr-defined]
                raw = self.path_kwargs[name]  # type: ignore[attr-defined]
                self.path_kwargs[name] = str(whole_number(name, raw))  # type: ignore[attr-defined]

    def query(self, model: type[Q]) -> Q:
        """The query arguments, validated by ``model`` (one field per argument, as the API's
        document says); a bad one, an empty one included, is refused naming it."""
        values: dict[str, Any] = {}
        for name in model.model_fields:
            given = self.get_arguments(name)  # type: ignore[attr-defined]
            if given:
                repeated = name in getattr(model, "repeated", ())
                values[name] = given if repeated else given[-1]
        try:
            return model.model_validate(values)
        except ValidationError as e:
            # Named by the argument alone: ``state``, not the place in it (``state.0``).
            errors = explain(e).errors
            raise SpecError(
                [FieldError(field=f.field.split(".")[0], message=f.message) for f in errors]
            ) from None

    def request_field(self) -> str | None:
        """What a refusal that names no field is about: the last part of the path that names
        something (the rank whose log, the file of a checkpoint), else the first query
        argument, else the body."""
        named = list(getattr(self, "path_kwargs", None) or {})
        if named:
            return named[-1]
        request = self.request  # type: ignore[attr-defined]
        arguments = list(request.query_arguments)
        if arguments:
            return arguments[0]
        return "body" if request.body else None

    # --- the one error-mapping place -----------------------------------------------------
    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc_info = kwargs.get("exc_info")
        exc = exc_info[1] if exc_info else None
        status, body, _ = error_response(exc, status_code, field=self.request_field())
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
