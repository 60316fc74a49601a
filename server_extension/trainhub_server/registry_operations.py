"""The model registry's part of the REST API's table of operations (trainhub_server.openapi
documents these beside trainhub_server.operations'; trainhub_server.routes registers them)."""

from __future__ import annotations

from typing import Any

from trainhub.registry.requests import ArchiveVersion, MoveAlias, RegisterModel
from trainhub.registry.views import ModelList, ModelView, VersionView
from trainhub_server.base import MAX_INTEGER
from trainhub_server.operations import Operation

REGISTRY_PARAMETERS: dict[str, dict[str, Any]] = {
    "model_name": {"type": "string", "minLength": 1, "description": "A model of the registry"},
    "version": {"type": "integer", "minimum": 1, "maximum": MAX_INTEGER},
    "alias": {"type": "string", "minLength": 1, "description": "e.g. staging, production"},
}
CHANGE = (400, 403, 404, 409, 413)

REGISTRY_OPERATIONS: dict[tuple[str, str], Operation] = {
    ("/registry/models", "get"): Operation(
        "The team's registered models, most recently changed first: versions, the newest, aliases",
        ModelList,
    ),
    ("/registry/models", "post"): Operation(
        "Register a job's checkpoint or output (a job the user may read) as the next version "
        "of a model: its files kept (hard-linked where they cannot change, else copied), its "
        "lineage and metrics at that step taken now and never changed",
        VersionView,
        status=201,
        body=RegisterModel,
        body_required=True,
        errors=CHANGE,
    ),
    ("/registry/models/{model_name}", "get"): Operation(
        "One model: its versions newest first with their metrics and lineage, its aliases, "
        "the newest version not archived, and the audit log (oldest first)",
        ModelView,
        errors=(400, 404),
    ),
    ("/registry/models/{model_name}/versions/{version}", "get"): Operation(
        "One version: its source job, files, metrics, lineage, aliases, load snippet",
        VersionView,
        errors=(400, 404),
    ),
    ("/registry/models/{model_name}/versions/{version}/archive", "post"): Operation(
        "Archive a version (kept, left out of the model's newest) or bring it back; a version "
        "an alias points at is not archived (409)",
        ModelView,
        body=ArchiveVersion,
        errors=CHANGE,
    ),
    ("/registry/models/{model_name}/aliases/{alias}", "put"): Operation(
        "Point an alias at a version (null removes it), written in the audit log with who, "
        "when, from which version and the reason; a protected alias (production) needs the "
        "role the team's admin set (403 naming it)",
        ModelView,
        body=MoveAlias,
        body_required=True,
        errors=CHANGE,
    ),
}
