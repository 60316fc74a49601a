"""The REST API's operations as its OpenAPI document tells them: for each route and method,
the summary, the query, body and answer models, and the errors it may answer.

trainhub_server.openapi builds the document from this table; trainhub_server.routes
registers the handlers (tests/server/test_openapi.py keeps the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from trainhub.checkpoint.layout import CheckpointInfo
from trainhub.datasets.catalog import DatasetList
from trainhub.experiments.comparison import Comparison
from trainhub.experiments.models import DescribeSweep, SweepList
from trainhub.experiments.sweep import CreateSweep
from trainhub.jobs.directory import METRIC_KINDS
from trainhub.jobs.models import DescribeJob, JobEdit, JobPage, JobSummary
from trainhub.jobs.spec import JobSpec
from trainhub.outputs.files import OutputList
from trainhub.pipelines.models import DescribeRun, RunList, StartRun
from trainhub.pipelines.spec import Pipeline
from trainhub.schedules.model import CreateSchedule
from trainhub.schedules.views import ScheduleList, ScheduleView
from trainhub.usage.compute import JobUsage
from trainhub.usage.models import UsageReport
from trainhub.usage.panel import UsagePanel
from trainhub_server.base import MAX_INTEGER
from trainhub_server.notices import NewNotice, Notice, NoticeList, NoticesParams
from trainhub_server.payloads import (
    CancelRequest,
    ChangeRequest,
    CheckpointList,
    CompareParams,
    DryRun,
    EventPage,
    ExecutedNotebook,
    ListJobsParams,
    LogChunk,
    LogParams,
    LogRanks,
    MetricPage,
    NotebookParameters,
    NotebookParams,
    NotebookRankParams,
    OutputFileParams,
    Query,
    RecordsParams,
    ServerConfig,
    ShareRequest,
    StreamParams,
    SubmitParams,
    UsageParams,
)

PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "job_id": {"type": "string", "minLength": 1},
    "rank": {"type": "integer", "minimum": 0, "maximum": MAX_INTEGER},
    "kind": {"type": "string", "enum": list(METRIC_KINDS)},
    "step": {"type": "integer", "minimum": 0, "maximum": MAX_INTEGER},
    "name": {"type": "string", "minLength": 1, "description": "A file of the checkpoint"},
    "sweep_id": {"type": "string", "minLength": 1},
    "schedule_id": {"type": "string", "minLength": 1},
    "run_id": {"type": "string", "minLength": 1},
}

ERRORS = {
    400: "Invalid request; each bad field is named",
    403: "Not authorized, or the job could never fit the machine or the quota",
    404: "No such job, log, checkpoint or file (also another user's)",
    409: "The request does not fit the job's state",
    413: "The request body is over the size limit",
    503: "The backend is unavailable",
}


@dataclass(frozen=True)
class Operation:
    summary: str
    response: type[BaseModel] | None = None  # None: an empty answer (or a websocket)
    status: int = 200
    query: type[Query] | None = None
    body: type[BaseModel] | None = None
    body_required: bool = False
    errors: tuple[int, ...] = ()
    websocket: bool = False
    download: bool = False
    media: str = "application/octet-stream"  # what a download is
    # Further successful answers: status -> (description, model).
    also: dict[int, tuple[str, type[BaseModel]]] = field(default_factory=dict)
    deprecated: bool = False  # an older spelling of another route, still answered


JOB = (400, 404)  # every route below jobs/{job_id} may refuse the id or not find it
CHANGE = (*JOB, 403, 409, 413)

FORK = Operation(
    "Fork: a new job with the same spec, optionally changed, that starts from this checkpoint",
    DescribeJob,
    status=201,
    body=ChangeRequest,
    errors=CHANGE,
)

OPERATIONS: dict[tuple[str, str], Operation] = {
    ("/config", "get"): Operation(
        "What this server offers: backend, features, images, teams, limits, user",
        ServerConfig,
    ),
    ("/openapi.json", "get"): Operation("This document"),
    ("/datasets", "get"): Operation(
        "The datasets the user's team may ask for by name (a job's `datasets: [name]`)",
        DatasetList,
        errors=(503,),
    ),
    ("/notices", "get"): Operation(
        "Notices for the people using this server (e.g. the hub's idle-GPU warning), the "
        "latest 50 at most, oldest first",
        NoticeList,
        query=NoticesParams,
        errors=(400,),
    ),
    ("/notices", "post"): Operation(
        "Post a notice; JupyterLab shows it as a notification. Its source is who posted it",
        Notice,
        status=201,
        body=NewNotice,
        body_required=True,
        errors=(400, 413),
    ),
    ("/jobs", "get"): Operation(
        "The user's jobs, newest first", JobPage, query=ListJobsParams, errors=(400,)
    ),
    ("/jobs", "post"): Operation(
        "Submit a notebook or script as a job",
        DescribeJob,
        status=201,
        query=SubmitParams,
        body=JobSpec,
        body_required=True,
        errors=(400, 404, 409, 413),
        also={200: ("The dry run passed", DryRun)},
    ),
    ("/jobs/stream", "get"): Operation(
        "Websocket: {type: job, job: JobSummary} for each of the user's jobs that changes "
        "(all once on connect)",
        websocket=True,
    ),
    ("/jobs/{job_id}", "get"): Operation(
        "One job with spec, lineage, state, wait reason, position, timeline and verdict",
        DescribeJob,
        errors=JOB,
    ),
    ("/jobs/{job_id}", "patch"): Operation(
        "Change a job's tags, note or sharing after submission (its spec stays as submitted); "
        "a teammate's shared job is read-only (403)",
        JobSummary,
        body=JobEdit,
        body_required=True,
        errors=(*JOB, 403, 409, 413),
    ),
    ("/jobs/{job_id}/cancel", "post"): Operation(
        "Cancel a job (queued jobs at once; running ones are stopped)",
        DescribeJob,
        body=CancelRequest,
        errors=(*JOB, 403, 409, 413),
    ),
    ("/jobs/{job_id}/suspend", "post"): Operation(
        "Suspend a job: its ranks save a checkpoint and stop, its GPUs are freed, its state "
        "becomes suspended with the step saved",
        DescribeJob,
        body=CancelRequest,
        errors=(*JOB, 409, 413),
    ),
    ("/jobs/{job_id}/resume", "post"): Operation(
        "Queue a suspended job again: the same id, its next attempt, from its latest checkpoint",
        DescribeJob,
        errors=(*JOB, 409),
    ),
    ("/jobs/{job_id}/resubmit", "post"): Operation(
        "Run the same spec again as a new job, optionally changed",
        DescribeJob,
        status=201,
        body=ChangeRequest,
        errors=CHANGE,
    ),
    ("/jobs/{job_id}/events", "get"): Operation(
        "Events (state changes, cell progress, retries, verdicts) from a byte offset",
        EventPage,
        query=RecordsParams,
        errors=JOB,
    ),
    ("/jobs/{job_id}/events/stream", "get"): Operation(
        "Websocket: {events: [...], next_offset} as events are appended; then {type: end}",
        websocket=True,
        query=StreamParams,
        errors=JOB,
    ),
    ("/jobs/{job_id}/logs", "get"): Operation("The ranks that have a log", LogRanks, errors=JOB),
    ("/jobs/{job_id}/logs/{rank}", "get"): Operation(
        "A byte range of one rank's log: whole UTF-8 characters, cut back to a line boundary "
        "when full; 400 when the job replaced the log by a link, FIFO or directory; 404 names "
        "the ranks of the job for one it does not have",
        LogChunk,
        query=LogParams,
        errors=JOB,
    ),
    ("/jobs/{job_id}/logs/{rank}/stream", "get"): Operation(
        "Websocket: LogChunk messages (whole lines, a partial one after 0.5 s, whole UTF-8 "
        "characters; coalesced every ~50 ms); then {type: end}",
        websocket=True,
        query=StreamParams,
        errors=JOB,
    ),
    ("/jobs/{job_id}/metrics/{kind}", "get"): Operation(
        "Metric records from a byte offset", MetricPage, query=RecordsParams, errors=JOB
    ),
    ("/jobs/{job_id}/metrics/{kind}/stream", "get"): Operation(
        "Websocket: {records: [...], next_offset} as records are appended; then {type: end}",
        websocket=True,
        query=StreamParams,
        errors=JOB,
    ),
    ("/jobs/{job_id}/checkpoints", "get"): Operation(
        "Complete checkpoints, oldest step first", CheckpointList, errors=JOB
    ),
    ("/jobs/{job_id}/checkpoints/{step}", "get"): Operation(
        "One checkpoint's manifest", CheckpointInfo, errors=JOB
    ),
    ("/jobs/{job_id}/checkpoints/{step}", "delete"): Operation(
        "Delete a checkpoint", status=204, errors=(*JOB, 403, 409)
    ),
    ("/jobs/{job_id}/checkpoints/{step}/files/{name}", "get"): Operation(
        "Download a checkpoint file (Content-Disposition attachment, X-Content-Type-Options "
        "nosniff); names leading outside the checkpoint are refused (400)",
        download=True,
        errors=JOB,
    ),
    ("/jobs/{job_id}/checkpoints/{step}/fork", "post"): FORK,
    ("/jobs/{job_id}/checkpoints/{step}/resume", "post"): replace(
        FORK, summary="The fork's older spelling: use checkpoints/{step}/fork", deprecated=True
    ),
    ("/jobs/{job_id}/outputs", "get"): Operation(
        "The folders and regular files of the job's outputs directory (TRAINHUB_OUTPUT_DIR), "
        "with sizes and modification times; links and FIFOs left out, never followed",
        OutputList,
        errors=JOB,
    ),
    ("/jobs/{job_id}/outputs/file", "get"): Operation(
        "Download one output file (Content-Disposition attachment, X-Content-Type-Options "
        "nosniff); a path leading outside the outputs or through a link is refused (400)",
        query=OutputFileParams,
        download=True,
        errors=JOB,
    ),
    ("/jobs/{job_id}/notebook", "get"): Operation(
        "A rank's executed notebook (nbformat 4): the cells done so far while the job runs, "
        "with their outputs, each capped; 400 when the job replaced it by a link, FIFO or "
        "directory; 404 says why there is none",
        ExecutedNotebook,
        query=NotebookRankParams,
        errors=JOB,
    ),
    ("/jobs/{job_id}/notebook/html", "get"): Operation(
        "The executed notebook as an HTML page rendered by nbconvert, its outputs' HTML "
        "sanitized (Content-Disposition attachment, X-Content-Type-Options nosniff)",
        query=NotebookRankParams,
        download=True,
        media="text/html",
        errors=(*JOB, 503),
    ),
    ("/notebook/parameters", "get"): Operation(
        "Values assigned in the notebook's cell tagged `parameters` (to prefill the submit dialog)",
        NotebookParameters,
        query=NotebookParams,
        errors=(400, 404),
    ),
    ("/compare", "get"): Operation(
        "2 to 10 of the user's jobs side by side: parameters, lineage, the code that ran (a "
        "cell-level diff against the first job), resources, elapsed time, verdicts, last and "
        "best of every training scalar, and their curves",
        Comparison,
        query=CompareParams,
        errors=(400, 404),
    ),
    ("/usage", "get"): Operation(
        "GPU, CPU and time usage of the jobs that ended in a period, grouped: the user's own "
        "jobs; grouped by team, the totals of the user's own team and of no other",
        UsageReport,
        query=UsageParams,
        errors=(400, 503),
    ),
    ("/usage/panel", "get"): Operation(
        "The Usage panel: the user's and their own team's GPU-hours this week and month and "
        "per day, the team's quota per pool now, the queue and the typical wait, failures by "
        "class over 30 days, the user's most wasteful jobs and their goodput",
        UsagePanel,
        errors=(503,),
    ),
    ("/jobs/{job_id}/usage", "get"): Operation(
        "One job's usage and goodput (start-up, checkpoint stalls, redone steps, interrupted "
        "attempts, waiting between attempts), derived now from its directory",
        JobUsage,
        errors=(*JOB, 503),
    ),
    ("/metrics", "get"): Operation(
        "The user's own jobs as Prometheus metrics (text exposition format): jobs by state and "
        "team, queue waits, failures by class, GPU-seconds allocated, busy and wasted",
        download=True,
        media="text/plain",
    ),
    ("/sweeps", "get"): Operation("The user's sweeps, newest first", SweepList),
    ("/sweeps", "post"): Operation(
        "Start a sweep: trials of `job` over `sweep.space`, at most `sweep.max_running` active",
        DescribeSweep,
        status=201,
        body=CreateSweep,
        body_required=True,
        errors=(400, 403, 404, 409, 413),
    ),
    ("/sweeps/{sweep_id}", "get"): Operation(
        "One sweep: its space and rules, each trial's job, state, verdict and scalars, the best",
        DescribeSweep,
        errors=(400, 404),
    ),
    ("/sweeps/{sweep_id}/cancel", "post"): Operation(
        "Cancel a sweep: no more trials, and every active trial is cancelled",
        DescribeSweep,
        body=CancelRequest,
        errors=(400, 404, 409, 413),
    ),
    ("/schedules", "get"): Operation(
        "The user's schedules, newest first, each with its next time and latest runs",
        ScheduleList,
    ),
    ("/schedules", "post"): Operation(
        "Create a schedule: `target` (a notebook job spec, or a workspace pipeline file with "
        "its parameters) on `cron` in `timezone`; the workspace is frozen now and every run "
        "compiles from it",
        ScheduleView,
        status=201,
        body=CreateSchedule,
        body_required=True,
        errors=(400, 403, 404, 409, 413),
    ),
    ("/schedules/{schedule_id}", "get"): Operation(
        "One schedule: its rules, next time and history of runs (scheduled time, job, outcome)",
        ScheduleView,
        errors=(400, 404),
    ),
    ("/schedules/{schedule_id}", "delete"): Operation(
        "Delete a schedule and its frozen workspace; its jobs stay",
        status=204,
        errors=(400, 404),
    ),
    ("/schedules/{schedule_id}/pause", "post"): Operation(
        "Pause a schedule: nothing fires until it is resumed", ScheduleView, errors=(400, 404)
    ),
    ("/schedules/{schedule_id}/resume", "post"): Operation(
        "Resume a schedule from now: the times that passed while paused are not run",
        ScheduleView,
        errors=(400, 404),
    ),
    ("/schedules/{schedule_id}/run-now", "post"): Operation(
        "Run the schedule's target once now, whatever its concurrency policy",
        ScheduleView,
        errors=(400, 403, 404, 409),
    ),
    ("/pipelines/runs", "get"): Operation(
        "The pipeline runs the user may read (their own, and those their team shared), newest "
        "first, with which steps reused earlier results",
        RunList,
    ),
    ("/pipelines/runs", "post"): Operation(
        "Start a run of a pipeline (a *.pipeline.yaml of the workspace, or the pipeline itself) "
        "with parameters over its defaults; every step is checked first, each mistake named "
        "by step and field",
        DescribeRun,
        status=201,
        body=StartRun,
        body_required=True,
        errors=(400, 403, 404, 409, 413),
    ),
    ("/pipelines/check", "post"): Operation(
        "Check a pipeline as a run would, starting nothing; the pipeline as read",
        Pipeline,
        body=StartRun,
        body_required=True,
        errors=(400, 403, 404, 409, 413),
    ),
    ("/pipelines/runs/{run_id}", "get"): Operation(
        "One pipeline run: each step's status, job or reused result, and why it waits, failed "
        "or did not run",
        DescribeRun,
        errors=(400, 404),
    ),
    ("/pipelines/runs/{run_id}", "patch"): Operation(
        "Share a run and its steps' jobs with the owner's team to read, or make them private "
        "(the owner alone; a hub with teams)",
        DescribeRun,
        body=ShareRequest,
        body_required=True,
        errors=(400, 403, 404, 409, 413),
    ),
    ("/pipelines/runs/{run_id}/retry", "post"): Operation(
        "Run a failed or cancelled run again from the steps that did not succeed, keeping what did",
        DescribeRun,
        errors=(400, 403, 404, 409),
    ),
    ("/pipelines/runs/{run_id}/cancel", "post"): Operation(
        "Cancel a run: no step starts any more, and every active step is cancelled",
        DescribeRun,
        body=CancelRequest,
        errors=(400, 403, 404, 409, 413),
    ),
}
