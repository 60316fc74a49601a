"""The OpenAPI document is generated from the server's models, documents exactly the routes the
extension registers, is what the server serves, and is checked in up to date."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import ValidationError
from tornado.websocket import WebSocketHandler

from trainhub.jobs.models import DescribeJob, JobPage
from trainhub.jobs.spec import JobSpec
from trainhub_server import openapi, routes
from trainhub_server.payloads import Error

SPEC = openapi.build()
OPERATIONS = {"get", "post", "put", "patch", "delete"}


def documented() -> set[tuple[str, str]]:
    return {(m, path) for path, item in SPEC["paths"].items() for m in item if m in OPERATIONS}


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, op)
        for path, item in SPEC["paths"].items()
        for method, op in item.items()
        if method in OPERATIONS
    ]


def test_documented_routes_equal_registered_routes(jp_serverapp: Any) -> None:
    app = jp_serverapp.extension_manager.extension_points["trainhub"].app
    registered = {pattern for pattern, *_ in app.handlers}
    assert registered == {pattern for pattern, _ in routes.handlers()}
    assert documented() == routes.route_table()


def test_the_checked_in_document_is_the_generated_one() -> None:
    checked_in = openapi.DOCUMENT_FILE.read_text()
    assert yaml.safe_load(checked_in) == SPEC, "run: python -m trainhub_server.openapi"
    assert checked_in == openapi.render(SPEC)


async def test_the_server_serves_the_generated_document(jp_fetch: Any) -> None:
    response = await jp_fetch("trainhub", "api", "openapi.json")
    assert response.code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    assert json.loads(response.body) == SPEC


def test_websockets_are_marked_and_path_parameters_declared() -> None:
    for template, handler in routes.ROUTES:
        item = SPEC["paths"]["/" + template]
        assert bool(item.get("get", {}).get("x-websocket")) == issubclass(
            handler, WebSocketHandler
        ), template
        for method in OPERATIONS & item.keys():
            declared = {p["name"] for p in item[method].get("parameters", []) if p["in"] == "path"}
            named = set(routes.PARAMETERS) & set(template.replace("}", "{").split("{"))
            assert declared == named, (template, method)


def test_every_error_answer_is_documented_with_the_error_schema() -> None:
    error = {"$ref": "#/components/schemas/Error"}
    for path, method, op in operations():
        statuses = {int(s) for s in op["responses"]}
        assert 403 in statuses, (path, method)  # every route refuses a user not authorized
        if "{job_id}" in path:
            assert {400, 404} <= statuses, (path, method)
        if "requestBody" in op or any(p["in"] == "query" for p in op.get("parameters", [])):
            assert 400 in statuses, (path, method)
        for status in statuses - {101, 200, 201, 204}:
            assert 400 <= status < 600, (path, method, status)
            assert op["responses"][str(status)]["content"]["application/json"]["schema"] == error


def test_schemas_come_from_the_models_the_server_validates_with() -> None:
    schemas = SPEC["components"]["schemas"]
    for model in (JobSpec, DescribeJob, JobPage, Error):
        assert model.__name__ in schemas
    # Models are documented in full, not as bare objects.
    assert set(schemas["JobSpec"]["properties"]) == set(JobSpec.model_fields)
    assert schemas["JobSpec"]["additionalProperties"] is False
    assert set(schemas["DescribeJob"]["properties"]) == set(DescribeJob.model_fields)
    submit = SPEC["paths"]["/jobs"]["post"]
    assert submit["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/JobSpec"
    }
    for status, model in (("201", "DescribeJob"), ("200", "DryRun")):
        schema = submit["responses"][status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": f"#/components/schemas/{model}"}


def test_every_schema_is_valid_and_every_reference_resolves() -> None:
    jsonschema.Draft202012Validator.check_schema({"$defs": SPEC["components"]["schemas"]})
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(SPEC)
    assert refs
    prefix = "#/components/schemas/"
    for ref in refs:
        assert ref.startswith(prefix) and ref[len(prefix) :] in SPEC["components"]["schemas"], ref


def test_documented_examples_validate_as_the_server_does() -> None:
    """A spec the model accepts validates against the document; one it refuses does not."""
    validator = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/JobSpec", "components": SPEC["components"]}
    )
    accepted = [
        {"name": "a", "source": {"path": "train.ipynb"}},
        {"name": "a", "source": {"kind": "script", "path": "train.py"}, "max_runtime": "1d12h"},
        {"name": "a", "source": {"path": "train.py"}, "max_runtime": 3600},
    ]
    refused = [
        {"name": "a", "source": {"path": "train.txt"}},
        {"name": "a", "source": {"path": "train.ipynb"}, "max_runtime": 1e300},
        {"name": "a", "source": {"path": "train.ipynb"}, "max_runtime": "soon"},
        {"name": "a", "source": {"path": "train.ipynb"}, "colour": "red"},
        {"name": "A!", "source": {"path": "train.ipynb"}},
    ]
    for body in accepted:
        JobSpec.model_validate(body)
        assert validator.is_valid(body), body
    for body in refused:
        with pytest.raises(ValidationError):
            JobSpec.model_validate(body)
        assert not validator.is_valid(body), body
