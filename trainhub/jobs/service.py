"""The job service: one place that turns requests into jobs and reads them back.

Used alike by the CLI, the Python API and the Jupyter server extension. It validates,
prepares the job directory (bundle, spec, lineage), hands the job to the backend, and
answers reads from the job directory. Another user's job is reported as not found.

The front door of its parts: who may read or change a job (:mod:`trainhub.jobs.access`),
making one (:mod:`trainhub.jobs.submission`), what a job reads as (:mod:`trainhub.jobs.views`)
and what a rank left (:mod:`trainhub.jobs.rankfiles`); comparing runs
(:mod:`trainhub.experiments.compare`), sweeps (:mod:`trainhub.experiments.controller`),
pipeline runs (:mod:`trainhub.pipelines.controller`) and schedules
(:mod:`trainhub.schedules.service`).
"""

from __future__ import annotations

import functools
import getpass
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from pydantic import BaseModel

from trainhub import settings
from trainhub.backends.base import Backend, Feature
from trainhub.backends.capabilities import MountsDatasets
from trainhub.bundle.requirements import pip_refusal
from trainhub.checkpoint.layout import (
    CheckpointInfo,
    delete_checkpoint,
    list_checkpoints,
    resolve_file,
)
from trainhub.datasets.catalog import DatasetList
from trainhub.experiments import compare as comparing
from trainhub.experiments.comparison import Comparison, Goal
from trainhub.experiments.controller import Sweeps
from trainhub.experiments.models import DescribeSweep, SweepList
from trainhub.experiments.runs import read_run
from trainhub.experiments.sweep import CreateSweep
from trainhub.jobs import confined, control, logs, submission, views
from trainhub.jobs.access import JobAccess
from trainhub.jobs.directory import METRIC_KINDS, JobDir
from trainhub.jobs.models import (
    DescribeJob,
    JobEdit,
    JobPage,
    JobRecord,
    JobSummary,
    ListJobsQuery,
)
from trainhub.jobs.rankfiles import log_source, rank_record, read_notebook
from trainhub.jobs.spec import JobSpec, field_error
from trainhub.jobs.states import JobState
from trainhub.outputs.cleanup import CleanupReport
from trainhub.outputs.files import OutputList, list_outputs, open_output
from trainhub.pipelines.controller import Pipelines
from trainhub.registry.service import Registry
from trainhub.schedules.service import Schedules
from trainhub.usage import queries
from trainhub.usage.compute import JobUsage, job_usage
from trainhub.usage.models import UsageQuery, UsageReport
from trainhub.usage.panel import UsagePanel

if TYPE_CHECKING:
    from trainhub.bundle.snapshot import Snapshot


class JobService:
    def __init__(
        self,
        backend: Backend,
        *,
        workspace_root: Path | None = None,
        jobs_root: Path,
        allow_pip: bool = True,
        max_workspace_bytes: int = 200 * 2**20,
    ):
        self.backend = backend
        # None where no workspace is seen (the cluster's controller): it submits only what a
        # sweep froze.
        self.workspace_root = Path(workspace_root).resolve() if workspace_root else None
        self.jobs_root = Path(jobs_root)
        # %pip needs a backend that installs before the ranks start (not a cluster's images).
        self.pip_refused = pip_refusal(
            admin_allows=allow_pip,
            backend=backend.name,
            backend_installs=Feature.PIP_INSTALL in backend.features,
        )
        self.allow_pip = self.pip_refused is None
        self.max_workspace_bytes = max_workspace_bytes
        self.access = JobAccess(backend, self.jobs_root)
        self._summaries = views.Summaries()

    # --- submit -------------------------------------------------------------------------
    def submit(
        self,
        spec: JobSpec | dict[str, Any],
        *,
        user: str | None = None,
        resubmitted_from: str | None = None,
        abandoned: threading.Event | None = None,
        source: Snapshot | None = None,
    ) -> DescribeJob:
        """Make a job. ``abandoned``, once set (the client went away, the server's time limit
        passed), stops the submit up to the hand-off to the backend: no job is made after it.
        ``source``: a workspace frozen earlier (a sweep's), compiled instead of this service's
        and recorded with the lineage it was frozen with."""
        return submission.submit(
            self,
            spec,
            user=user,
            resubmitted_from=resubmitted_from,
            abandoned=abandoned,
            source=source,
        )

    def validate(
        self, spec: JobSpec | dict[str, Any], *, user: str | None = None, bundle: bool = True
    ) -> list[str]:
        """Every check a submit makes (spec, paths, fit, resume source, bundle), making no job.
        Returns what the bundle would note without refusing (cells left out, workspace links
        skipped), for the researcher to read before submitting. ``bundle=False`` leaves the
        notebook's own checks (its parameters cell, ``%pip``) to the submit."""
        return submission.validate(self, spec, user=user, bundle=bundle)

    def datasets(self) -> DatasetList:
        """The datasets the user's team may ask for by name."""
        return DatasetList(datasets=self.backend.dataset_catalog().infos())

    def dataset_roots(self) -> list[Path]:
        """The workspace first, then the admin's roots, then those the backend mounts, then
        the jobs root: a pipeline step reads an earlier step's outputs as a dataset (on a
        cluster the jobs root lies on the team's volume, a root already)."""
        backend = self.backend
        extra = backend.dataset_roots() if isinstance(backend, MountsDatasets) else []
        workspace = [self.workspace_root] if self.workspace_root is not None else []
        return [*workspace, *settings.dataset_roots(), *extra, self.jobs_root]

    def resubmit(
        self,
        job_id: str,
        *,
        user: str | None = None,
        overrides: dict[str, Any] | None = None,
        abandoned: threading.Event | None = None,
    ) -> DescribeJob:
        """Run the same spec again (optionally changed) as a new job."""
        return submission.resubmit(
            self, job_id, user=user, overrides=overrides, abandoned=abandoned
        )

    def fork(
        self,
        job_id: str,
        step: int | None = None,
        *,
        user: str | None = None,
        overrides: dict[str, Any] | None = None,
        abandoned: threading.Event | None = None,
    ) -> DescribeJob:
        """A fork: a new job with the same spec that starts from one of this job's
        checkpoints (``step``; default its latest)."""
        return self.resubmit(
            job_id,
            user=user,
            overrides={**(overrides or {}), "fork_from": {"job_id": job_id, "step": step}},
            abandoned=abandoned,
        )

    # --- changes ----------------------------------------------------------------------
    def edit(
        self, job_id: str, change: JobEdit | dict[str, Any], *, user: str | None = None
    ) -> JobSummary:
        """Change a job's tags, note or sharing after submission (the owner alone); its spec
        stays as submitted."""
        return control.edit(self.access, job_id, change, user=user)

    def cancel(
        self, job_id: str, *, user: str | None = None, reason: str | None = None
    ) -> DescribeJob:
        return control.cancel(self.access, job_id, user=user, reason=reason)

    def suspend(
        self, job_id: str, *, user: str | None = None, reason: str | None = None
    ) -> DescribeJob:
        """Stop the job with its progress saved and its resources given back (the owner only)."""
        return control.suspend(self.access, job_id, user=user, reason=reason)

    def resume(self, job_id: str, *, user: str | None = None) -> DescribeJob:
        """Queue a suspended job again: same id, next attempt, from its latest checkpoint."""
        return control.resume(self.access, job_id, user=user)

    def resume_or_fork(
        self, job_id: str, step: int | None = None, *, user: str | None = None
    ) -> tuple[DescribeJob, bool]:
        """What ``resume`` meant before forks had their name: a suspended job resumed (the
        same job); any other, or one asked for at ``step``, forked (a new job: True)."""
        if step is None and self.readable(job_id, user).state == JobState.SUSPENDED:
            return self.resume(job_id, user=user), False
        return self.fork(job_id, step, user=user), True

    # --- reads --------------------------------------------------------------------------
    def record(self, job_id: str, user: str | None = None) -> JobRecord:
        return self.access.record(job_id, user)

    @property
    def team(self) -> str | None:
        """The team of this session, whose members' shared jobs it may read."""
        return self.access.team

    def readable(self, job_id: str, user: str | None = None) -> JobRecord:
        """A job ``user`` may read: their own, or a teammate's shared with their team; anything
        else is not found (:class:`trainhub.jobs.access.JobAccess`)."""
        return self.access.readable(job_id, user)

    def owned(self, job_id: str, user: str | None, verb: str) -> JobRecord:
        """A job ``user`` may change (``verb`` it): their own; a teammate's is read-only."""
        return self.access.owned(job_id, user, verb)

    def describe(self, job_id: str, *, user: str | None = None) -> DescribeJob:
        return views.describe(self.backend, self.readable(job_id, user))

    def list_jobs(self, query: ListJobsQuery | None = None, *, user: str | None = None) -> JobPage:
        return self._page(query, user).model()

    def list_jobs_body(self, query: ListJobsQuery, *, user: str | None = None) -> views.Body:
        """:meth:`list_jobs`'s page as the REST API sends it (its JSON's bytes, their ETag): each
        summary serialized once while its job stays, the page while its jobs do (views.Bodies)."""
        return self._page(query, user).body()

    def _page(self, query: ListJobsQuery | None, user: str | None) -> views.PageRows:
        return views.job_page(self.access, query or ListJobsQuery(), user, self._summaries)

    def jobdir(self, job_id: str, user: str | None = None) -> JobDir:
        """The directory of a job ``user`` may read (their own, or shared with their team)."""
        return JobDir(self.readable(job_id, user).job_dir)

    def events(
        self, job_id: str, *, user: str | None = None, offset: int = 0, limit: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        return self.jobdir(job_id, user).read_events(offset, limit)

    def log_dir(self, job_id: str, *, user: str | None = None, rank: int = 0) -> JobDir:
        """The job directory holding ``rank``'s log; an error naming the job's ranks when it
        has no such rank."""
        return JobDir(rank_record(self.access, job_id, user, rank).job_dir)

    def log_reader(self, job_id: str, *, user: str | None = None, rank: int = 0) -> logs.Reader:
        """Raw reads of one rank's log, for a :class:`trainhub.jobs.logs.LogFollower`."""
        return log_source(self.backend, rank_record(self.access, job_id, user, rank), rank)

    def log(
        self,
        job_id: str,
        *,
        user: str | None = None,
        rank: int = 0,
        offset: int = 0,
        length: int = 1 << 20,
    ) -> tuple[bytes, int]:
        """Bytes of one rank's log from ``offset`` (whole characters; whole lines when
        ``length`` cuts it) and the offset to continue from."""
        record = rank_record(self.access, job_id, user, rank)
        chunk = logs.read_chunk(
            log_source(self.backend, record, rank), offset, length, final=record.state.terminal
        )
        return chunk.data, chunk.next_offset

    def log_ranks(self, job_id: str, *, user: str | None = None) -> list[int]:
        return self.jobdir(job_id, user).log_ranks()

    def metrics(
        self,
        job_id: str,
        kind: str,
        *,
        user: str | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        if kind not in METRIC_KINDS:
            raise field_error("kind", f"must be one of {', '.join(METRIC_KINDS)}")
        return self.jobdir(job_id, user).read_metrics(kind, offset, limit)

    def checkpoints(self, job_id: str, *, user: str | None = None) -> list[CheckpointInfo]:
        return list_checkpoints(self.jobdir(job_id, user).checkpoints)

    def open_checkpoint_file(
        self, job_id: str, step: int, name: str, *, user: str | None = None
    ) -> tuple[BinaryIO, str, int]:
        """(file, its name, its size) of a checkpoint file, for a download: opened without
        following links, so what is checked is what is sent."""
        checkpoints = self.jobdir(job_id, user).checkpoints
        path = resolve_file(checkpoints, step, name)
        f = confined.opened_file(checkpoints, f"{path.parent.name}/{path.name}")
        return f, path.name, os.fstat(f.fileno()).st_size

    def delete_checkpoint(self, job_id: str, step: int, *, user: str | None = None) -> None:
        record = self.owned(job_id, user, "delete checkpoints of")
        delete_checkpoint(JobDir(record.job_dir).checkpoints, step)

    # --- outputs ---------------------------------------------------------------------------
    def outputs(self, job_id: str, *, user: str | None = None) -> OutputList:
        """What the job wrote to its outputs directory (links left out, never followed)."""
        return list_outputs(self.jobdir(job_id, user).root)

    def open_output_file(
        self, job_id: str, path: str, *, user: str | None = None
    ) -> tuple[BinaryIO, str, int]:
        """(file, its name, its size) of one output file, for a download: opened without
        following links, confined to the job's outputs directory."""
        return open_output(self.jobdir(job_id, user).root, path)

    def cleanup(self, *, dry_run: bool = False) -> CleanupReport:
        """Apply each team's retention policy to every ended job's outputs (every user's: an
        administrator's call) and report the space each team and job uses."""
        from trainhub.outputs.cleanup import all_records, cleanup

        return cleanup(all_records(self.backend), self.backend.retention, dry_run=dry_run)

    # --- the executed notebook ------------------------------------------------------------
    def notebook(self, job_id: str, *, user: str | None = None, rank: int = 0) -> dict[str, Any]:
        """A rank's executed notebook (nbformat 4 JSON) as it last wrote it, cells done so far
        while the job runs; read without following links. NotFound says why there is none."""
        return read_notebook(rank_record(self.access, job_id, user, rank), rank)

    def notebook_html(self, job_id: str, *, user: str | None = None, rank: int = 0) -> str:
        """The executed notebook rendered by nbconvert, its outputs' HTML sanitized."""
        from trainhub.jobs.notebook_html import to_html

        return to_html(self.notebook(job_id, user=user, rank=rank))

    # --- comparing runs -------------------------------------------------------------------
    def compare(
        self,
        ids: list[str],
        *,
        user: str | None = None,
        goals: dict[str, Goal] | None = None,
        scalars: bool = True,
        series: bool = True,
        points: int | None = None,
    ) -> Comparison:
        """2 to 10 jobs the user may read side by side (:mod:`trainhub.experiments.compare`),
        in the order given: their own and those their team shared; another's is not found.
        Without ``scalars`` the training scalars are not read (a quick first answer)."""
        records = [self.readable(job_id, user) for job_id in comparing.check_ids(ids)]
        runs = [read_run(r, scalars=scalars) for r in records]
        return comparing.compare(runs, goals=goals, series=series, points=points, now=time.time())

    # --- usage ----------------------------------------------------------------------------
    def usage(
        self,
        query: UsageQuery | None = None,
        *,
        user: str | None = None,
        team: str | None = None,
        recompute: bool = False,
    ) -> UsageReport:
        """GPU, CPU and time usage of the jobs that ended since ``query.since``.

        ``user`` (a signed-in user): only that user's own jobs; grouped by team, the totals of
        ``team`` (the user's own team, every member's jobs in it) and none of another team's.
        Without ``user`` (an operator's CLI on the store): every job.
        """
        return queries.usage_report(
            self.backend, query or UsageQuery(), user=user, team=team, recompute=recompute
        )

    def usage_panel(self, *, user: str, team: str | None) -> UsagePanel:
        """The Usage panel of a signed-in user: their own figures, and their team's totals
        (``team``: the session's own team) — no other user's jobs one by one."""
        return queries.usage_panel(self.backend, user=user, team=team)

    def job_usage(self, job_id: str, *, user: str | None = None) -> BaseModel:
        """One job's usage and goodput, derived now from its directory (so far, while it
        runs)."""
        record = self.record(job_id, user)
        row = job_usage(record, threshold_pct=settings.waste_utilization_pct())
        return JobUsage(**row.as_dict(), data_wait=views.data_wait_of(JobDir(record.job_dir)))

    def reconcile(self) -> None:
        """Bring the jobs' records up to date, as a front door does (the CLI on every call,
        a server periodically); nothing where the cluster's controller does it."""
        if self.backend.controlled:
            return
        self.backend.reconcile()
        self.sweeps.advance_all()  # after the backend's view is current
        self.pipelines.advance_all()
        self.schedules.tick_all()

    # --- what drives many jobs, on this service's backend, each made on first use ----------
    sweeps = functools.cached_property(Sweeps)  # trainhub.experiments.controller
    pipelines = functools.cached_property(Pipelines)  # trainhub.pipelines.controller
    schedules = functools.cached_property(Schedules)  # trainhub.schedules.service
    registry = functools.cached_property(lambda self: Registry.of_backend(self.backend))

    # --- sweeps ----------------------------------------------------------------------------

    def create_sweep(
        self, request: CreateSweep | dict[str, Any], *, user: str | None = None
    ) -> DescribeSweep:
        return self.sweeps.create(request, user=user or getpass.getuser())

    def list_sweeps(self, *, user: str | None = None) -> SweepList:
        return self.sweeps.list(user=user)

    def describe_sweep(self, sweep_id: str, *, user: str | None = None) -> DescribeSweep:
        return self.sweeps.describe(sweep_id, user=user)

    def cancel_sweep(
        self, sweep_id: str, *, user: str | None = None, reason: str | None = None
    ) -> DescribeSweep:
        return self.sweeps.cancel(
            sweep_id, user=user, reason=reason or f"its sweep was cancelled by {user or 'you'}"
        )
