"""The Python API: the CLI's verbs for notebook cells.

job = trainhub.submit("train.ipynb", processes_per_worker=2)
job.logs(follow=True)
job.checkpoints()

run = trainhub.run_pipeline("train.pipeline.yaml", parameters={"epochs": 5}, wait=True)
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

from pydantic import ValidationError

from trainhub.datasets.catalog import DatasetInfo
from trainhub.jobs.logs import LogFollower, split_lines
from trainhub.jobs.models import DescribeJob, JobPage, ListJobsQuery
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import default_name, explain
from trainhub.jobs.states import JobState
from trainhub.pipelines.models import DescribeRun, RunList
from trainhub.reprs import CheckpointList, jobs_html, jobs_repr
from trainhub.usage.models import UsageQuery, UsageReport


def service() -> JobService:
    """The job service of this process, shared with the widgets."""
    from trainhub.backends.factory import shared_service

    return shared_service()


def build_spec(
    source: str,
    *,
    name: str | None = None,
    cells: list[int] | None = None,
    cell_tags: list[str] | None = None,
    args: list[str] | None = None,
    parameters: dict[str, Any] | None = None,
    allow_new_parameters: bool = False,
    workers: int | str = 1,  # "MIN:MAX" for an elastic job
    processes_per_worker: int | None = None,
    gpus_per_worker: int = 0,
    gpu_share: str | None = None,
    cpu: float | None = None,
    memory: str | None = None,
    image: str | None = None,
    team: str | None = None,
    queue: str | None = None,
    priority: str = "normal",
    max_runtime: str | float | None = None,
    retry: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    datasets: dict[str, str] | list[str | dict[str, Any]] | None = None,
    tags: list[str] | None = None,
    fork_from: dict[str, Any] | None = None,
    resume_from: dict[str, Any] | None = None,  # fork_from's older spelling
    notebook_ranks: list[int] | str | None = None,
    notify: list[str] | None = None,
) -> dict[str, Any]:
    """The JSON form of a JobSpec from keyword arguments (validated on submit).

    ``datasets``: names (``["imagenet"]``, those ``trainhub.datasets_available()`` lists), or
    ``{name: path}`` / ``[{"name": ..., "path": ...}]`` for paths of one's own."""
    if source.endswith(".py"):
        src: dict[str, Any] = {"kind": "script", "path": source, "args": list(args or [])}
    else:
        selection: dict[str, Any] = {"mode": "all"}
        if cells:
            selection = {"mode": "indices", "indices": list(cells)}
        elif cell_tags:
            selection = {"mode": "tags", "tags": list(cell_tags)}
        src = {"kind": "notebook", "path": source, "cells": selection}
    if isinstance(datasets, dict):
        datasets = [{"name": k, "path": v} for k, v in datasets.items()]
    spec: dict[str, Any] = {
        "name": name or default_name(source),
        "source": src,
        "parameters": parameters or {},
        "allow_new_parameters": allow_new_parameters,
        "resources": {
            "workers": workers,
            "processes_per_worker": processes_per_worker,
            "gpus_per_worker": gpus_per_worker,
            **({"gpu_share": gpu_share} if gpu_share is not None else {}),
            "cpu": cpu,
            "memory": memory,
        },
        "image": image,
        "team": team,
        "queue": queue,
        "priority": priority,
        "max_runtime": max_runtime,
        "env": env or {},
        "datasets": datasets or [],
        "tags": tags or [],
        "fork_from": fork_from or resume_from,
    }
    if retry:
        spec["retry"] = retry
    if notebook_ranks is not None:
        spec["notebook_ranks"] = notebook_ranks
    if notify:
        spec["notify"] = list(notify)
    return spec


def _current_notebook() -> str | None:
    """Inside a Jupyter kernel the server names the notebook in JPY_SESSION_NAME."""
    path = os.environ.get("JPY_SESSION_NAME")
    return path if path and path.endswith(".ipynb") else None


def submit(source: str | None = None, *, wait: bool = False, **fields: Any) -> Job:
    """Submit a notebook (default: the one this kernel belongs to) or a script as a job."""
    source = source or _current_notebook()
    if source is None:
        raise ValueError("source: name the notebook or script to submit")
    described = service().submit(build_spec(source, **fields))
    job = Job(described.id, described)
    if wait:
        job.wait()
    return job


def datasets_available() -> list[DatasetInfo]:
    """The datasets the user's team may ask for by name."""
    return service().datasets().datasets


def get_job(job_id: str) -> Job:
    return Job(job_id)


class Jobs(JobPage):
    """``trainhub.jobs()``: a page of jobs that shows as a table in a notebook."""

    def __repr__(self) -> str:
        return jobs_repr(self.jobs, self.total)

    def _repr_html_(self) -> str:
        return jobs_html(self.jobs, self.total)


def jobs(states: list[str] | None = None, limit: int = 50) -> Jobs:
    query = ListJobsQuery(states=[JobState(s) for s in states] if states else None, limit=limit)
    page = service().list_jobs(query)
    return Jobs.model_construct(**dict(page))


def usage(
    since: str = "30d", by: str = "user", *, user: str | None = None, recompute: bool = False
) -> UsageReport:
    """GPU, CPU and time usage of the jobs that ended since ``since`` (``30d``, ``12h``, a
    date), grouped ``by`` user, team, pool or day; every user's jobs unless ``user``."""
    try:
        query = UsageQuery(since=since, by=by)  # type: ignore[arg-type]
    except ValidationError as e:
        # One line naming the argument; a ValueError (exit 1), as a bad argument is, not a
        # refused spec (exit 2).
        raise ValueError(str(explain(e))) from None
    return service().usage(query, user=user, recompute=recompute)


def compare(*job_ids: str, goals: dict[str, str] | None = None, points: int | None = None) -> Any:
    """2 to 10 jobs side by side (a :class:`trainhub.experiments.comparison.Comparison`);
    ``goals`` says per scalar whether its best is its ``min`` or ``max``."""
    return service().compare(list(job_ids), goals=goals, points=points)  # type: ignore[arg-type]


class Job:
    def __init__(self, job_id: str, described: DescribeJob | None = None):
        self.id = job_id
        self._described = described

    def describe(self) -> DescribeJob:
        self._described = service().describe(self.id)
        return self._described

    @property
    def status(self) -> JobState:
        return self.describe().state

    @property
    def done(self) -> bool:
        return self.status.terminal

    def wait(self, timeout: float | None = None, interval: float = 0.5) -> JobState:
        deadline = None if timeout is None else time.monotonic() + timeout
        # A suspended job waits for a person to resume it: waiting ends there too.
        while not ((state := self.status).terminal or state == JobState.SUSPENDED):
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {self.id} still {state.value} after {timeout} s")
            time.sleep(interval)
        return state

    def cancel(self, reason: str | None = None) -> DescribeJob:
        self._described = service().cancel(self.id, reason=reason)
        return self._described

    def resubmit(self, **overrides: Any) -> Job:
        described = service().resubmit(self.id, overrides=overrides)
        return Job(described.id, described)

    def suspend(self, reason: str | None = None) -> DescribeJob:
        """Save and stop; its GPUs are freed until :meth:`resume`."""
        self._described = service().suspend(self.id, reason=reason)
        return self._described

    def resume(self, step: int | None = None) -> Job:
        """A suspended job queued again: the same job, from its latest checkpoint. For any
        other job, or with ``step``, this was once the name of :meth:`fork` (and does it, with
        a warning)."""
        described, forked = service().resume_or_fork(self.id, step)
        if not forked:
            self._described = described
            return self
        warnings.warn(
            "Job.resume(step) of a job that is not suspended makes a new job: "
            "its name is Job.fork(step)",
            DeprecationWarning,
            stacklevel=2,
        )
        return Job(described.id, described)

    def fork(self, step: int | None = None, **overrides: Any) -> Job:
        """A new job with this one's spec (``overrides`` changed) that starts from its
        checkpoint of ``step`` (default: the latest)."""
        described = service().fork(self.id, step, overrides=overrides)
        return Job(described.id, described)

    def checkpoints(self) -> CheckpointList:
        """The job's checkpoints, oldest first; shows as a table in a notebook."""
        return CheckpointList(service().checkpoints(self.id))

    def events(self) -> list[dict[str, Any]]:
        return service().events(self.id)[0]

    def metrics(self, kind: str = "scalars") -> list[dict[str, Any]]:
        return service().metrics(self.id, kind)[0]

    def iter_logs(
        self, rank: int = 0, follow: bool = False, interval: float = 0.3
    ) -> Iterator[str]:
        """Lines of one rank's log; with ``follow``, until the job has ended and all is read."""
        # Not following: a last line without its newline is read as it is now.
        log = LogFollower(
            service().log_reader(self.id, rank=rank), hold_partial_s=None if follow else 0.0
        )
        pending = ""
        while True:
            final = follow and self.status.terminal  # read after it: the log is then complete
            chunks = log.drain(final=final)
            for chunk in chunks:
                lines, pending = split_lines(pending, chunk.text)
                yield from lines
            if not follow or final:
                if pending:
                    yield pending
                return
            if not chunks:
                time.sleep(interval)

    def logs(self, rank: int = 0, follow: bool = False, file: TextIO | None = None) -> str | None:
        """Print a rank's log (following it live with ``follow=True``); returns it when not
        following."""
        if not follow:
            return "\n".join(self.iter_logs(rank))
        out = file or sys.stdout
        for line in self.iter_logs(rank, follow=True):
            print(line, file=out, flush=True)
        return None

    def __repr__(self) -> str:
        d = self._described
        return (
            f"<trainhub.Job {d.name} ({self.id}) {d.state.value}>"
            if d
            else f"<trainhub.Job {self.id}>"
        )

    def _ipython_display_(self) -> None:
        try:
            from trainhub.widgets import JobWidget
        except ImportError:
            print(repr(self))
            return
        from IPython.display import display

        display(JobWidget(self))


# --- pipelines ---------------------------------------------------------------------------------
def run_pipeline(
    file: str | None = None,
    *,
    parameters: dict[str, Any] | None = None,
    cache: bool = True,
    wait: bool = False,
    from_run: str | None = None,
) -> PipelineRun:
    """Start a run of the pipeline file ``file`` (``*.pipeline.yaml``, relative to the
    workspace) with ``parameters`` over its defaults; ``cache=False`` runs every step.
    ``from_run`` instead: run that earlier run (one's own, or a teammate's shared with the
    team) again as one's own, ``parameters`` over its parameters."""
    import getpass

    pipelines = service().pipelines
    if (file is None) == (from_run is None):
        raise TypeError("run_pipeline: give a pipeline file, or from_run")
    if from_run is not None:
        run = pipelines.start_again(
            from_run, user=getpass.getuser(), parameters=parameters, cache=cache
        )
    else:
        run = pipelines.start(user=getpass.getuser(), file=file, parameters=parameters, cache=cache)
    handle = PipelineRun(run.id, run)
    if wait:
        handle.wait()
    return handle


def pipeline_runs() -> RunList:
    """The pipeline runs, newest first."""
    return service().pipelines.list(user=None)


class PipelineRun:
    """A pipeline run: its steps' statuses, and the verbs of ``trainhub pipeline``."""

    def __init__(self, run_id: str, described: DescribeRun | None = None):
        self.id = run_id
        self._described = described

    def describe(self) -> DescribeRun:
        self._described = service().pipelines.describe(self.id, user=None)
        return self._described

    @property
    def state(self) -> str:
        return self.describe().state.value

    def wait(self, timeout: float | None = None, interval: float = 2.0) -> DescribeRun:
        """Until the run ended, reconciling as the CLI does (which advances it)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            service().reconcile()
            run = self.describe()
            if run.state.value != "running":
                return run
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"pipeline run {self.id} still running after {timeout}s")
            time.sleep(interval)

    def retry(self) -> DescribeRun:
        self._described = service().pipelines.retry(self.id, user=None)
        return self._described

    def cancel(self, reason: str | None = None) -> DescribeRun:
        self._described = service().pipelines.cancel(self.id, user=None, reason=reason)
        return self._described

    def jobs(self) -> list[Job]:
        """The jobs of its steps (those it ran, and the earlier ones whose results it reuses)."""
        run = self._described or self.describe()
        return [
            Job(v.job_id or v.reused_from or "")
            for v in run.step_views
            if v.job_id or v.reused_from
        ]

    def __repr__(self) -> str:
        d = self._described
        return (
            f"<trainhub.PipelineRun {self.id} {d.state.value}>"
            if d
            else f"<trainhub.PipelineRun {self.id}>"
        )
