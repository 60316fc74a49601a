"""Local backend: jobs run as torchrun process groups on this machine.

No daemon: whoever changes the queue (a submit, a finishing supervisor, a cancel, a
reconcile) runs admission inside one exclusive SQLite transaction and launches a detached
supervisor for each job it admitted.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from trainhub import settings
from trainhub.backends.base import Backend, Feature
from trainhub.backends.local import processes
from trainhub.backends.local.launch import write_plan
from trainhub.backends.local.torchrun import launch_plan
from trainhub.checkpoint.layout import resume_checkpoint
from trainhub.errors import Conflict, NotFound, OverQuota
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.spec import JobSpec
from trainhub.jobs.states import FailureClass, JobState
from trainhub.outcome.retry import count_retry, should_retry
from trainhub.backends.local.store import LocalJob, Store
from trainhub.backends.local.admission import (
    Capacity,
    Demand,
    Free,
    Waiting,
    admit,
    demand_for,
    free_capacity,
    never_fits,
    wait_reason,
)

ACTIVE = (JobState.STARTING, JobState.RUNNING, JobState.RETRYING)
# A job admitted by a process that died before it could launch the supervisor is relaunched.
LAUNCH_GRACE_SECONDS = 30.0
# Queued jobs read per step of admission; it stops at the first job that does not fit.
ADMISSION_PAGE = 16


def resolve_resume(store: Store, spec: JobSpec) -> str | None:
    """The checkpoint directory a job asked to start from (another job's), if any."""
    ref = spec.resume_from
    source = store.get(ref.job_id) if ref is not None else None
    info = resume_checkpoint(source.job_dir, ref.step) if source is not None and ref else None
    return str(info.path) if info is not None else None


def _needs_pip(jobdir: JobDir) -> bool:
    try:
        return bool(json.loads((jobdir.bundle / "requirements.json").read_text() or "[]"))
    except (OSError, ValueError):
        return False


def demand_of(record: JobRecord) -> Demand:
    return demand_for(record.gpus, record.spec.resources.world_size)


class LocalBackend(Backend):
    name: ClassVar[str] = "local"
    features: ClassVar[frozenset[Feature]] = frozenset(
        {Feature.MULTI_NODE, Feature.GPUS, Feature.PRIORITY, Feature.PIP_INSTALL, Feature.DATASETS}
    )

    def __init__(self, home: Path | None = None, *, slots: int | None = None, python: str | None = None,
                 warm_start: bool | None = None):
        self.home = Path(home) if home else settings.home()
        self.jobs_root = settings.jobs_root(self.home)
        self.store = Store(settings.database(self.home))
        self._slots = slots
        self.python = python or sys.executable
        # Ranks taken over by runners started ahead (trainhub.rank.warm_start).
        self.warm_start = settings.warm_start() if warm_start is None else warm_start

    @classmethod
    def from_settings(cls, home: Path, **kwargs: Any) -> LocalBackend:
        return cls(home, **kwargs)

    # --- capacity -----------------------------------------------------------------------
    @cached_property
    def capacity(self) -> Capacity:
        from trainhub.metrics.nvml import gpu_inventory

        gpus = tuple(g.index for g in gpu_inventory().gpus)
        slots = self._slots or int(os.environ.get("TRAINHUB_LOCAL_SLOTS", 0)) or os.cpu_count() or 1
        return Capacity(gpus=gpus, slots=slots)

    def check_fits(self, record: JobRecord) -> None:
        reason = never_fits(demand_of(record), self.capacity)
        if reason:
            raise OverQuota(f"Job {record.name} {reason}.")

    def _free(self, conn=None) -> Free:
        return free_capacity(self.capacity, self.store.holdings(ACTIVE, conn))

    # --- verbs --------------------------------------------------------------------------
    def submit(self, record: JobRecord) -> JobRecord:
        self.check_fits(record)
        with self.store.transaction() as conn:
            record = self.store.insert(conn, record, LocalJob(slots=demand_of(record).slots))
            admitted = self._admit(conn)
        self._launch(admitted)
        return self.store.get(record.id) or record

    def get(self, job_id: str) -> JobRecord | None:
        return self.store.get(job_id)

    def list_jobs(self, *, user, states, limit, before_seq) -> list[JobRecord]:
        return self.store.list_jobs(user=user, states=states, limit=limit, before_seq=before_seq)

    def count(self, *, user, states) -> int:
        return self.store.count(user=user, states=states)

    def cancel(self, job_id: str, reason: str) -> JobRecord:
        with self.store.transaction() as conn:
            record = self.store.get(job_id, conn)
            if record is None:
                raise NotFound(f"No job {job_id}.")
            if record.state.terminal:
                raise Conflict(f"Job {job_id} already {record.state.value}.")
            if record.state == JobState.QUEUED:
                verdict = Verdict(failure_class=FailureClass.CANCELLED, reason=reason, attempt=record.attempt)
                self.store.update(
                    conn, job_id, state=JobState.CANCELLED, verdict=verdict.model_dump(),
                    finished_at=time.time(), cancel_requested=True, cancel_reason=reason,
                )
                queued = True
            else:
                self.store.update(conn, job_id, cancel_requested=True, cancel_reason=reason)
                queued = False
        jobdir = JobDir(record.job_dir)
        if queued:
            jobdir.emit("state", state=JobState.CANCELLED.value, reason=reason)
        else:
            jobdir.emit("cancel_requested", reason=reason)
            self._signal_supervisor(self.store.local(job_id))
        return self.store.get(job_id)  # type: ignore[return-value]

    def _signal_supervisor(self, local: LocalJob) -> None:
        import signal

        if processes.is_alive(local.supervisor_pid, local.supervisor_start):
            with contextlib.suppress(ProcessLookupError):
                os.kill(local.supervisor_pid, signal.SIGTERM)  # type: ignore[arg-type]
        # A job still waiting for its supervisor to start sees the flag when it does;
        # one whose supervisor is gone is finished by reconcile().
        self.reconcile()

    def wait_reason(self, record: JobRecord) -> tuple[str | None, int | None]:
        return self.wait_reasons([record]).get(record.id, (None, None))

    def wait_reasons(self, records: Sequence[JobRecord]) -> dict[str, tuple[str | None, int | None]]:
        queued = [r for r in records if r.state == JobState.QUEUED]
        if not queued:
            return {}
        free = self._free()  # once per page, not once per job
        out: dict[str, tuple[str | None, int | None]] = {}
        for r in queued:
            ahead = self.store.jobs_ahead(r)
            out[r.id] = (wait_reason(demand_of(r), free, ahead), ahead)
        return out

    # --- admission ----------------------------------------------------------------------
    def _admit(self, conn) -> list[str]:
        """Admit queued jobs that fit, in order; call inside a transaction."""
        free = self._free(conn)
        admitted_ids: list[str] = []
        after = None
        while True:
            page = self.store.queue_head(conn, limit=ADMISSION_PAGE, after=after)
            if not page:
                break
            waiting = (Waiting(job_id, demand_for(gpus, slots)) for job_id, _, _, gpus, slots in page)
            admissions, blocked = admit(waiting, free)
            now = time.time()
            for a in admissions:
                self.store.update(conn, a.id, state=JobState.STARTING, admitted_at=now, assigned_gpus=a.gpus)
                admitted_ids.append(a.id)
            if blocked is not None or len(page) < ADMISSION_PAGE:
                break
            _, priority, seq, _, _ = page[-1]
            after = (priority, seq)
        return admitted_ids

    def admit_and_launch(self) -> list[str]:
        with self.store.transaction() as conn:
            admitted = self._admit(conn)
        self._launch(admitted)
        return admitted

    def _launch(self, job_ids: Sequence[str]) -> None:
        for job_id in job_ids:
            record = self.store.get(job_id)
            if record is None or record.state != JobState.STARTING:
                continue
            jobdir = JobDir(record.job_dir)
            jobdir.emit("state", state=JobState.STARTING.value, gpus=record.assigned_gpus)
            env = {**os.environ, "TRAINHUB_HOME": str(self.home)}
            if not _needs_pip(jobdir):  # else the supervisor installs first, then starts the ranks
                write_plan(jobdir.root, record.attempt, launch_plan(
                    self.python, env, record.spec, job_id=record.id, job_dir=str(jobdir.root),
                    bundle=str(jobdir.bundle), attempt=record.attempt,
                    assigned_gpus=record.assigned_gpus, port=processes.free_port(),
                    resume_from=resolve_resume(self.store, record.spec), warm_start=self.warm_start,
                ))
            argv = [self.python, "-m", "trainhub.backends.local.launch", str(self.home), job_id,
                    str(jobdir.root)]
            proc = processes.spawn_detached(argv, jobdir.supervisor_log, env=env)
            self.store.update_local(None, job_id, supervisor_pid=proc.pid,
                                    supervisor_start=proc.create_time())

    # --- reconcile ----------------------------------------------------------------------
    def reconcile(self) -> None:
        """Finish or requeue jobs whose supervisor died; relaunch admitted jobs never launched."""
        now = time.time()
        relaunch: list[str] = []
        for record, local in self.store.with_local(ACTIVE):
            if local.supervisor_pid is None:
                if now - (record.admitted_at or now) > LAUNCH_GRACE_SECONDS:
                    relaunch.append(record.id)
                continue
            if processes.is_alive(local.supervisor_pid, local.supervisor_start):
                continue
            self._supervisor_lost(record, local)
        self._launch(relaunch)
        self.admit_and_launch()

    def _supervisor_lost(self, record: JobRecord, local: LocalJob) -> None:
        processes.kill_job_processes(record.id, list(local.process_groups))
        jobdir = JobDir(record.job_dir)
        if record.cancel_requested:
            verdict = Verdict(failure_class=FailureClass.CANCELLED,
                              reason=record.cancel_reason or "cancelled", attempt=record.attempt)
        else:
            verdict = Verdict(
                failure_class=FailureClass.INFRASTRUCTURE,
                reason=f"the job's supervisor (pid {local.supervisor_pid}) ended unexpectedly",
                attempt=record.attempt,
            )
        retry = not record.cancel_requested and should_retry(
            verdict, record.spec.retry, record.retries)
        with self.store.transaction() as conn:
            current = self.store.get(record.id, conn)
            if (current is None or current.state not in ACTIVE
                    or self.store.local(record.id, conn).supervisor_pid != local.supervisor_pid):
                return  # someone else already dealt with it
            if retry:
                verdict.retriable = True
                self.store.update(
                    conn, record.id, state=JobState.QUEUED, attempt=record.attempt + 1,
                    retries=count_retry(record.retries, verdict.failure_class),
                    verdict=verdict.model_dump(), assigned_gpus=[],
                )
                self.store.update_local(conn, record.id, supervisor_pid=None, supervisor_start=None,
                                        process_groups=[])
            else:
                state = JobState.CANCELLED if record.cancel_requested else JobState.FAILED
                self.store.update(conn, record.id, state=state, verdict=verdict.model_dump(),
                                  finished_at=time.time())
        jobdir.emit("verdict", **verdict.model_dump(mode="json"))
        jobdir.emit("state", state=(JobState.QUEUED if retry else
                                    JobState.CANCELLED if record.cancel_requested else JobState.FAILED).value,
                    reason=verdict.reason)

    def close(self) -> None:
        self.store.close()
