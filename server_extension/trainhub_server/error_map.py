"""The one place where exceptions become HTTP answers (DESIGN.md, "Conventions").

Validation 400 (naming the field), not found 404, conflict 409, over quota, not allowed by a
policy, or a teammate's job that is shared read-only 403, over a size limit 413, backend
unavailable 503. Anything else is a 500 whose details stay in the server log.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError
from tornado.web import HTTPError

from trainhub import settings
from trainhub.bundle.errors import BundleError
from trainhub.errors import (
    BackendUnavailable,
    Conflict,
    NotAllowed,
    NotFound,
    OverQuota,
    ReadOnly,
    TooLarge,
    scrub_paths,
)
from trainhub.jobs.spec import SpecError, explain

INTERNAL_MESSAGE = "The trainhub server hit an internal error; the details are in the server log."
_FIELD_PREFIX = re.compile(r"^(parameters\.[A-Za-z_][A-Za-z0-9_]*):")


def _bundle_field(message: str) -> str:
    """BundleError sentences name a file or cell; the field is the parameter or the source."""
    m = _FIELD_PREFIX.match(message)
    return m.group(1) if m else "source"


def error_response(
    exc: BaseException | None, status: int = 500, *, field: str | None = None
) -> tuple[int, dict[str, Any], bool]:
    """(status, JSON body, expected) for an exception; ``expected`` ones are not logged as bugs.

    No sentence carries a path of the server's: one left in a message (an OS error's, a
    path a user sent back) is cut to its last part, but for the dataset roots users are told.
    """
    code, body, expected = _response(exc, status, field=field)
    keep = [str(root) for root in settings.dataset_roots()]
    body["message"] = scrub_paths(str(body.get("message", "")), keep)
    for error in body.get("errors") or []:
        error["message"] = scrub_paths(str(error.get("message", "")), keep)
    return code, body, expected


def _response(
    exc: BaseException | None, status: int = 500, *, field: str | None = None
) -> tuple[int, dict[str, Any], bool]:
    """(status, JSON body, expected) for an exception, before paths are scrubbed.

    ``field`` names what of the request a refusal that names no field is about (the part of
    the path that chose the file that was refused, say).
    """
    if isinstance(exc, ValidationError):
        exc = explain(exc)
    if isinstance(exc, SpecError):
        errors = [e.model_dump() for e in exc.errors]
        return 400, {"message": str(exc), "errors": errors}, True
    if isinstance(exc, BundleError):
        message = str(exc)
        return (
            400,
            {"message": message, "errors": [{"field": _bundle_field(message), "message": message}]},
            True,
        )
    if isinstance(exc, NotFound | FileNotFoundError):
        return 404, {"message": _sentence(exc)}, True
    if isinstance(exc, TooLarge):
        return 413, {"message": str(exc)}, True
    if isinstance(exc, Conflict):
        return 409, {"message": str(exc)}, True
    if isinstance(exc, OverQuota | NotAllowed | ReadOnly):
        return 403, {"message": str(exc)}, True
    if isinstance(exc, BackendUnavailable):
        return 503, {"message": str(exc)}, True
    if isinstance(exc, ValueError):
        message = str(exc)
        errors = [{"field": field, "message": message}] if field else []
        return 400, {"message": message, "errors": errors}, True
    if isinstance(exc, HTTPError):
        return (
            exc.status_code,
            {"message": exc.log_message or exc.reason or _reason(exc.status_code)},
            True,
        )
    if exc is None and status < 500:
        return status, {"message": _reason(status)}, True
    return 500, {"message": INTERNAL_MESSAGE}, False


def _sentence(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError) and exc.filename is not None:
        return "No such file."  # an OS error would reveal server paths
    return str(exc) or "Not found."


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
