"""Schedules of one :class:`JobService`: create, read, pause, run now, delete, and the tick
that fires what is due.

A tick applies :func:`trainhub.schedules.firing.decide` under the schedule's lock until it
says wait: a time to fire is claimed there (trainhub.jobs.claims) and the record's last time
moves past it before anything is submitted, so no two ticks (two schedulers, a scheduler and
a restarted one) fire one time twice. The job is submitted after the lock, compiled from the
workspace frozen when the schedule was created (trainhub.bundle.snapshot, as a sweep's
trials), and noted; a claim whose submitter died is matched to its job by the run's tag, or
claimed again — a run is not lost to a crash.

Whoever fires runs :meth:`Schedules.tick_all`: the cluster's controller, or on one machine
the local scheduler process (trainhub.schedules.local).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import logging
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainhub.bundle import snapshot
from trainhub.errors import Conflict, NotFound, TrainhubError
from trainhub.jobs import claims
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.records import Records, as_owner, records_for, records_home
from trainhub.jobs.spec import SpecError
from trainhub.jobs.states import JobState
from trainhub.pipelines import checks
from trainhub.pipelines.spec import refused
from trainhub.schedules import firing
from trainhub.schedules.model import (
    CreateSchedule,
    NotebookTarget,
    Run,
    RunState,
    ScheduleRecord,
    parse_schedule,
    run_tag,
)
from trainhub.schedules.views import ScheduleList, ScheduleView, view

if TYPE_CHECKING:
    from trainhub.jobs.service import JobService

log = logging.getLogger(__name__)

MAX_RUNS_KEPT = 200  # the history a record keeps, newest last
CLAIM_RECHECK_SECONDS = 10.0
_ENDED = {
    *(s.value for s in JobState if s.terminal),
    "gone",
}  # how soon a claim another process holds is looked at again


KIND = "schedules"  # the store's table, and .schedules/ in the jobs root


def schedules_home(backend: Any) -> Path:
    """The folder of the schedules in ``backend``'s jobs root: their frozen workspaces, and on
    a cluster their records."""
    return records_home(backend, KIND)


class Schedules:
    def __init__(self, service: JobService, *, clock: Callable[[], float] = time.time):
        self.service = service
        self.records: Records[ScheduleRecord] = records_for(service.backend, KIND, ScheduleRecord)
        self.home = schedules_home(service.backend)
        self.clock = clock
        # Told after every change a scheduler should see now (the local one wakes).
        self.on_change: Callable[[], None] = lambda: None
        # Told of a run refused (no job made) of a schedule that alerts on failure; a run's
        # job that fails is announced by the job's own notify (trainhub.alerts).
        self.on_refused: Callable[[ScheduleRecord, Run], None] = lambda record, run: None
        # Whose schedules a tick fires: everyone's (None) where one process fires a whole data
        # directory (the local scheduler) or team (the controller, as each owner); one member's
        # session on a cluster fires its member's only (as it announces only their jobs).
        self.fires_for: str | None = None

    # --- front door ---------------------------------------------------------------------------
    def create(self, request: CreateSchedule | dict[str, Any], *, user: str) -> ScheduleView:
        """Check the target as a submit would (making no job), freeze the workspace it runs
        from, keep the record."""
        request = request if isinstance(request, CreateSchedule) else parse_schedule(request)
        target = request.target
        record = ScheduleRecord(
            id=f"{request.name}-{secrets.token_hex(3)}",
            user=user,
            team=target.job.team if isinstance(target, NotebookTarget) else self.service.team,
            created_at=self.clock(),
            request=request,
        )
        if isinstance(target, NotebookTarget):
            spec = self._spec(record, Run(at=record.created_at, state=RunState.CLAIMED))
            self.service.validate(spec, user=user)
            specs = [target.job]
        else:  # checked as a run checks its steps; errors under target.pipeline.
            try:
                record.pipeline = checks.read_workspace_file(self.service, target.file)
                specs = checks.check(self.service, record.pipeline, target.parameters, user=user)
            except SpecError as e:
                raise SpecError(
                    [refused(f"target.pipeline.{x.field}", x.message) for x in e.errors]
                ) from e
        with snapshot.freezing(specs, self.service, self.home, record.id) as record.source:
            self.records.create(record)
        self.on_change()
        return self.describe(record.id, user=user)

    def list(self, *, user: str | None) -> ScheduleList:
        records = self.records.list(user)
        return ScheduleList(schedules=[view(r, self._job_states(r), limit=5) for r in records])

    def describe(self, schedule_id: str, *, user: str | None) -> ScheduleView:
        record = self._record(schedule_id, user)
        return view(record, self._job_states(record))

    def pause(self, schedule_id: str, *, user: str | None) -> ScheduleView:
        return self._set_paused(schedule_id, user, True)

    def resume(self, schedule_id: str, *, user: str | None) -> ScheduleView:
        """Resume from now: the times that passed while paused are not run (a pause is asked
        for; Kubernetes CronJob counts them as missed instead)."""
        return self._set_paused(schedule_id, user, False)

    def delete(self, schedule_id: str, *, user: str | None) -> None:
        """Delete the schedule and its frozen workspace; its jobs stay, as any job."""
        self._record(schedule_id, user)
        self.records.delete(schedule_id)
        snapshot.remove(self.home, schedule_id)
        self.on_change()

    def run_now(self, schedule_id: str, *, user: str | None) -> ScheduleView:
        """Fire once now, outside the cron times and whatever the concurrency policy (as
        ``kubectl create job --from=cronjob/...``)."""
        self._record(schedule_id, user)
        with self.records.change(schedule_id) as record:
            assert record is not None
            run = self._claim(record, None)
        self._submit(record, run)
        return self.describe(schedule_id, user=user)

    # --- firing -------------------------------------------------------------------------------
    def tick_all(self) -> float | None:
        """Fire what is due in every schedule, each as its owner where the backend keeps
        several members' files; one schedule's trouble never stops the others. Returns the
        earliest time anything is due next (None: nothing)."""
        backend = self.service.backend
        soonest: float | None = None
        for schedule_id in self.records.active_ids():
            path = self.records.path(schedule_id)
            try:
                with as_owner(backend, path):
                    record = self.records.get(schedule_id)
                    if record is None or self.fires_for not in (None, record.user):
                        continue
                    with as_owner(backend, path, record.user):
                        due = self.tick(schedule_id)
            except PermissionError:
                if self.fires_for is None:
                    log.exception("trainhub: schedule %s could not be read", schedule_id)
                continue  # a member's own process reads only the member's records
            except Exception:
                log.exception("trainhub: schedule %s could not fire", schedule_id)
                continue
            if due is not None and (soonest is None or due < soonest):
                soonest = due
        return soonest

    def tick(self, schedule_id: str) -> float | None:
        """Fire what is due in one schedule; returns when it wants the next tick."""
        for _ in range(1000):  # each step fires or skips one time, or waits
            record = self.records.get(schedule_id)
            if record is None:
                return None
            active = self._active(record)
            with self.records.change(schedule_id) as current:
                if current is None:
                    return None
                claimed, pending = self._settle_claims(current)
                decision = firing.decide(current.request, current.since, self.clock(), active)
                if isinstance(decision, firing.Skip):
                    current.last_at = decision.at
                    skipped = Run(at=decision.at, state=RunState.SKIPPED, reason=decision.reason)
                    self._append(current, skipped)
                elif isinstance(decision, firing.Fire):
                    fired = self._claim(current, decision.at)
                    if decision.missed_since is not None:
                        fired.reason = "fired once for the times missed before it"
                    claimed.append(fired)
                record = current
            # The claims are saved: submit each once, after the lock.
            if isinstance(decision, firing.Fire):
                why = f"replaced by the run of schedule {record.id} due now"
                for active_id in decision.replace:
                    with contextlib.suppress(Conflict, NotFound):  # it ended meanwhile
                        if record.pipeline is not None:
                            self.service.pipelines.cancel(active_id, user=None, reason=why)
                        else:
                            self.service.backend.cancel(active_id, why)
            for run in claimed:
                self._submit(record, run)
            if isinstance(decision, firing.Wait):
                if pending:  # a claim of a live process elsewhere: look again soon
                    soon = self.clock() + CLAIM_RECHECK_SECONDS
                    return soon if decision.until is None else min(decision.until, soon)
                return decision.until
        raise RuntimeError(f"schedule {schedule_id} did not settle")

    # --- parts --------------------------------------------------------------------------------
    def _set_paused(self, schedule_id: str, user: str | None, paused: bool) -> ScheduleView:
        self._record(schedule_id, user)
        with self.records.change(schedule_id) as record:
            assert record is not None
            if record.request.paused and not paused:
                record.last_at = max(record.since, self.clock())
            record.request.paused = paused
        self.on_change()
        return self.describe(schedule_id, user=user)

    def _claim(self, record: ScheduleRecord, at: float | None) -> Run:
        run = Run(
            at=at,
            state=RunState.CLAIMED,
            claimed_at=self.clock(),
            claimed_by=claims.claimer(),
        )
        if at is not None:
            record.last_at = at
        self._append(record, run)
        return run

    @staticmethod
    def _append(record: ScheduleRecord, run: Run) -> None:
        record.runs.append(run)
        del record.runs[:-MAX_RUNS_KEPT]

    def _settle_claims(self, record: ScheduleRecord) -> tuple[builtins.list[Run], bool]:
        """Claims whose submitter died: matched to their job by the run's tag; those with no
        job are claimed again by this process (returned, to submit). True with them when a
        claim of a process still at work is left."""
        again, pending = [], False
        now = self.clock()
        for run in record.runs:
            if run.state != RunState.CLAIMED or run.claimed_by == claims.claimer():
                continue
            find = functools.partial(self._find, record, run)
            settled = claims.settle(run.claimed_at, run.claimed_by, now, find)
            if settled.job_id is not None:
                run.state = RunState.SUBMITTED
                if record.pipeline is not None:
                    run.pipeline_run = settled.job_id
                else:
                    run.job_id = settled.job_id
            elif settled.stale:
                run.claimed_at, run.claimed_by = now, claims.claimer()
                again.append(run)
            else:
                pending = True
        return again, pending

    def _find(self, record: ScheduleRecord, run: Run) -> str | None:
        """The job, or pipeline run, that carries the run's tag."""
        if record.pipeline is not None:
            tagged = self.service.pipelines.tagged(run_tag(record.id, run), user=record.user)
            return tagged.id if tagged is not None else None
        found = self.service.backend.list_jobs(
            JobFilter(user=record.user, search=run_tag(record.id, run)), limit=1
        )
        return found[0].id if found else None

    def _job_states(self, record: ScheduleRecord) -> dict[str, str]:
        """The state now of each run's job or pipeline run whose outcome is not noted yet
        ("gone": deleted), by its id."""
        states = {}
        for run in record.runs:
            if run.job_id is not None and run.outcome is None:
                job = self.service.backend.get(run.job_id)
                states[run.job_id] = job.state.value if job is not None else "gone"
            elif run.pipeline_run is not None and run.outcome is None:
                found = self.service.pipelines.records.get(run.pipeline_run)
                states[run.pipeline_run] = found.state.value if found is not None else "gone"
        return states

    def _active(self, record: ScheduleRecord) -> builtins.list[str]:
        """The schedule's runs whose job or pipeline run has not ended (their outcomes noted
        as they end; a failed pipeline run announced, as a failed job announces itself)."""
        states = self._job_states(record)
        active = [j for j, state in states.items() if state not in _ENDED]
        ended = {j: state for j, state in states.items() if state in _ENDED}
        failed = []
        if ended:
            with self.records.change(record.id) as current:
                for run in current.runs if current else []:
                    done = ended.get(run.job_id or run.pipeline_run or "")
                    if done is not None:
                        run.outcome = done
                    if done == "failed" and run.pipeline_run and not run.announced:
                        run.announced = current.request.notify_failure
                        why = f"its pipeline run {run.pipeline_run} failed"
                        failed += [run.model_copy(update={"reason": why})] * run.announced
        for run in failed:
            self.on_refused(record, run)
        return active

    def _spec(self, record: ScheduleRecord, run: Run) -> dict[str, Any]:
        """The job a run submits: the target's spec, tagged with the run, asking for an alert
        on failure when the schedule does."""
        assert isinstance(record.request.target, NotebookTarget)
        data = record.request.target.job.model_dump(mode="json")
        data["name"] = record.request.name
        data["tags"] = [*data.get("tags", []), run_tag(record.id, run)]
        if record.request.notify_failure and "failure" not in data.get("notify", []):
            data["notify"] = [*data.get("notify", []), "failure"]
        return data

    def _submit(self, record: ScheduleRecord, run: Run) -> None:
        """Start a claimed run from the frozen workspace and note its job or pipeline run,
        or why not."""
        fields: dict[str, Any]
        target = record.request.target
        try:
            with snapshot.thawed(self.home, record.id, record.source) as source:  # type: ignore[arg-type]
                if isinstance(target, NotebookTarget):
                    spec = self._spec(record, run)
                    job = self.service.submit(spec, user=record.user, source=source)
                    fields = {"state": RunState.SUBMITTED, "job_id": job.id}
                else:
                    started = self.service.pipelines.start(
                        user=record.user,
                        file=target.file,
                        pipeline=record.pipeline,
                        parameters=target.parameters,
                        cache=target.cache,
                        source=source,
                        tag=run_tag(record.id, run),
                    )
                    fields = {"state": RunState.SUBMITTED, "pipeline_run": started.id}
        except (SpecError, TrainhubError, ValueError, OSError) as e:
            log.warning("trainhub: schedule %s: a run was refused: %s", record.id, e)
            fields = {"state": RunState.REFUSED, "reason": str(e)}
            if record.request.notify_failure:
                self.on_refused(record, run.model_copy(update=fields))
        with self.records.change(record.id) as current:
            for r in current.runs if current else []:
                if r.at == run.at and r.claimed_at == run.claimed_at:
                    for key, value in fields.items():
                        setattr(r, key, value)

    def _record(self, schedule_id: str, user: str | None) -> ScheduleRecord:
        record = self.records.get(schedule_id)
        if record is None or (user is not None and record.user != user):
            raise NotFound(f"No schedule {schedule_id}.")
        return record
