"""The OpenAPI 3.1 document of the REST API, built from the pydantic models the server validates
with and answers in, plus the table of operations (trainhub_server.operations).

``python -m trainhub_server.openapi`` rewrites the checked-in ``openapi.yaml`` from it
(tests/server/test_openapi.py fails while that copy is stale); the server serves the same
document at ``trainhub/api/openapi.json``.
"""

from __future__ import annotations

import sys
from http import HTTPStatus
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from trainhub_server.comments import COMMENT_OPERATIONS, COMMENT_PARAMETERS
from trainhub_server.operations import ERRORS, Operation
from trainhub_server.operations import OPERATIONS as JOB_OPERATIONS
from trainhub_server.operations import PATH_PARAMETERS as JOB_PARAMETERS
from trainhub_server.payloads import Error, Query
from trainhub_server.registry_operations import REGISTRY_OPERATIONS, REGISTRY_PARAMETERS

OPERATIONS = {**JOB_OPERATIONS, **REGISTRY_OPERATIONS, **COMMENT_OPERATIONS}
PATH_PARAMETERS = {**JOB_PARAMETERS, **REGISTRY_PARAMETERS, **COMMENT_PARAMETERS}

OPENAPI_VERSION = "3.1.0"
API_VERSION = "0.1.0"
DOCUMENT_FILE = Path(__file__).with_name("openapi.yaml")
REF = "#/components/schemas/{model}"
JSON = "application/json"

DESCRIPTION = """\
The REST and websocket API of the trainhub Jupyter Server extension, under
`<base_url>trainhub/api/`. Every route needs an authenticated Jupyter user who is authorized
for the `trainhub` resource (403 otherwise). A job of another user answers 404.

Every error answers the `Error` schema: a sentence in `message`; a validation error (400)
names each bad field in `errors`. Limits on request sizes (413) and values are those of a
default installation; an administrator may change them (`TRAINHUB_LIMIT_<NAME>`).

Websocket routes (`x-websocket: true`) are GET upgrades. They resume from `?offset=N` (bytes)
and every message carries `next_offset`; reconnecting from the last `next_offset` loses
nothing. Job followers send `{"type": "end"}` once the job has ended and all is sent, then
close.
"""


def _schemas() -> tuple[dict[tuple[type[BaseModel], str], dict[str, Any]], dict[str, Any]]:
    """The models' schemas: references by (model, mode), and components/schemas."""
    wanted: set[tuple[type[BaseModel], str]] = {(Error, "serialization")}
    for op in OPERATIONS.values():
        if op.body is not None:
            wanted.add((op.body, "validation"))
        if op.response is not None:
            wanted.add((op.response, "serialization"))
        wanted.update((model, "serialization") for _, model in op.also.values())
    ordered = sorted(wanted, key=lambda item: (item[0].__name__, item[1]))
    refs, top = models_json_schema(ordered, ref_template=REF)  # type: ignore[arg-type]
    # A model that reads differently from how it is written (JobSpec's max_runtime) comes in
    # two: "JobSpec" as a request sends it, "JobSpecAnswered" as the server answers it.
    renamed = _renamed(top.get("$defs", {}))
    return _renamed(refs), renamed  # type: ignore[return-value]


def _renamed(node: Any) -> Any:
    if isinstance(node, dict):
        return {_name(k): _renamed(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_renamed(v) for v in node]
    if isinstance(node, str):
        return _name(node)
    return node


def _name(text: Any) -> Any:
    if isinstance(text, str):
        if text.endswith("-Input"):
            return text.removesuffix("-Input")
        if text.endswith("-Output"):
            return text.removesuffix("-Output") + "Answered"
    return text


def _present(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter is absent or has a value: ``X | None`` is documented as ``X``."""
    schema = {k: v for k, v in schema.items() if k != "title"}
    choices = [s for s in schema.get("anyOf", []) if s != {"type": "null"}]
    if "anyOf" in schema and len(choices) == 1:
        del schema["anyOf"]
        schema = {**choices[0], **schema}
    if schema.get("default", 0) is None:
        del schema["default"]
    return schema


def _query_parameters(model: type[Query], schemas: dict[str, Any]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template=REF, mode="validation")
    schemas.update(schema.get("$defs", {}))
    required = set(schema.get("required", []))
    parameters = []
    for name, prop in schema["properties"].items():
        prop = _present(prop)
        description = prop.pop("description", None)
        parameter: dict[str, Any] = {"name": name, "in": "query", "schema": prop}
        if description:
            parameter["description"] = description
        if name in required:
            parameter["required"] = True
        if _is_array(prop):
            parameter.update(style="form", explode=True)
        parameters.append(parameter)
    return parameters


def _is_array(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "array" or any(
        s.get("type") == "array" for s in schema.get("anyOf", [])
    )


def _path_parameters(path: str) -> list[dict[str, Any]]:
    names = [part[1:-1] for part in path.split("/") if part.startswith("{")]
    return [
        {"name": name, "in": "path", "required": True, "schema": PATH_PARAMETERS[name]}
        for name in names
    ]


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def _operation(
    path: str,
    op: Operation,
    refs: dict[tuple[type[BaseModel], str], dict[str, Any]],
    schemas: dict[str, Any],
) -> dict[str, Any]:
    out: dict[str, Any] = {"summary": op.summary}
    if op.deprecated:
        out["deprecated"] = True
    query = _query_parameters(op.query, schemas) if op.query else []
    parameters = _path_parameters(path) + query
    if parameters:
        out["parameters"] = parameters
    if op.websocket:
        out["x-websocket"] = True
    if op.body is not None:
        out["requestBody"] = {
            "required": op.body_required,
            "content": {JSON: {"schema": refs[(op.body, "validation")]}},
        }
    responses: dict[str, Any] = {}
    if op.websocket:
        responses["101"] = {"description": "Switching to the websocket protocol"}
    elif op.download:
        responses["200"] = {
            "description": "The file",
            "content": {op.media: {"schema": {"type": "string"}}},
        }
    elif op.response is not None:
        responses[str(op.status)] = _json(
            HTTPStatus(op.status).phrase, refs[(op.response, "serialization")]
        )
    elif path == "/openapi.json":
        responses["200"] = _json("The OpenAPI document", {"type": "object"})
    else:
        responses[str(op.status)] = {"description": HTTPStatus(op.status).phrase}
    for status, (description, model) in op.also.items():
        responses[str(status)] = _json(description, refs[(model, "serialization")])
    error = refs[(Error, "serialization")]
    for status in sorted({*op.errors, 403}):
        responses[str(status)] = _json(ERRORS[status], error)
    out["responses"] = responses
    return out


def build() -> dict[str, Any]:
    """The whole document (a pure function of the models and the table of operations)."""
    refs, schemas = _schemas()
    paths: dict[str, dict[str, Any]] = {}
    for (path, method), op in OPERATIONS.items():
        paths.setdefault(path, {})[method] = _operation(path, op, refs, schemas)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "trainhub server API",
            "version": API_VERSION,
            "description": DESCRIPTION,
        },
        "servers": [{"url": "/trainhub/api"}],
        "paths": paths,
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def render(document: dict[str, Any]) -> str:
    header = "# Generated by `python -m trainhub_server.openapi` from the server's models.\n"
    return header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


def main() -> int:
    DOCUMENT_FILE.write_text(render(build()))
    print(DOCUMENT_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
