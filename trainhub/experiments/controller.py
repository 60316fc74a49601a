"""The sweep controller: starts a sweep, and on every reconcile advances it one step.

A step (:func:`plan`, pure) submits the next trials while fewer than ``max_running`` are
active, and stops the running trials the early-stopping rule judges lagging. Trials are
ordinary jobs (``spec.sweep`` names the sweep and the trial): they queue, run, retry and end
like any job. Whoever reconciles runs :meth:`Sweeps.advance_all`: the cluster's controller, or
where none runs the CLI and the server.

A sweep freezes its workspace when it is created (trainhub.bundle.snapshot) and every trial
compiles from that, so the trials run the code the sweep was created with, and any process can
submit them: the controller sees no workspace.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainhub.bundle import snapshot
from trainhub.errors import Conflict, NotFound, TrainhubError
from trainhub.experiments import early_stop
from trainhub.experiments.models import (
    DescribeSweep,
    ScalarStat,
    SweepList,
    curve,
    describe,
    scalar_stats,
    summarize,
)
from trainhub.experiments.records import (
    SweepRecord,
    SweepRecords,
    SweepState,
    Trial,
    records_for,
    sweeps_home,
)
from trainhub.experiments.sweep import MAX_TRIALS, CreateSweep, parse_sweep, trial_parameters
from trainhub.jobs.directory import JobDir
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.models import JobRecord
from trainhub.jobs.naming import MAX_NAME_LENGTH
from trainhub.jobs.records import advance_running, repair_claims
from trainhub.jobs.spec import SpecError
from trainhub.jobs.states import JobState
from trainhub.lifecycle.verdict import stop_reason_of_rule

if TYPE_CHECKING:
    from trainhub.jobs.service import JobService

log = logging.getLogger(__name__)

_TRIAL_SUFFIX = "-t{n}"  # a trial's job name: the sweep's name and its number


@dataclass
class Step:
    """What one advance does: trials to submit (by number) and running jobs to stop."""

    submit: list[int] = field(default_factory=list)
    stop: dict[str, str] = field(default_factory=dict)  # job id -> why
    finished: bool = False


def plan(
    record: SweepRecord,
    jobs: Mapping[str, JobRecord],
    curves: Mapping[str, list[tuple[int, float]]],
) -> Step:
    """The next step of a running sweep, from its record, its trials' jobs and the curves of
    its early-stopping metric (job id -> points). Pure."""
    step = Step()
    spec = record.sweep
    trials = {t.trial: t for t in record.trials}

    def active(t: Trial) -> bool:
        if t.error is not None:
            return False
        job = jobs.get(t.job_id) if t.job_id else None
        return job is None or not job.state.terminal  # claimed but not seen yet counts

    if spec.early_stop is not None:
        running = {
            t.job_id: curves.get(t.job_id, [])
            for t in record.trials
            if t.job_id and t.job_id in jobs and jobs[t.job_id].state == JobState.RUNNING
        }
        ended = [
            curves.get(t.job_id, [])
            for t in record.trials
            if t.job_id and t.job_id in jobs and jobs[t.job_id].state.terminal
        ]
        step.stop = early_stop.decide(spec.early_stop, running, ended)
    busy = sum(1 for t in record.trials if active(t)) - len(step.stop)
    total = spec.trial_count()
    free = max(0, spec.max_running - busy)
    step.submit = [n for n in range(total) if n not in trials][:free]
    step.finished = (
        len(trials) >= total and not step.submit and not any(active(t) for t in trials.values())
    )
    return step


class Sweeps:
    """Sweeps of one :class:`JobService` (its backend keeps the records)."""

    def __init__(self, service: JobService):
        self.service = service
        self.records: SweepRecords = records_for(service.backend)
        self.home = sweeps_home(service.backend)  # the frozen workspaces, .sweeps/<id>/

    # --- front door -----------------------------------------------------------------------
    def create(self, request: CreateSweep | dict[str, Any], *, user: str) -> DescribeSweep:
        """Start a sweep: checks the first trial as a submit would (making no job), freezes the
        workspace the trials compile from, keeps the record, then submits the first trials."""
        request = request if isinstance(request, CreateSweep) else parse_sweep(request)
        sweep = request.sweep
        if sweep.seed is None:
            sweep = sweep.model_copy(update={"seed": secrets.randbelow(2**31)})
        longest = MAX_NAME_LENGTH - len(_TRIAL_SUFFIX.format(n=MAX_TRIALS))
        name = request.job.name[:longest].rstrip("-")
        record = SweepRecord(
            id=f"{name}-{secrets.token_hex(3)}",
            name=name,
            user=user,
            created_at=time.time(),
            job=request.job.model_copy(update={"name": name}),
            sweep=sweep,
        )
        self.service.validate(self._trial_spec(record, 0), user=user)
        with snapshot.freezing(record.job, self.service, self.home, record.id) as record.source:
            self.records.create(record)
        self.advance(record.id)
        return self.describe(record.id, user=user)

    def list(self, *, user: str | None) -> SweepList:
        records = self.records.list(user)
        jobs = self._jobs_of_many(records)
        return SweepList(sweeps=[summarize(r, jobs) for r in records])

    def describe(self, sweep_id: str, *, user: str | None) -> DescribeSweep:
        record = self._record(sweep_id, user)
        jobs = self._jobs(record)
        scalars: dict[str, dict[str, ScalarStat]] = {}
        for job_id, job in jobs.items():
            scalars[job_id] = scalar_stats(self._scalars(job))
        waits = {
            job_id: reason
            for job_id, (reason, _) in self.service.backend.wait_reasons(
                list(jobs.values())
            ).items()
        }
        return describe(record, jobs, scalars, waits)

    def cancel(
        self, sweep_id: str, *, user: str | None, reason: str | None = None
    ) -> DescribeSweep:
        """Stop the sweep: no trial is submitted any more, and every active trial is cancelled."""
        self._record(sweep_id, user)
        why = reason or f"its sweep {sweep_id} was cancelled"
        with self.records.change(sweep_id) as record:
            assert record is not None
            if record.state == SweepState.FINISHED:
                raise Conflict(f"Sweep {sweep_id} already finished.")
            record.state = SweepState.CANCELLED
            record.cancel_reason = why
            record.finished_at = record.finished_at or time.time()
        snapshot.remove(self.home, sweep_id)  # no trial is submitted any more
        for job in self._jobs(record).values():
            if not job.state.terminal:
                with contextlib.suppress(Conflict):  # it ended meanwhile
                    self.service.backend.cancel(job.id, why)
        return self.describe(sweep_id, user=user)

    # --- the controller -------------------------------------------------------------------
    def advance_all(self) -> None:
        """One step of every running sweep (:func:`~trainhub.jobs.records.advance_running`):
        a trial is its owner's job, the record and frozen workspace its owner's files."""
        advance_running(self.service.backend, self.records, self.advance, "sweep")

    def advance(self, sweep_id: str) -> Step:
        record = self.records.get(sweep_id)
        if record is None or record.state != SweepState.RUNNING:
            return Step()
        jobs = self._jobs(record)
        metric = record.sweep.early_stop.metric if record.sweep.early_stop else None
        curves = {
            job_id: curve(self._scalars(job), metric)
            for job_id, job in jobs.items()
            if metric is not None and job.state in (JobState.RUNNING, *_ENDED_WITH_CURVES)
        }
        step = plan(record, jobs, curves)
        for job_id, why in step.stop.items():
            self._stop(record, job_id, why)
        # Claim the trials under the record's lock: a second reconcile at the same moment sees
        # them claimed and submits nothing twice.
        with self.records.change(sweep_id) as current:
            if current is None or current.state != SweepState.RUNNING:
                return step
            _repair_claims(current, jobs)
            taken = {t.trial for t in current.trials}
            again = plan(current, jobs, curves)
            claim = [n for n in again.submit if n not in taken]
            for n in claim:
                current.trials.append(
                    Trial(
                        trial=n,
                        parameters=trial_parameters(current.sweep, n, current.seed),
                        claimed_at=time.time(),
                    )
                )
            if again.finished:
                # Gone before the record says finished; each trial's bundle keeps what it ran.
                snapshot.remove(self.home, sweep_id)
                current.state = SweepState.FINISHED
                current.finished_at = time.time()
            record = current
        self._submit(record, claim)
        step.submit = claim
        return step

    # --- parts ------------------------------------------------------------------------------
    def _trial_spec(self, record: SweepRecord, n: int) -> Any:
        params = trial_parameters(record.sweep, n, record.seed)
        data = record.job.model_dump(mode="json")
        data["name"] = f"{record.name}{_TRIAL_SUFFIX.format(n=n)}"
        data["parameters"] = {**data.get("parameters", {}), **params}
        data["sweep"] = {"id": record.id, "trial": n}
        return data

    def _submit(self, record: SweepRecord, trials: Sequence[int]) -> None:
        """Submit ``trials``, compiled from the sweep's frozen workspace (thawed once for all);
        a trial refused, or every one when the frozen workspace cannot be read, notes why."""
        if not trials:
            return
        with contextlib.ExitStack() as stack:
            try:
                source = stack.enter_context(self._source(record))
            except (TrainhubError, ValueError, OSError) as e:
                for n in trials:
                    self._refused(record, n, str(e))
                return
            for n in trials:
                try:
                    job = self.service.submit(
                        self._trial_spec(record, n), user=record.user, source=source
                    )
                except (SpecError, TrainhubError, ValueError, OSError) as e:
                    self._refused(record, n, str(e))
                else:
                    self._note(record.id, n, job_id=job.id)

    def _source(self, record: SweepRecord) -> contextlib.AbstractContextManager[Any]:
        if record.source is None:  # an older sweep: the workspace of who submits
            return contextlib.nullcontext(None)
        return snapshot.thawed(self.home, record.id, record.source)

    def _refused(self, record: SweepRecord, n: int, why: str) -> None:
        log.warning("trainhub: sweep %s trial %d was refused: %s", record.id, n, why)
        self._note(record.id, n, error=why)

    def _note(self, sweep_id: str, n: int, **fields: Any) -> None:
        with self.records.change(sweep_id) as record:
            if record is None:
                return
            for t in record.trials:
                if t.trial == n:
                    for key, value in fields.items():
                        setattr(t, key, value)

    def _stop(self, record: SweepRecord, job_id: str, why: str) -> None:
        try:
            self.service.backend.cancel(job_id, stop_reason_of_rule(why))
        except Conflict:
            return  # it ended on its own meanwhile
        trial = next((t.trial for t in record.trials if t.job_id == job_id), None)
        if trial is not None:
            self._note(record.id, trial, stopped_early=why)

    def readable(self, sweep_id: str, *, user: str | None) -> SweepRecord:
        """The sweep's record, where ``user`` may read it (its owner's alone)."""
        return self._record(sweep_id, user)

    def _record(self, sweep_id: str, user: str | None) -> SweepRecord:
        record = self.records.get(sweep_id)
        if record is None or (user is not None and record.user != user):
            raise NotFound(f"No sweep {sweep_id}.")
        return record

    def _jobs(self, record: SweepRecord) -> dict[str, JobRecord]:
        """The sweep's trials' jobs, by id (only the sweep's user's)."""
        found = self.service.backend.list_jobs(
            JobFilter(user=record.user, sweep_id=record.id), limit=MAX_TRIALS
        )
        return {j.id: j for j in found}

    def _jobs_of_many(self, records: list[SweepRecord]) -> dict[str, JobRecord]:
        jobs: dict[str, JobRecord] = {}
        for r in records:
            jobs.update(self._jobs(r))
        return jobs

    @staticmethod
    def _scalars(job: JobRecord) -> list[dict[str, Any]]:
        try:
            return JobDir(job.job_dir).read_metrics("scalars")[0]
        except (OSError, ValueError):  # not there yet, or refused (a link): no curve
            return []


def _repair_claims(record: SweepRecord, jobs: Mapping[str, JobRecord]) -> None:
    """Trials claimed whose submitter died before noting the job: matched by trial number."""
    by_trial = {j.spec.sweep.trial: j.id for j in jobs.values() if j.spec.sweep is not None}
    repair_claims(record.trials, lambda t: t.trial, by_trial)


# Ended trials whose curves the rules compare running ones with.
_ENDED_WITH_CURVES = (JobState.SUCCEEDED, JobState.CANCELLED, JobState.FAILED)
