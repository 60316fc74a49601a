"""The local backend's verbs: jobs run as torchrun process groups on this machine.

No daemon: each verb works on the shared store, and whoever changes the queue admits and
launches through :mod:`~trainhub.backends.local.admitter`. ``reconcile`` finishes or requeues
the jobs whose supervisor died.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from trainhub import settings
from trainhub.backends.base import Backend, Feature, Placement
from trainhub.backends.local import accounting, processes
from trainhub.backends.local.admission import Capacity
from trainhub.backends.local.admitter import ACTIVE, Admitter, demand_of
from trainhub.backends.local.store import Store
from trainhub.backends.local.store_rows import LocalJob
from trainhub.datasets.catalog import Catalog, load_datasets_file, local_catalog
from trainhub.errors import Conflict, NotFound
from trainhub.imagepolicy import Allowed, load_images_file, local_image
from trainhub.jobs.directory import JobDir
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.models import JobRecord, Verdict
from trainhub.jobs.states import FailureClass, JobState
from trainhub.jobs.suspension import check_resumable, check_suspendable, saved_step
from trainhub.lifecycle.retry import plan_retry
from trainhub.lifecycle.verdict import cancel_verdict
from trainhub.outputs.retention import Retention, load_retention_file
from trainhub.registry.policy import ModelPolicy, load_models_file
from trainhub.usage.models import UsageScope
from trainhub.usage.panel import PoolQuota, local_quotas
from trainhub.usage.store import UsageStore

# A job admitted by a process that died before it could launch the supervisor is relaunched.
LAUNCH_GRACE_SECONDS = 30.0


class LocalBackend(Backend):
    name: ClassVar[str] = "local"
    features: ClassVar[frozenset[Feature]] = frozenset(
        {Feature.MULTI_NODE, Feature.GPUS, Feature.PRIORITY, Feature.PIP_INSTALL, Feature.DATASETS}
    )

    def __init__(
        self, home: Path | None = None, *, slots: int | None = None, python: str | None = None
    ):
        self.home = Path(home) if home else settings.home()
        self.jobs_root = settings.jobs_root(self.home)
        self.store = Store(settings.database(self.home))
        self.admitter = Admitter(self.home, self.store, python or sys.executable)
        if slots is not None:  # whoever builds the backend with slots configures the machine
            self.admitter.set_slots(slots)

    @classmethod
    def from_settings(cls, home: Path, **kwargs: Any) -> LocalBackend:
        return cls(home, **kwargs)

    def dataset_catalog(self) -> Catalog:
        """The local datasets file, read anew each time (an edit holds at once)."""
        source = settings.datasets_file(self.home)
        return local_catalog(
            load_datasets_file(source),
            team=settings.team(),
            roots=settings.dataset_roots(),
            source=str(source),
        )

    def check_image(self, wanted: str | None) -> Allowed:
        """The local images file's policy, read anew each time; without one nothing is refused
        (locally the image is a label: the ranks run in this machine's environment)."""
        images = load_images_file(settings.images_file(self.home))
        return local_image(wanted, images, team=settings.team())

    def catalog(self) -> dict[str, list[dict[str, Any]]]:
        """The local images file's catalog, for the submit dialog to offer."""
        images = load_images_file(settings.images_file(self.home))
        offered = [
            {"name": i.name, "image": i.image, "description": i.description}
            for i in (images.images if images else [])
            if i.scan.status != "failed"
        ]
        return {"images": offered, "teams": []}

    def ran_image(self) -> dict[str, Any]:
        """No container image: the ranks run in this machine's Python environment."""
        return {
            "backend": "local",
            "image": None,
            "environment": sys.prefix,
            "python": self.admitter.python,
            "note": "the local backend runs no container image; the ranks ran in this "
            "machine's Python environment",
        }

    def retention(self, team: str | None) -> Retention | None:
        """The local retention file's policy, for every team on the machine (read anew)."""
        return load_retention_file(settings.retention_file(self.home))

    def model_policy(self) -> ModelPolicy:
        """The local models file's policy (read anew); none protects nothing."""
        return load_models_file(settings.models_file(self.home))

    def model_registered(self, version: Any, files: Path) -> None:
        """A new version of the registry: its job's MLflow mirror, where there is one, sends it."""
        from trainhub.backends.local import tracking

        tracking.model_registered(
            self.home, version.source.job, version.model, version.version, files
        )

    # --- the machine (capabilities.OneMachine) ------------------------------------------
    def capacity(self) -> Capacity:
        """This machine's GPUs and CPU slots (the dialog's limits come from it)."""
        return self.admitter.capacity()

    def slots(self) -> int:
        return self.admitter.slots()

    def set_slots(self, slots: int) -> None:
        self.admitter.set_slots(slots)

    def check_fits(self, record: JobRecord, placement: Placement) -> None:
        self.admitter.check_fits(record)

    # --- verbs --------------------------------------------------------------------------
    def submit(self, record: JobRecord, placement: Placement) -> JobRecord:
        # The installation's team (TRAINHUB_TEAM), whose datasets and images it was given:
        # its usage is that team's too.
        if record.team is None and settings.team():
            record = record.model_copy(update={"team": settings.team()})
        # Kept for the first attempt, which may start long after, from another process.
        # An elastic job asks for its MIN workers until admitted (backends/local/elastic.py).
        res = record.spec.resources
        start = demand_of(record, res.fewest_workers)
        local = LocalJob(
            slots=start.slots,
            starts_from=placement.resume_from,
            workers=res.min_workers,
            start_gpus=start.gpus if res.elastic else None,
        )
        with self.store.transaction() as conn:
            record = self.store.insert(conn, record, local)
            admitted = self.admitter.admit(conn)
        self.admitter.launch(admitted)
        return self.store.get(record.id) or record

    def get(self, job_id: str) -> JobRecord | None:
        return self.store.get(job_id)

    def list_jobs(
        self, wanted: JobFilter, *, limit: int, before_seq: int | None = None
    ) -> list[JobRecord]:
        return self.store.list_jobs(wanted, limit=limit, before_seq=before_seq)

    def count(self, wanted: JobFilter) -> int:
        return self.store.count(wanted)

    def edit(self, job_id: str, *, tags: list[str] | None, note: str | None) -> JobRecord:
        record = self.store.edit(job_id, tags=tags, note=note)
        if record is None:
            raise NotFound(f"No job {job_id}.")
        return record

    def cancel(self, job_id: str, reason: str) -> JobRecord:
        with self.store.transaction() as conn:
            record = self.store.get(job_id, conn)
            if record is None:
                raise NotFound(f"No job {job_id}.")
            if record.state.terminal:
                raise Conflict(f"Job {job_id} already {record.state.value}.")
            if record.state in (JobState.QUEUED, JobState.SUSPENDED):  # nothing running
                verdict = cancel_verdict(reason, record.attempt)
                self.store.update(
                    conn,
                    job_id,
                    state=JobState.CANCELLED,
                    verdict=verdict.model_dump(),
                    finished_at=time.time(),
                    cancel_requested=True,
                    cancel_reason=reason,
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

    def suspend(self, job_id: str, reason: str) -> JobRecord:
        with self.store.transaction() as conn:
            record = self.store.get(job_id, conn)
            if record is None:
                raise NotFound(f"No job {job_id}.")
            check_suspendable(record)
            queued = record.state == JobState.QUEUED
            if queued:  # holds nothing yet: suspended on the spot
                step = saved_step(record.job_dir)
                self.store.update(
                    conn, job_id, state=JobState.SUSPENDED, suspended_step=step, assigned_gpus=[]
                )
            else:  # its supervisor stops the ranks and records the suspension
                self.store.update(conn, job_id, suspend_requested=True)
        jobdir = JobDir(record.job_dir)
        if queued:
            jobdir.emit("suspended", step=step, reason=reason)
            jobdir.emit("state", state=JobState.SUSPENDED.value, reason=reason, step=step)
        else:
            jobdir.emit("suspend_requested", reason=reason)
            self._signal_supervisor(self.store.local(job_id))
        return self.store.get(job_id)  # type: ignore[return-value]

    def resume(self, job_id: str) -> JobRecord:
        with self.store.transaction() as conn:
            record = self.store.get(job_id, conn)
            if record is None:
                raise NotFound(f"No job {job_id}.")
            check_resumable(record)
            self.store.update(
                conn,
                job_id,
                state=JobState.QUEUED,
                attempt=record.attempt + 1,
                suspend_requested=False,
                suspended_step=None,  # the timeline keeps it (resume_step)
                admitted_at=None,
            )
            self.admitter.requeued(conn, record)
        JobDir(record.job_dir).emit(
            "state",
            state=JobState.QUEUED.value,
            attempt=record.attempt + 1,
            resume_step=record.suspended_step,
        )
        self.admitter.admit_and_launch()
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

    def wait_reasons(
        self, records: Sequence[JobRecord]
    ) -> dict[str, tuple[str | None, int | None]]:
        return self.admitter.wait_reasons(records)

    def admit_and_launch(self) -> list[str]:
        return self.admitter.admit_and_launch()

    @contextlib.contextmanager
    def usage_rows(self, scope: UsageScope, *, recompute: bool = False) -> Iterator[UsageStore]:
        accounting.backfill(
            self.store, threshold_pct=settings.waste_utilization_pct(), recompute=recompute
        )
        yield accounting.usage_store(self.store)

    def quotas(self) -> tuple[list[PoolQuota], str]:
        """What the local admission knows: the machine's GPUs and CPU slots, and what the
        admitted jobs hold of them."""
        capacity, free = self.admitter.capacity(), self.admitter.free()
        return (
            local_quotas(len(capacity.gpus), len(free.gpus), capacity.slots, free.slots),
            "local admission",
        )

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
        self.admitter.launch(relaunch)
        self.admitter.admit_and_launch()
        self._mirror()

    def _mirror(self) -> None:
        """The MLflow mirror catches up whatever waits (trainhub.tracking); only where a job
        was ever mirrored does this import or read anything."""
        if not (self.home / "mlflow").is_dir():
            return
        from trainhub.backends.local.tracking import nudge

        with contextlib.suppress(Exception):  # the mirror never stands in a reconcile's way
            nudge(self.home)

    def _supervisor_lost(self, record: JobRecord, local: LocalJob) -> None:
        processes.kill_job_processes(record.id, list(local.process_groups))
        jobdir = JobDir(record.job_dir)
        if record.cancel_requested:
            verdict = cancel_verdict(record.cancel_reason or "cancelled", record.attempt)
        else:
            verdict = Verdict(
                failure_class=FailureClass.INFRASTRUCTURE,
                reason=f"the job's supervisor (pid {local.supervisor_pid}) ended unexpectedly",
                attempt=record.attempt,
            )
        if record.suspend_requested and not record.cancel_requested:
            self._suspended(record, local)
            return
        retry = plan_retry(
            verdict,
            record.spec.retry,
            record.retries,
            attempt=record.attempt,
            now=time.time(),
            cancel_requested=record.cancel_requested,
        )
        with self.store.transaction() as conn:
            if not self._still_lost(conn, record, local):
                return  # someone else already dealt with it
            if retry is not None:  # at once: the backoff is for failures the supervisor saw
                verdict.retriable = True
                self.store.update(
                    conn,
                    record.id,
                    state=JobState.QUEUED,
                    attempt=retry.attempt,
                    retries=retry.retries,
                    verdict=verdict.model_dump(),
                    assigned_gpus=[],
                )
                self.admitter.requeued(conn, record)
            else:
                state = JobState.CANCELLED if record.cancel_requested else JobState.FAILED
                self.store.update(
                    conn,
                    record.id,
                    state=state,
                    verdict=verdict.model_dump(),
                    finished_at=time.time(),
                )
        jobdir.emit("verdict", **verdict.model_dump(mode="json"))
        jobdir.emit(
            "state",
            state=(
                JobState.QUEUED
                if retry is not None
                else JobState.CANCELLED
                if record.cancel_requested
                else JobState.FAILED
            ).value,
            reason=verdict.reason,
        )

    def _suspended(self, record: JobRecord, local: LocalJob) -> None:
        """A job asked to suspend whose supervisor is gone: suspended at its latest save."""
        # The supervisor's module: imported here, on this rare path, not by every CLI call.
        from trainhub.backends.local.ending import record_suspension

        record_suspension(
            self.store,
            record,
            JobDir(record.job_dir),
            still=lambda conn: self._still_lost(conn, record, local),
        )

    def _still_lost(self, conn: sqlite3.Connection, record: JobRecord, local: LocalJob) -> bool:
        """The job is still active under the supervisor found gone: nobody dealt with it."""
        current = self.store.get(record.id, conn)
        return (
            current is not None
            and current.state in ACTIVE
            and self.store.local(record.id, conn).supervisor_pid == local.supervisor_pid
        )

    def close(self) -> None:
        self.store.close()
