"""Every trainhub route, written once: the server registers these and trainhub_server.openapi
documents them (tests/server/test_openapi.py keeps the two equal)."""

from __future__ import annotations

import re

from jupyter_server.utils import url_path_join
from tornado.web import RequestHandler
from tornado.websocket import WebSocketHandler

from trainhub_server import handlers as h
from trainhub_server import websockets as ws
from trainhub_server.openapi_handler import OpenAPIHandler

API_PREFIX = "trainhub/api"
# Any text in each part: the handlers check it and refuse a bad one naming it (400).
PARAMETERS = {
    "job_id": r"[^/]+",
    "rank": r"[^/]+",
    "kind": r"[^/]+",
    "step": r"[^/]+",
    "name": r"[^/]+",
    "sweep_id": r"[^/]+",
}
HTTP_METHODS = ("get", "post", "put", "patch", "delete")

# Order matters: tornado takes the first match, so "jobs/stream" precedes "jobs/{job_id}".
ROUTES: list[tuple[str, type[RequestHandler]]] = [
    ("config", h.ConfigHandler),
    ("openapi.json", OpenAPIHandler),
    ("datasets", h.DatasetsHandler),
    ("notices", h.NoticesHandler),
    ("jobs", h.JobsHandler),
    ("jobs/stream", ws.JobsStreamHandler),
    ("jobs/{job_id}", h.JobHandler),
    ("jobs/{job_id}/cancel", h.CancelHandler),
    ("jobs/{job_id}/suspend", h.SuspendHandler),
    ("jobs/{job_id}/resume", h.ResumeHandler),
    ("jobs/{job_id}/resubmit", h.ResubmitHandler),
    ("jobs/{job_id}/events", h.EventsHandler),
    ("jobs/{job_id}/events/stream", ws.EventsStreamHandler),
    ("jobs/{job_id}/logs", h.LogRanksHandler),
    ("jobs/{job_id}/logs/{rank}", h.LogHandler),
    ("jobs/{job_id}/logs/{rank}/stream", ws.LogStreamHandler),
    ("jobs/{job_id}/metrics/{kind}", h.MetricsHandler),
    ("jobs/{job_id}/metrics/{kind}/stream", ws.MetricsStreamHandler),
    ("jobs/{job_id}/checkpoints", h.CheckpointsHandler),
    ("jobs/{job_id}/checkpoints/{step}", h.CheckpointHandler),
    ("jobs/{job_id}/checkpoints/{step}/files/{name}", h.CheckpointFileHandler),
    ("jobs/{job_id}/checkpoints/{step}/resume", h.CheckpointResumeHandler),
    ("jobs/{job_id}/outputs", h.OutputsHandler),
    ("jobs/{job_id}/outputs/file", h.OutputFileHandler),
    ("jobs/{job_id}/notebook", h.JobNotebookHandler),
    ("jobs/{job_id}/notebook/html", h.JobNotebookHTMLHandler),
    ("notebook/parameters", h.NotebookParametersHandler),
    ("usage", h.UsageHandler),
    ("usage/panel", h.UsagePanelHandler),
    ("jobs/{job_id}/usage", h.JobUsageHandler),
    ("metrics", h.PrometheusHandler),
    ("sweeps", h.SweepsHandler),
    ("sweeps/{sweep_id}", h.SweepHandler),
    ("sweeps/{sweep_id}/cancel", h.SweepCancelHandler),
    ("compare", h.CompareHandler),
]


def to_pattern(template: str) -> str:
    """'jobs/{job_id}' -> 'jobs/(?P<job_id>[^/]+)' anchored by tornado."""
    return re.sub(r"\{(\w+)\}", lambda m: f"(?P<{m.group(1)}>{PARAMETERS[m.group(1)]})", template)


def handlers() -> list[tuple[str, type[RequestHandler]]]:
    """The (pattern, handler) pairs the extension adds, relative to the server's base URL."""
    return [(url_path_join(API_PREFIX, to_pattern(t)), cls) for t, cls in ROUTES]


def methods(handler: type[RequestHandler]) -> list[str]:
    """HTTP methods a handler serves (a websocket is a GET upgrade)."""
    if issubclass(handler, WebSocketHandler):
        return ["get"]
    return [m for m in HTTP_METHODS if getattr(handler, m) is not getattr(RequestHandler, m)]


def route_table() -> set[tuple[str, str]]:
    """{(method, '/template')} as OpenAPI spells paths."""
    return {(m, "/" + t) for t, cls in ROUTES for m in methods(cls)}
