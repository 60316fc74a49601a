"""openapi.yaml documents exactly the routes the extension registers."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from tornado.websocket import WebSocketHandler

import trainhub_server
from trainhub_server import routes

SPEC = yaml.safe_load((Path(trainhub_server.__file__).parent / "openapi.yaml").read_text())
OPERATIONS = {"get", "post", "put", "patch", "delete"}


def documented() -> set[tuple[str, str]]:
    return {(m, path) for path, item in SPEC["paths"].items() for m in item if m in OPERATIONS}


def test_documented_routes_equal_registered_routes(jp_serverapp: Any) -> None:
    app = jp_serverapp.extension_manager.extension_points["trainhub"].app
    registered = {pattern for pattern, *_ in app.handlers}
    assert registered == {pattern for pattern, _ in routes.handlers()}
    assert documented() == routes.route_table()


def test_websockets_are_marked_and_path_parameters_declared() -> None:
    for template, handler in routes.ROUTES:
        item = SPEC["paths"]["/" + template]
        assert bool(item.get("get", {}).get("x-websocket")) == issubclass(
            handler, WebSocketHandler
        ), template
        declared = set()
        for param in item.get("parameters", []) + [
            p for m in OPERATIONS & item.keys() for p in item[m].get("parameters", [])
        ]:
            if "$ref" in param:
                param = SPEC["components"]["parameters"][param["$ref"].rsplit("/", 1)[1]]
            if param["in"] == "path":
                declared.add(param["name"])
        assert declared == set(routes.PARAMETERS) & set(template.replace("}", "{").split("{")), (
            template
        )


def test_model_references_resolve() -> None:
    for name, schema in SPEC["components"]["schemas"].items():
        if "x-model" in schema:
            module, _, attr = schema["x-model"].rpartition(".")
            model = getattr(importlib.import_module(module), attr)
            assert issubclass(model, BaseModel) and model.__name__ == name
