"""The job service: one place that turns requests into jobs and reads them back.

Used alike by the CLI, the Python API and the Jupyter server extension. It validates,
prepares the job directory (bundle, spec, lineage), hands the job to the backend, and
answers reads from the job directory. Another user's job is reported as not found.
"""

from __future__ import annotations

import getpass
import os
import re
import secrets
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from pydantic import BaseModel, ValidationError

from trainhub import settings
from trainhub.backends.base import Backend, Feature
from trainhub.checkpoint.layout import (
    CheckpointInfo,
    delete_checkpoint,
    list_checkpoints,
    resolve_file,
)
from trainhub.datasets.catalog import DatasetList, Readable
from trainhub.errors import Conflict, NotFound, ReadOnly
from trainhub.experiments import compare as comparing
from trainhub.experiments.comparison import Comparison, Goal
from trainhub.experiments.controller import Sweeps
from trainhub.experiments.models import DescribeSweep, SweepList
from trainhub.experiments.runs import read_run
from trainhub.experiments.sweep import CreateSweep
from trainhub.jobs import confined, logs, sharing
from trainhub.jobs.datasets import check_dataset_paths
from trainhub.jobs.directory import JobDir, notebook_name, write_json_atomic
from trainhub.jobs.models import (
    DescribeJob,
    JobBase,
    JobDetails,
    JobEdit,
    JobPage,
    JobRecord,
    JobSummary,
    LatestScalar,
    ListJobsQuery,
    fields_of,
)
from trainhub.jobs.naming import successor_name
from trainhub.jobs.spec import JobSpec, explain, field_error, parse_spec
from trainhub.jobs.states import JobState
from trainhub.outputs.cleanup import CleanupReport
from trainhub.outputs.files import OutputList, list_outputs, open_output
from trainhub.usage.compute import JobUsage, job_usage
from trainhub.usage.models import UsageBy, UsageQuery, UsageReport, since_time
from trainhub.usage.panel import MONTH_DAYS, UsagePanel, panel, period_starts

if TYPE_CHECKING:
    from trainhub.bundle.snapshot import Snapshot

TIMELINE_EVENTS = frozenset(
    {
        "submitted",
        "state",
        "retry",
        "verdict",
        "cancel_requested",
        "pip_install",
        "suspend_requested",
        "suspended",
    }
)
METRIC_KINDS = ("scalars", "gpu", "system")


class SubmitAbandoned(Conflict):
    """The submit was given up (its client went away, or its time ran out) before the job was
    handed to the backend; no job was made."""


def _check_wanted(abandoned: threading.Event | None) -> None:
    if abandoned is not None and abandoned.is_set():
        raise SubmitAbandoned(
            "The submit was given up before the job was created; no job was made."
        )


def origin_of(record: JobRecord) -> str | None:
    """What a job runs again, in words: 'resume of X at step 74', 'resubmit of X'."""
    ref = record.spec.resume_from
    if ref is not None:
        at = f"at step {ref.step}" if ref.step is not None else "from its latest checkpoint"
        return f"resume of {ref.job_id} {at}"
    if record.resubmitted_from:
        return f"resubmit of {record.resubmitted_from}"
    return None


def _latest_scalar(record: dict[str, Any] | None) -> LatestScalar | None:
    try:
        return None if record is None else LatestScalar.model_validate(record)
    except ValueError:  # a line the job wrote that is not a scalar record
        return None


def parse_edit(data: dict[str, Any]) -> JobEdit:
    try:
        return JobEdit.model_validate(data)
    except ValidationError as e:
        raise explain(e) from None


def _no_notebook(record: JobRecord, rank: int) -> str:
    """Why a job has no executed notebook (of ``rank``) to show."""
    spec = record.spec
    if spec.source.kind != "notebook":
        return f"Job {record.id} runs a script; only a notebook job keeps an executed notebook."
    ranks = spec.notebook_ranks
    if ranks != "all" and rank not in ranks:
        return (
            f"Rank {rank} of job {record.id} keeps no executed notebook (the spec's "
            f"notebook_ranks is {ranks}); its output is in its log."
        )
    if record.state in (JobState.QUEUED, JobState.STARTING):
        return f"Job {record.id} has not started; its executed notebook appears as it runs."
    return (
        f"Job {record.id} has no executed notebook of rank {rank}: the rank wrote none (it may "
        "have stopped before its first cell); its log says what happened."
    )


def _ranks_text(world: int) -> str:
    if world == 1:
        return "only rank is 0"
    if world == 2:
        return "ranks are 0 and 1"
    return f"ranks are 0 to {world - 1}"


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
        self.allow_pip = allow_pip and Feature.PIP_INSTALL in backend.features
        self.max_workspace_bytes = max_workspace_bytes
        self._sweeps: Sweeps | None = None

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
        from trainhub.bundle.compile import compile_bundle
        from trainhub.jobs.lineage import collect_lineage

        _check_wanted(abandoned)
        spec = spec if isinstance(spec, JobSpec) else parse_spec(spec)
        user = user or getpass.getuser()
        workspace = self._workspace(source)
        spec, named = self._check_paths(spec, workspace)
        self.backend.check_image(spec.image)  # refused before anything is made
        if spec.resume_from is not None:
            self._check_resume(spec, user)
        job_id = f"{spec.name}-{secrets.token_hex(4)}"
        jobdir = JobDir(self.jobs_root / job_id).create()
        record = self._new_record(spec, user, job_id, str(jobdir.root), resubmitted_from)
        try:
            self.backend.check_fits(record)
            manifest = compile_bundle(
                spec,
                workspace,
                jobdir.bundle,
                allow_pip=self.allow_pip,
                max_workspace_bytes=self.max_workspace_bytes,
                frozen=source is not None,
            )
            write_json_atomic(
                jobdir.spec, {**spec.model_dump(mode="json"), "id": job_id, "user": user}
            )
            jobdir.emit(
                "submitted",
                user=user,
                host=socket.gethostname(),
                content_hash=manifest.content_hash,
            )
            # The last moment to give up: after this the backend has the job.
            _check_wanted(abandoned)
            record = self.backend.submit(record)
        except BaseException:
            # Refused or broken: leave nothing half-made behind.
            shutil.rmtree(jobdir.root, ignore_errors=True)
            raise
        # After the hand-off, so that collecting it does not delay the start.
        lineage = collect_lineage(
            spec,
            workspace,
            manifest,
            user=user,
            cache_dir=self.jobs_root.parent / ".cache",
            dataset_views={n: (r.view_path, r.entry.content_hash) for n, r in named.items()},
            ran_image=self.backend.ran_image(),
            workspace_facts=source.lineage if source is not None else None,
        )
        write_json_atomic(jobdir.lineage, lineage)
        return self._describe(self.backend.get(job_id) or record)

    def validate(self, spec: JobSpec | dict[str, Any], *, user: str | None = None) -> list[str]:
        """Every check a submit makes (spec, paths, fit, resume source, bundle), making no job.
        Returns what the bundle would note without refusing (cells left out, workspace links
        skipped), for the researcher to read before submitting."""
        from trainhub.bundle.compile import compile_bundle

        spec = spec if isinstance(spec, JobSpec) else parse_spec(spec)
        user = user or getpass.getuser()
        workspace = self._workspace(None)
        spec, _ = self._check_paths(spec, workspace)
        self.backend.check_image(spec.image)
        if spec.resume_from is not None:
            self._check_resume(spec, user)
        self.backend.check_fits(self._new_record(spec, user, f"{spec.name}-validate", "", None))
        with tempfile.TemporaryDirectory(prefix="trainhub-validate-") as tmp:
            manifest = compile_bundle(
                spec,
                workspace,
                Path(tmp) / "bundle",
                allow_pip=self.allow_pip,
                max_workspace_bytes=self.max_workspace_bytes,
            )
        return list(manifest.warnings)

    @staticmethod
    def _new_record(
        spec: JobSpec, user: str, job_id: str, job_dir: str, resubmitted_from: str | None
    ) -> JobRecord:
        return JobRecord(
            id=job_id,
            name=spec.name,
            user=user,
            team=spec.team,
            queue=spec.queue,
            priority=spec.priority.rank,
            state=JobState.QUEUED,
            spec=spec,
            job_dir=job_dir,
            gpus=spec.resources.total_gpus,
            created_at=time.time(),
            resubmitted_from=resubmitted_from,
            tags=spec.tags,
        )

    def _workspace(self, source: Snapshot | None) -> Path:
        """Where a submit compiles from: a frozen workspace, else this service's own."""
        if source is not None:
            return source.root
        if self.workspace_root is None:
            raise Conflict(
                "This trainhub sees no workspace (the cluster's controller): it submits only "
                "a sweep's trials, from the workspace the sweep froze."
            )
        return self.workspace_root

    def _check_paths(self, spec: JobSpec, workspace: Path) -> tuple[JobSpec, dict[str, Readable]]:
        """The spec with its datasets by name resolved (a name the user's team may not read is
        refused naming those it may), and those datasets; every path checked."""
        path = (workspace / spec.source.path).resolve()
        if not path.is_relative_to(workspace):
            raise field_error("source.path", f"{spec.source.path} is outside the workspace")
        if not path.is_file():
            raise field_error("source.path", f"no such file: {spec.source.path}")
        spec, named = self.backend.dataset_catalog().resolve(spec)
        check_dataset_paths(spec.datasets, self.dataset_roots())
        return spec, named

    def datasets(self) -> DatasetList:
        """The datasets the user's team may ask for by name."""
        return DatasetList(datasets=self.backend.dataset_catalog().infos())

    def dataset_roots(self) -> list[Path]:
        """The workspace first, then the admin's roots, then those the backend mounts."""
        extra = getattr(self.backend, "dataset_roots", ())  # a cluster team's volumes
        workspace = [self.workspace_root] if self.workspace_root is not None else []
        return [*workspace, *settings.dataset_roots(), *extra]

    def _check_resume(self, spec: JobSpec, user: str) -> None:
        ref = spec.resume_from
        assert ref is not None
        source = self.readable(ref.job_id, user)
        infos = list_checkpoints(JobDir(source.job_dir).checkpoints)
        if not infos:
            raise Conflict(f"Job {ref.job_id} has no checkpoint to resume from.")
        if ref.step is not None and ref.step not in {c.step for c in infos}:
            raise NotFound(f"Job {ref.job_id} has no checkpoint at step {ref.step}.")

    def resubmit(
        self,
        job_id: str,
        *,
        user: str | None = None,
        overrides: dict[str, Any] | None = None,
        abandoned: threading.Event | None = None,
    ) -> DescribeJob:
        """Run the same spec again (optionally changed) as a new job."""
        user = user or getpass.getuser()
        old = self.readable(job_id, user)  # a teammate's shared job runs again as one's own
        if not sharing.is_owner(old, user):
            self._check_teammate_source(old, overrides)
        data = old.spec.model_dump(mode="json")
        data.pop("sweep", None)  # a trial run again is a job of its own, not one of the sweep's
        data.update(overrides or {})
        if data.get("name") == old.name:  # told apart from the job it runs again
            data["name"] = self._successor_name(old, user)
        return self.submit(data, user=user, resubmitted_from=job_id, abandoned=abandoned)

    def _check_teammate_source(self, old: JobRecord, overrides: dict[str, Any] | None) -> None:
        """A run again compiles the notebook from the workspace: a teammate's job runs the file
        of that path in one's own workspace (a clone of the team's repository), or is refused
        saying so before anything is made."""
        source = (overrides or {}).get("source")
        path = source.get("path") if isinstance(source, dict) else None
        path = path if isinstance(path, str) and path else old.spec.source.path
        if not (self._workspace(None) / path).resolve().is_file():
            raise field_error(
                "source.path",
                f"{path} (of {old.user}'s job {old.id}) is not in your workspace: running a "
                "teammate's job again runs that file from your own workspace",
            )

    def resume(
        self,
        job_id: str,
        step: int | None = None,
        *,
        user: str | None = None,
        overrides: dict[str, Any] | None = None,
        abandoned: threading.Event | None = None,
    ) -> DescribeJob:
        """A new job with the same spec that starts from one of this job's checkpoints."""
        return self.resubmit(
            job_id,
            user=user,
            overrides={**(overrides or {}), "resume_from": {"job_id": job_id, "step": step}},
            abandoned=abandoned,
        )

    def _successor_name(self, old: JobRecord, user: str) -> str:
        """``name-2`` (the next number free among the user's jobs) for a job run again; the
        number of a job that was itself run again counts on (``train-2`` -> ``train-3``)."""
        numbered = old.resubmitted_from is not None
        base = re.sub(r"-\d+$", "", old.name) if numbered else old.name
        taken = self.backend.list_jobs(
            user=user, states=None, limit=500, before_seq=None, search=base
        )
        return successor_name(old.name, (r.name for r in taken), numbered=numbered)

    def edit(
        self, job_id: str, change: JobEdit | dict[str, Any], *, user: str | None = None
    ) -> JobSummary:
        """Change a job's tags, note or sharing after submission (the owner alone); its spec
        stays as submitted."""
        change = change if isinstance(change, JobEdit) else parse_edit(change)
        user = user or getpass.getuser()
        record = self.owned(job_id, user, "change")
        teams = Feature.TEAM_SHARING in self.backend.features and record.team is not None
        if change.shared is None or (change.shared == sharing.Sharing.PRIVATE and not teams):
            # nothing to share with: private it stays
            return self._summary(self.backend.edit(job_id, tags=change.tags, note=change.note))
        if not teams:
            raise Conflict(
                f"Job {job_id} cannot be shared: sharing with a team needs a hub with teams "
                f"(this server's {self.backend.name} backend keeps each user's jobs apart)."
            )
        edited = self.backend.edit(job_id, tags=change.tags, note=change.note, shared=change.shared)
        return self._summary(edited)

    def cancel(
        self, job_id: str, *, user: str | None = None, reason: str | None = None
    ) -> DescribeJob:
        user = user or getpass.getuser()
        self.owned(job_id, user, "cancel")
        record = self.backend.cancel(job_id, reason or f"cancelled by {user}")
        try:
            return self._describe(record)
        except confined.NotAJobFile:
            # Stopping a job that swapped its files for links must always work: the answer
            # then leaves out what the job directory would have told.
            return self._describe(record, files=False)

    def suspend(
        self, job_id: str, *, user: str | None = None, reason: str | None = None
    ) -> DescribeJob:
        """Stop the job with its progress saved and its resources given back (the owner only)."""
        user = user or getpass.getuser()
        self.record(job_id, user)
        return self._describe(self.backend.suspend(job_id, reason or f"suspended by {user}"))

    def resume_suspended(self, job_id: str, *, user: str | None = None) -> DescribeJob:
        """Queue a suspended job again: same id, next attempt, from its latest checkpoint."""
        user = user or getpass.getuser()
        self.record(job_id, user)
        return self._describe(self.backend.resume(job_id))

    # --- reads --------------------------------------------------------------------------
    def record(self, job_id: str, user: str | None = None) -> JobRecord:
        record = self.backend.get(job_id)
        if record is None or (user is not None and record.user != user):
            raise NotFound(f"No job {job_id}.")
        return record

    @property
    def team(self) -> str | None:
        """The team of this session, whose members' shared jobs it may read."""
        return self.backend.team_name()

    def readable(self, job_id: str, user: str | None = None) -> JobRecord:
        """A job ``user`` may read: their own, or a teammate's shared with their team
        (:mod:`trainhub.jobs.sharing`); anything else is not found, alike for a job that does
        not exist and one of another user or team."""
        # Ids are names with a suffix: anything else ("..", a path) is no job, asked of nobody.
        record = self.backend.get(job_id) if sharing.JOB_ID.match(job_id) else None
        if record is not None and (
            sharing.is_owner(record, user)
            or sharing.teammate_may_read(record, str(user), self.team, self.jobs_root)
        ):
            return record
        raise NotFound(f"No job {job_id}.")

    def owned(self, job_id: str, user: str | None, verb: str) -> JobRecord:
        """A job ``user`` may change (``verb`` it): their own. A teammate's shared job is
        refused as read-only (they see it already); any other as not found."""
        record = self.readable(job_id, user)
        if not sharing.is_owner(record, user):
            raise ReadOnly(sharing.read_only_sentence(record, verb))
        return record

    def describe(self, job_id: str, *, user: str | None = None) -> DescribeJob:
        return self._describe(self.readable(job_id, user))

    def list_jobs(self, query: ListJobsQuery | None = None, *, user: str | None = None) -> JobPage:
        query = query or ListJobsQuery()
        # A user's list holds what their team shared with them, where the backend has teams.
        shared = {"with_shared": True} if self._shares(user) else {}
        with self.backend.reading():  # the page, its total and its wait reasons agree
            records = self.backend.list_jobs(
                user=user,
                states=query.states,
                limit=query.limit,
                before_seq=query.before,
                sweep_id=query.sweep,
                search=query.search,
                **shared,
            )
            total = self.backend.count(
                user=user,
                states=query.states,
                sweep_id=query.sweep,
                search=query.search,
                **shared,
            )
            waits = self.backend.wait_reasons(records)
        next_before = records[-1].seq if len(records) == query.limit else None
        return JobPage(
            jobs=[
                self._summary(r, waits.get(r.id), scalar=query.scalar)
                for r in records
                if self._visible(r, user)
            ],
            next_before=next_before,
            total=total,
        )

    def _shares(self, user: str | None) -> bool:
        return (
            user is not None
            and Feature.TEAM_SHARING in self.backend.features
            and self.team is not None
        )

    def _visible(self, record: JobRecord, user: str | None) -> bool:
        """A listed job of another member counts only when it passes the teammate's check."""
        return sharing.is_owner(record, user) or sharing.teammate_may_read(
            record, str(user), self.team, self.jobs_root
        )

    def _summary(
        self,
        record: JobRecord,
        wait: tuple[str | None, int | None] | None = None,
        *,
        scalar: str | None = None,
    ) -> JobSummary:
        reason, ahead = wait if wait is not None else self.backend.wait_reason(record)
        latest = JobDir(record.job_dir).last_scalar(scalar) if scalar else None
        return JobSummary(
            **fields_of(record, JobBase),
            priority=record.spec.priority.value,
            world_size=record.spec.resources.world_size,
            wait_reason=reason,
            position=ahead,
            failure_class=record.verdict.failure_class
            if record.verdict and record.state.terminal
            else None,
            source=record.spec.source.path,
            parameters=record.spec.parameters,
            origin=origin_of(record),
            scalar=_latest_scalar(latest),
        )

    def _describe(self, record: JobRecord, *, files: bool = True) -> DescribeJob:
        # Read without following links: a job that swapped its files for links or FIFOs is
        # refused with an error naming the file, never read through.
        jobdir = JobDir(record.job_dir)
        lineage = jobdir.read_lineage() if files else None
        events = jobdir.iter_events() if files else []
        timeline = [e for e in events if e.get("type") in TIMELINE_EVENTS]
        return DescribeJob(
            **fields_of(self._summary(record), JobSummary),
            **fields_of(record, JobDetails),
            lineage=lineage,
            timeline=timeline,
        )

    def jobdir(self, job_id: str, user: str | None = None) -> JobDir:
        """The directory of a job ``user`` may read (their own, or shared with their team)."""
        return JobDir(self.readable(job_id, user).job_dir)

    def events(
        self, job_id: str, *, user: str | None = None, offset: int = 0, limit: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        return self.jobdir(job_id, user).read_events(offset, limit)

    def _log_record(self, job_id: str, user: str | None, rank: int) -> JobRecord:
        record = self.readable(job_id, user)
        if rank < 0:
            raise field_error("rank", "must be 0 or more")
        world = record.spec.resources.world_size
        if rank >= world:
            raise NotFound(f"Job {job_id} has no rank {rank}; its {_ranks_text(world)}.")
        return record

    def log_dir(self, job_id: str, *, user: str | None = None, rank: int = 0) -> JobDir:
        """The job directory holding ``rank``'s log; an error naming the job's ranks when it
        has no such rank."""
        return JobDir(self._log_record(job_id, user, rank).job_dir)

    def _log_source(self, record: JobRecord, rank: int) -> logs.Reader:
        jobdir = JobDir(record.job_dir)
        on_disk = jobdir.log_reader(rank)

        def read(offset: int, length: int) -> bytes:
            if not jobdir.has_log(rank):
                # The rank has not opened its own log yet (still starting, or it failed before
                # it could): the backend may show what its process printed so far.
                live = self.backend.live_log(record.id, rank, offset, length)
                if live is not None:
                    return live[0]
            return on_disk(offset, length)

        return read

    def log_reader(self, job_id: str, *, user: str | None = None, rank: int = 0) -> logs.Reader:
        """Raw reads of one rank's log, for a :class:`trainhub.jobs.logs.LogFollower`."""
        return self._log_source(self._log_record(job_id, user, rank), rank)

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
        record = self._log_record(job_id, user, rank)
        chunk = logs.read_chunk(
            self._log_source(record, rank), offset, length, final=record.state.terminal
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
        return self.jobdir(job_id, user).read_metrics(f"{kind}.jsonl", offset, limit)

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
        record = self._log_record(job_id, user, rank)
        name = notebook_name(rank)
        try:
            data = JobDir(record.job_dir).read_json(name)
        except FileNotFoundError:
            raise NotFound(_no_notebook(record, rank)) from None
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise ValueError(f"{name} of the job is not a notebook")
        return data

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
        query = query or UsageQuery()
        since = since_time(query.since)
        if user is not None and query.by == UsageBy.TEAM:
            if team is None:  # no team of one's own: one's own jobs by the team they named
                groups = self.backend.usage(query.by, since, user=user)
            else:
                groups = self.backend.usage(query.by, since, team=team)
        else:
            groups = self.backend.usage(query.by, since, user=user, recompute=recompute)
        return UsageReport(
            by=query.by,
            since=since,
            waste_utilization_pct=settings.waste_utilization_pct(),
            groups=groups,
        )

    def usage_panel(self, *, user: str, team: str | None) -> UsagePanel:
        """The Usage panel of a signed-in user: their own figures, and their team's totals
        (``team``: the session's own team) — no other user's jobs one by one."""
        now = time.time()
        since = min(period_starts(now)[1], now - MONTH_DAYS * 86400)
        quotas, source = self.backend.quotas()
        queued = [JobState.QUEUED]
        with self.backend.usage_rows(since, user=None if team else user, team=team) as rows:
            return panel(
                rows,
                user=user,
                team=team,
                now=now,
                quotas=quotas,
                quota_source=source,
                waiting=self.backend.count(user=None, states=queued),
                waiting_mine=self.backend.count(user=user, states=queued),
                waste_utilization_pct=settings.waste_utilization_pct(),
            )

    def job_usage(self, job_id: str, *, user: str | None = None) -> BaseModel:
        """One job's usage and goodput, derived now from its directory (so far, while it
        runs)."""
        record = self.record(job_id, user)
        row = job_usage(record, threshold_pct=settings.waste_utilization_pct())
        return JobUsage(**row.as_dict())

    def reconcile(self) -> None:
        """Bring the jobs' records up to date, as a front door does (the CLI on every call,
        a server periodically); nothing where the cluster's controller does it."""
        if self.backend.controlled:
            return
        self.backend.reconcile()
        self.sweeps.advance_all()  # after the backend's view is current

    # --- sweeps ----------------------------------------------------------------------------
    @property
    def sweeps(self) -> Sweeps:
        """The sweeps of this service's backend (trainhub.experiments.controller)."""
        if self._sweeps is None:
            self._sweeps = Sweeps(self)
        return self._sweeps

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
