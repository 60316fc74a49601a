"""The pipeline controller: starts a run, and on every reconcile advances it, as sweeps advance.

A run checks every step before anything runs (trainhub.pipelines.checks), freezes the
workspace its notebooks compile from (trainhub.bundle.snapshot), keeps its record
(trainhub.pipelines.records), then starts the steps whose upstream steps are done. Steps are
ordinary jobs (``spec.pipeline`` names the run and the step): they queue, run, retry and end
like any job. Whoever reconciles runs :meth:`Pipelines.advance_all`: the cluster's controller,
or where none runs the CLI and the server. Steps are claimed under the record's lock before
they are submitted, so two reconciles never submit one twice.

A step about to start first looks for an earlier result of the same inputs
(trainhub.pipelines.cache); found, its outputs stand for the step ("reused from JOB") and the
steps after it go on at once.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from trainhub.bundle import snapshot
from trainhub.errors import Conflict, NotFound, ReadOnly, TrainhubError
from trainhub.jobs import ownership
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.models import JobRecord
from trainhub.jobs.records import advance_running, repair_claims
from trainhub.jobs.sharing import Sharing
from trainhub.jobs.spec import SpecError, parse_spec
from trainhub.pipelines import checks, launch
from trainhub.pipelines.models import DescribeRun, RunList, describe, summarize
from trainhub.pipelines.plan import plan, statuses
from trainhub.pipelines.records import (
    RunRecord,
    RunRecords,
    RunState,
    StepRun,
    runs_for,
    runs_home,
)
from trainhub.pipelines.spec import Pipeline, parse_pipeline, refused
from trainhub.pipelines.steps import step_spec

if TYPE_CHECKING:
    from trainhub.bundle.snapshot import Snapshot
    from trainhub.jobs.service import JobService

log = logging.getLogger(__name__)

MAX_RUN_JOBS = 2000  # the jobs of one run listed at once (its steps and their retries)


class Pipelines:
    """Pipeline runs of one :class:`JobService` (its backend keeps the records)."""

    def __init__(self, service: JobService):
        self.service = service
        self.records: RunRecords = runs_for(service.backend)
        self.home = runs_home(service.backend)  # the frozen workspaces, .pipelines/<id>/

    # --- front door -----------------------------------------------------------------------
    def start(
        self,
        *,
        user: str,
        file: str | None = None,
        pipeline: Pipeline | dict[str, Any] | None = None,
        parameters: Mapping[str, Any] | None = None,
        cache: bool = True,
        source: Snapshot | None = None,
        tag: str | None = None,
        started_from: str | None = None,
    ) -> DescribeRun:
        """Start a run of the pipeline in workspace ``file`` (or given as ``pipeline``) with
        ``parameters`` over its defaults, as ``user``: the one entry point of the CLI, the
        REST API, the Python API and schedules. Every step is checked first (nothing runs when
        one is refused), the workspace frozen, the record kept, the first steps started.
        ``source``: a workspace frozen earlier (a schedule's), checked and frozen from instead
        of this service's, its lineage kept; ``tag`` finds the run again (:meth:`tagged`);
        ``started_from``: the run this one runs again (:meth:`start_again`)."""
        if pipeline is None:
            if file is None:
                raise SpecError([refused("file", "name a pipeline file or send one")])
            pipeline = checks.read_workspace_file(self.service, file)
        elif not isinstance(pipeline, Pipeline):
            pipeline = parse_pipeline(pipeline)
        if pipeline.name is None:
            raise SpecError([refused("name", "a pipeline sent as data needs its name")])
        given = dict(parameters or {})
        specs = checks.check(self.service, pipeline, given, user=user, source=source)
        run = RunRecord(
            id=f"{pipeline.name[:56].rstrip('-')}-{secrets.token_hex(3)}",
            user=user,
            created_at=time.time(),
            name=pipeline.name,
            file=file,
            pipeline=pipeline,
            parameters={**pipeline.parameters, **given},
            cache=cache,
            team=self.service.team,
            tag=tag,
            started_from=started_from,
        )
        with snapshot.freezing(specs, self.service, self.home, run.id, source=source) as run.source:
            self.records.create(run)
        self.advance(run.id)
        return self.describe(run.id, user=user)

    def start_again(
        self,
        run_id: str,
        *,
        user: str,
        parameters: Mapping[str, Any] | None = None,
        cache: bool = True,
    ) -> DescribeRun:
        """Run ``run_id``'s pipeline again as ``user``'s own run: one's own, or a teammate's
        shared with the team. Its parameters stand, ``parameters`` over them; the notebooks are
        the ones it froze while that is kept (a shared or unfinished run keeps it), else those
        of ``user``'s workspace. The steps are ``user``'s jobs, in ``user``'s quota."""
        earlier = self._record(run_id, user)
        given = {k: v for k, v in earlier.parameters.items() if k in earlier.pipeline.parameters}
        given.update(parameters or {})
        pipeline = earlier.pipeline.model_copy(update={"name": earlier.name})
        with contextlib.ExitStack() as stack:
            source = None
            if earlier.source is not None and (self.home / run_id).is_dir():
                source = stack.enter_context(snapshot.thawed(self.home, run_id, earlier.source))
            return self.start(
                user=user,
                file=earlier.file,
                pipeline=pipeline,
                parameters=given,
                cache=cache,
                source=source,
                started_from=run_id,
            )

    def validate(
        self,
        *,
        user: str,
        file: str | None = None,
        pipeline: Pipeline | dict[str, Any] | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> Pipeline:
        """Every check :meth:`start` makes, starting nothing; the pipeline as read."""
        if pipeline is None:
            pipeline = checks.read_workspace_file(self.service, file or "")
        elif not isinstance(pipeline, Pipeline):
            pipeline = parse_pipeline(pipeline)
        checks.check(self.service, pipeline, dict(parameters or {}), user=user)
        return pipeline

    def tagged(self, tag: str, *, user: str) -> RunRecord | None:
        """The run ``user`` started with ``tag`` (a schedule's run), if any."""
        return next((r for r in self.records.list(user) if r.tag == tag), None)

    def list(self, *, user: str | None) -> RunList:
        runs = [r for r in self.records.list() if self._readable(r, user)]
        return RunList(runs=[summarize(r, statuses(r, self._jobs(r))) for r in runs])

    def describe(self, run_id: str, *, user: str | None) -> DescribeRun:
        run = self._record(run_id, user)
        return describe(run, statuses(run, self._jobs(run)))

    def cancel(self, run_id: str, *, user: str | None, reason: str | None = None) -> DescribeRun:
        """Stop the run: no step starts any more, and every active step is cancelled."""
        self._owned(run_id, user, "cancel")
        why = reason or f"its pipeline run {run_id} was cancelled"
        with self.records.change(run_id) as run:
            assert run is not None
            if run.state != RunState.RUNNING:
                raise Conflict(f"Pipeline run {run_id} already ended ({run.state.value}).")
            run.state = RunState.CANCELLED
            run.cancel_reason = why
            run.finished_at = time.time()
        for job in self._jobs(run).values():
            if not job.state.terminal:
                with contextlib.suppress(Conflict):  # it ended meanwhile
                    self.service.backend.cancel(job.id, why)
        return self.describe(run_id, user=user)

    def retry(self, run_id: str, *, user: str | None) -> DescribeRun:
        """Run a failed or cancelled run again from the steps that did not succeed: what
        succeeded (or was reused) is kept, the failed and cancelled steps and those after them
        start again, from the workspace the run froze."""
        self._owned(run_id, user, "retry")
        with self.records.change(run_id) as run:
            assert run is not None
            if run.state not in (RunState.FAILED, RunState.CANCELLED):
                raise Conflict(
                    f"Pipeline run {run_id} is {run.state.value}: only a failed or cancelled "
                    "run is retried."
                )
            now = statuses(run, self._jobs(run))
            for name, status in now.items():
                if status.status.stopped and name in run.steps:
                    run.earlier.append(run.steps.pop(name))
            run.retries += 1
            run.state = RunState.RUNNING
            run.finished_at = None
            run.cancel_reason = None
        self.advance(run_id)
        return self.describe(run_id, user=user)

    def share(self, run_id: str, shared: Sharing, *, user: str | None) -> DescribeRun:
        """Share the run, and every job of its steps, with the owner's team to read and to
        run again as theirs (or make them private again): the owner alone, where the backend
        has teams. A shared run keeps its frozen workspace, open to the team to read; made
        private once it succeeded, the workspace goes, as a private run's does."""
        self._owned(run_id, user, "share")
        with self.records.change(run_id) as current:  # first: a step started now reads it
            assert current is not None
            current.shared = shared
        for job_id in _job_ids(current):
            self.service.edit(job_id, {"shared": shared.value}, user=user)
        frozen = self.home / run_id
        if shared == Sharing.PRIVATE and current.state == RunState.SUCCEEDED:
            snapshot.remove(self.home, run_id)
        elif frozen.is_dir() and ownership.guarded(self.home):
            ownership.set_team_readable(frozen, shared == Sharing.TEAM)
        return self.describe(run_id, user=user)

    # --- the controller -------------------------------------------------------------------
    def advance_all(self) -> None:
        """One step of every running run (:func:`~trainhub.jobs.records.advance_running`)."""
        advance_running(self.service.backend, self.records, self.advance, "pipeline run")

    def advance(self, run_id: str) -> list[str]:
        """Start the steps whose upstream steps are done (a step that reuses an earlier result
        lets the next ones start at once); end the run when nothing is left. The steps
        started."""
        started: list[str] = []
        while True:  # each turn claims a step more: it ends
            claimed, run = self._claim(run_id)
            if not claimed:
                return started
            started += claimed
            assert run is not None
            if not self._start(run, claimed):  # none reused: the rest waits for jobs to end
                return started

    def _claim(self, run_id: str) -> tuple[list[str], RunRecord | None]:
        """Under the record's lock: the steps to start, claimed; the run ended when nothing
        is active or can start."""
        before = self.records.get(run_id)
        if before is None or before.state != RunState.RUNNING:
            return [], before
        jobs = self._jobs(before)
        with self.records.change(run_id) as run:
            if run is None or run.state != RunState.RUNNING:
                return [], run
            earlier = {a.job_id for a in run.earlier}
            submitted = {
                j.spec.pipeline.step: j.id
                for j in jobs.values()
                if j.spec.pipeline is not None and j.id not in earlier
            }
            repair_claims(run.steps.values(), lambda a: a.step, submitted)
            step = plan(run, jobs)
            for name in step.start:
                run.steps[name] = StepRun(step=name, claimed_at=time.time(), retry=run.retries)
            if step.ended is not None:
                run.state = step.ended
                run.finished_at = time.time()
                if step.ended == RunState.SUCCEEDED and run.shared == Sharing.PRIVATE:
                    snapshot.remove(self.home, run_id)  # nothing to retry or run again from it
            return step.start, run

    def _start(self, run: RunRecord, names: list[str]) -> bool:
        """Submit the claimed steps, compiled from the run's frozen workspace (thawed once), or
        reuse an earlier result; a step refused notes why. Whether any reused one."""
        reused = False
        with contextlib.ExitStack() as stack:
            try:
                source = stack.enter_context(self._source(run))
            except (TrainhubError, ValueError, OSError) as e:
                for name in names:
                    self._note(run.id, name, error=str(e))
                return False
            for name in names:
                current = self.records.get(run.id)
                if current is None or current.state != RunState.RUNNING:
                    if current is not None:  # cancelled meanwhile: this step does not start
                        self._note(
                            run.id, name, error=f"not started: the run ended ({current.state})"
                        )
                    continue
                try:
                    reused |= self._start_step(run, name, source)
                except (SpecError, TrainhubError, ValueError, OSError) as e:
                    log.warning("trainhub: pipeline run %s step %s refused: %s", run.id, name, e)
                    self._note(run.id, name, error=str(e))
        return reused

    def _start_step(self, run: RunRecord, name: str, source: Snapshot | None) -> bool:
        inputs, produced_by = launch.inputs_of(self.service.backend, run, name)
        data = step_spec(
            run.pipeline,
            name,
            run_id=run.id,
            values=run.parameters,
            inputs=inputs,
        )
        spec = parse_spec(data)
        declared = run.pipeline.steps[name].outputs
        key = launch.step_key(self.service, spec, source, produced_by, declared)
        if run.cache:
            hit = launch.earlier_result(
                self.service.backend, self.records.list(run.user), key, declared
            )
            if hit is not None:
                self._note(run.id, name, reused_from=hit, cache_key=key)
                return True
        job = self.service.submit(spec, user=run.user, source=source)
        self._note(run.id, name, job_id=job.id, cache_key=key)
        now = self.records.get(run.id)  # shared meanwhile: its steps are, as they start
        if now is not None and now.shared != Sharing.PRIVATE:
            self.service.edit(job.id, {"shared": now.shared.value}, user=run.user)
        return False

    def _source(self, run: RunRecord) -> contextlib.AbstractContextManager[Any]:
        if run.source is None:
            return contextlib.nullcontext(None)
        return snapshot.thawed(self.home, run.id, run.source)

    def _note(self, run_id: str, name: str, **fields: Any) -> None:
        with self.records.change(run_id) as run:
            if run is None or name not in run.steps:
                return
            for key, value in fields.items():
                setattr(run.steps[name], key, value)

    # --- reads ------------------------------------------------------------------------------
    def _readable(self, run: RunRecord, user: str | None) -> bool:
        """The owner's, or shared with the reader's team (the session's, where the backend
        has teams) — as a job is (trainhub.jobs.sharing)."""
        if user is None or run.user == user:
            return True
        team = self.service.team
        return (
            self.service.access.shares(user)
            and run.shared == Sharing.TEAM
            and team is not None
            and run.team == team
        )

    def readable(self, run_id: str, *, user: str | None) -> RunRecord:
        """The run's record, where ``user`` may read it (as :meth:`describe` reads it)."""
        return self._record(run_id, user)

    def _record(self, run_id: str, user: str | None) -> RunRecord:
        run = self.records.get(run_id)
        if run is None or not self._readable(run, user):
            raise NotFound(f"No pipeline run {run_id}.")
        return run

    def _owned(self, run_id: str, user: str | None, verb: str) -> RunRecord:
        run = self._record(run_id, user)
        if user is not None and run.user != user:
            raise ReadOnly(
                f"Pipeline run {run_id} is {run.user}'s, shared with team {run.team} to read: "
                f"only {run.user} can {verb} it. Start the pipeline to run it as your own."
            )
        return run

    def _jobs(self, run: RunRecord) -> dict[str, JobRecord]:
        """The jobs of the run's steps (its own and those whose results it reuses), by id."""
        jobs = self._jobs_of_id(run.id, run.user)
        backend = self.service.backend
        for attempt in run.steps.values():
            if attempt.reused_from and attempt.reused_from not in jobs:
                found = backend.get(attempt.reused_from)
                if found is not None:
                    jobs[found.id] = found
        return jobs

    def _jobs_of_id(self, run_id: str, user: str | None = None) -> dict[str, JobRecord]:
        found = self.service.backend.list_jobs(
            JobFilter(user=user, pipeline_run=run_id), limit=MAX_RUN_JOBS
        )
        return {j.id: j for j in found}


def _job_ids(run: RunRecord) -> Iterator[str]:
    for attempt in [*run.steps.values(), *run.earlier]:
        if attempt.job_id is not None:
            yield attempt.job_id
