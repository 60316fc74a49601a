"""The Python API's schedules: ``trainhub.schedule``, ``list_schedules``, ``get_schedule``
and a :class:`Schedule` handle, the CLI's schedule verbs for notebook cells."""

from __future__ import annotations

import getpass
from typing import Any

from trainhub.api import Job, PipelineRun, _current_notebook, build_spec, service
from trainhub.schedules.model import is_pipeline_file
from trainhub.schedules.views import RunView, ScheduleView


def schedule(
    source: str | None = None,
    *,
    cron: str,
    timezone: str = "UTC",
    schedule_name: str | None = None,
    concurrency: str = "forbid",
    missed: str = "run-once",
    starting_deadline: str | float | None = None,
    paused: bool = False,
    notify_failure: bool = True,
    **fields: Any,
) -> Schedule:
    """Run a notebook (default: the one this kernel belongs to) on ``cron`` in ``timezone``;
    each run is a job of the spec ``fields`` describe, as :func:`submit` takes them. A
    ``*.pipeline.yaml`` source runs that pipeline instead, with ``parameters`` and ``cache``
    (default True) as :func:`run_pipeline` takes them, and no job fields. The workspace is
    frozen now: every run compiles from it."""
    source = source or _current_notebook()
    if source is None:
        raise ValueError("source: name the notebook to schedule")
    if is_pipeline_file(source):
        parameters, cache = fields.pop("parameters", {}), fields.pop("cache", True)
        if fields:
            raise ValueError(
                f"{', '.join(sorted(fields))}: job fields, and {source} is a pipeline: its "
                "steps take theirs from the pipeline file; a schedule of it takes parameters "
                "and cache."
            )
        target = {"kind": "pipeline", "file": source, "parameters": parameters, "cache": cache}
        name = source.rsplit("/", 1)[-1].split(".pipeline.")[0]
    else:
        job = build_spec(source, **fields)
        target, name = {"kind": "notebook", "job": job}, job["name"]
    request = {
        "name": schedule_name or name[:32].rstrip("-"),
        "target": target,
        "cron": cron,
        "timezone": timezone,
        "concurrency": concurrency,
        "missed": missed,
        "starting_deadline": starting_deadline,
        "paused": paused,
        "notify_failure": notify_failure,
    }
    view = service().schedules.create(request, user=getpass.getuser())
    return Schedule(view.id)


def list_schedules() -> list[Schedule]:
    """Your schedules, newest first. (Not ``schedules``: that is the package's name, which
    an import of it would put in its place.)"""
    listed = service().schedules.list(user=getpass.getuser())
    return [Schedule(v.id) for v in listed.schedules]


def get_schedule(schedule_id: str) -> Schedule:
    return Schedule(schedule_id)


class Schedule:
    """One of your schedules: read it, pause, resume, run it now, delete it."""

    def __init__(self, schedule_id: str):
        self.id = schedule_id

    def _call(self, verb: str) -> ScheduleView:
        return getattr(service().schedules, verb)(self.id, user=getpass.getuser())

    def describe(self) -> ScheduleView:
        return self._call("describe")

    def history(self) -> list[RunView]:
        """Its runs, newest first: scheduled time, job, outcome."""
        return self.describe().runs

    def pause(self) -> ScheduleView:
        return self._call("pause")

    def resume(self) -> ScheduleView:
        return self._call("resume")

    def run_now(self) -> Job | PipelineRun:
        """The job (or, for a pipeline schedule, the pipeline run) of a run now."""
        run = self._call("run_now").runs[0]
        if run.pipeline_run is not None:
            return PipelineRun(run.pipeline_run)
        if run.job_id is None:
            raise ValueError(f"schedule {self.id}: the run was refused: {run.reason}")
        return Job(run.job_id)

    def delete(self) -> None:
        service().schedules.delete(self.id, user=getpass.getuser())

    def __repr__(self) -> str:
        return f"Schedule({self.id!r})"
