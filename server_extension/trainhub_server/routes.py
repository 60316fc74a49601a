"""Every trainhub route, written once: the server registers these and trainhub_server.openapi
documents them (tests/server/test_openapi.py keeps the two equal)."""

from __future__ import annotations

import re

from jupyter_server.utils import url_path_join
from tornado.web import RequestHandler
from tornado.websocket import WebSocketHandler

from trainhub_server import websockets as ws
from trainhub_server.handlers import (
    checkpoints,
    comments,
    experiments,
    job_files,
    jobs,
    pipelines,
    registry,
    schedules,
    server,
    tensorboard,
    usage,
)
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
    "schedule_id": r"[^/]+",
    "run_id": r"[^/]+",
    "model_name": r"[^/]+",
    "version": r"[^/]+",
    "alias": r"[^/]+",
    "comment_id": r"[^/]+",
}
HTTP_METHODS = ("get", "post", "put", "patch", "delete")

# Order matters: tornado takes the first match, so "jobs/stream" precedes "jobs/{job_id}".
ROUTES: list[tuple[str, type[RequestHandler]]] = [
    ("config", server.ConfigHandler),
    ("openapi.json", OpenAPIHandler),
    ("datasets", server.DatasetsHandler),
    ("notices", server.NoticesHandler),
    ("jobs", jobs.JobsHandler),
    ("jobs/stream", ws.JobsStreamHandler),
    ("jobs/{job_id}", jobs.JobHandler),
    ("jobs/{job_id}/cancel", jobs.CancelHandler),
    ("jobs/{job_id}/suspend", jobs.SuspendHandler),
    ("jobs/{job_id}/resume", jobs.ResumeHandler),
    ("jobs/{job_id}/resubmit", jobs.ResubmitHandler),
    ("jobs/{job_id}/events", jobs.EventsHandler),
    ("jobs/{job_id}/events/stream", ws.EventsStreamHandler),
    ("jobs/{job_id}/logs", job_files.LogRanksHandler),
    ("jobs/{job_id}/logs/{rank}", job_files.LogHandler),
    ("jobs/{job_id}/logs/{rank}/stream", ws.LogStreamHandler),
    ("jobs/{job_id}/metrics/{kind}", job_files.MetricsHandler),
    ("jobs/{job_id}/metrics/{kind}/stream", ws.MetricsStreamHandler),
    ("jobs/{job_id}/checkpoints", checkpoints.CheckpointsHandler),
    ("jobs/{job_id}/checkpoints/{step}", checkpoints.CheckpointHandler),
    ("jobs/{job_id}/checkpoints/{step}/files/{name}", checkpoints.CheckpointFileHandler),
    ("jobs/{job_id}/checkpoints/{step}/fork", checkpoints.CheckpointForkHandler),
    # its spelling before forks had a word of their own, for scripts that call it
    ("jobs/{job_id}/checkpoints/{step}/resume", checkpoints.CheckpointForkHandler),
    ("jobs/{job_id}/outputs", job_files.OutputsHandler),
    ("jobs/{job_id}/outputs/file", job_files.OutputFileHandler),
    ("jobs/{job_id}/notebook", job_files.JobNotebookHandler),
    ("jobs/{job_id}/notebook/html", job_files.JobNotebookHTMLHandler),
    ("notebook/parameters", server.NotebookParametersHandler),
    ("usage", usage.UsageHandler),
    ("usage/panel", usage.UsagePanelHandler),
    ("jobs/{job_id}/usage", usage.JobUsageHandler),
    ("metrics", usage.PrometheusHandler),
    ("sweeps", experiments.SweepsHandler),
    ("sweeps/{sweep_id}", experiments.SweepHandler),
    ("sweeps/{sweep_id}/cancel", experiments.SweepCancelHandler),
    ("compare", experiments.CompareHandler),
    ("schedules", schedules.SchedulesHandler),
    ("schedules/{schedule_id}", schedules.ScheduleHandler),
    ("schedules/{schedule_id}/pause", schedules.SchedulePauseHandler),
    ("schedules/{schedule_id}/resume", schedules.ScheduleResumeHandler),
    ("schedules/{schedule_id}/run-now", schedules.ScheduleRunNowHandler),
    ("pipelines/runs", pipelines.PipelineRunsHandler),
    ("pipelines/check", pipelines.PipelineCheckHandler),
    ("pipelines/runs/{run_id}", pipelines.PipelineRunHandler),
    ("pipelines/runs/{run_id}/retry", pipelines.PipelineRetryHandler),
    ("pipelines/runs/{run_id}/cancel", pipelines.PipelineCancelHandler),
    ("registry/models", registry.ModelsHandler),
    ("registry/models/{model_name}", registry.ModelHandler),
    ("registry/models/{model_name}/versions/{version}", registry.ModelVersionHandler),
    ("registry/models/{model_name}/versions/{version}/archive", registry.ModelArchiveHandler),
    ("registry/models/{model_name}/aliases/{alias}", registry.ModelAliasHandler),
    ("comments", comments.CommentsHandler),
    ("comments/{comment_id}", comments.CommentHandler),
]


def to_pattern(template: str) -> str:
    """'jobs/{job_id}' -> 'jobs/(?P<job_id>[^/]+)' anchored by tornado."""
    return re.sub(r"\{(\w+)\}", lambda m: f"(?P<{m.group(1)}>{PARAMETERS[m.group(1)]})", template)


# TensorBoard's pages, proxied (handlers/tensorboard.py): beside the REST API, not in it.
PAGES: list[tuple[str, type[RequestHandler]]] = [
    (tensorboard.PATH, tensorboard.TensorBoardOpenHandler),
    (
        tensorboard.PATH + r"/(?P<board_id>[0-9a-f]+)/(?P<path>.*)",
        tensorboard.TensorBoardProxyHandler,
    ),
]


def handlers() -> list[tuple[str, type[RequestHandler]]]:
    """The (pattern, handler) pairs the extension adds, relative to the server's base URL."""
    api = [(url_path_join(API_PREFIX, to_pattern(t)), cls) for t, cls in ROUTES]
    return api + PAGES


def methods(handler: type[RequestHandler]) -> list[str]:
    """HTTP methods a handler serves (a websocket is a GET upgrade)."""
    if issubclass(handler, WebSocketHandler):
        return ["get"]
    return [m for m in HTTP_METHODS if getattr(handler, m) is not getattr(RequestHandler, m)]


def route_table() -> set[tuple[str, str]]:
    """{(method, '/template')} as OpenAPI spells paths."""
    return {(m, "/" + t) for t, cls in ROUTES for m in methods(cls)}
