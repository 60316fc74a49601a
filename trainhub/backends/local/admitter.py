"""The admitting side of the local backend.

There is no daemon: whoever changes the queue (a submit, a finishing supervisor, a cancel, a
reconcile) admits the queued jobs that fit inside one exclusive transaction of the store, then
starts a detached launcher for each job it admitted. The machine's capacity is one truth kept
in the store, so processes configured differently cannot over-admit.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path

from trainhub.backends.local import elastic, processes
from trainhub.backends.local.admission import (
    Capacity,
    Demand,
    Free,
    Waiting,
    admit,
    demand_for,
    free_capacity,
    never_fits,
    starting_reason,
    wait_reason,
)
from trainhub.backends.local.plan import attempt_plan, write_plan
from trainhub.backends.local.store import Store
from trainhub.bundle.layout import REQUIREMENTS
from trainhub.bundle.requirements import load_requirements
from trainhub.errors import OverQuota
from trainhub.jobs import confined, placement
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import FieldError, SpecError
from trainhub.jobs.states import JobState

ACTIVE = (JobState.STARTING, JobState.RUNNING, JobState.RETRYING)
# Queued jobs read per step of admission; it stops at the first job that does not fit.
ADMISSION_PAGE = 16
SLOTS = "slots"  # the machine setting: CPU slots for CPU-only ranks


def demand_of(record: JobRecord, workers: int | None = None) -> Demand:
    """What ``workers`` of the job hold (all of them by default)."""
    res = record.spec.resources
    if workers is None or workers == res.workers:
        return demand_for(record.gpus, res.world_size)
    return demand_for(workers * res.gpus_per_worker, workers * res.ranks_per_worker)


def most_workers(record: JobRecord, capacity: Capacity) -> int:
    """How many of the job's workers this machine could hold at once, were it idle."""
    res = record.spec.resources
    if res.gpus_per_worker:
        return len(capacity.gpus) // res.gpus_per_worker
    return capacity.slots // res.ranks_per_worker


def default_slots(environ: Mapping[str, str] = os.environ) -> int:
    """The slot count a machine starts with: TRAINHUB_LOCAL_SLOTS, else one per core."""
    raw = environ.get("TRAINHUB_LOCAL_SLOTS", "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"TRAINHUB_LOCAL_SLOTS={raw!r}: expected a whole number of at least 1")
        return value
    return os.cpu_count() or 1


def this_machine() -> placement.Node:
    """The machine as the one node local jobs run on: its memory is what bounds a request."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return placement.Node("this machine", cpu=float(os.cpu_count() or 1), memory=memory, gpus=0)


class Admitter:
    """Admits and launches local jobs; one per process, over the shared store."""

    def __init__(self, home: Path, store: Store, python: str = sys.executable):
        self.home = home
        self.store = store
        self.python = python

    # --- capacity -------------------------------------------------------------------------
    @cached_property
    def gpus(self) -> tuple[int, ...]:
        """This machine's GPUs, from NVML (none without a driver)."""
        from trainhub.metrics.nvml import gpu_inventory

        return tuple(g.index for g in gpu_inventory().gpus)

    def slots(self, conn: sqlite3.Connection | None = None) -> int:
        """The machine's CPU slots as the store keeps them; the first process to ask sets them
        from its environment, later ones read what it set."""
        stored = self.store.machine_setting(SLOTS, conn)
        if stored is None:
            self.store.seed_machine_setting(SLOTS, str(default_slots()), conn)
            stored = self.store.machine_setting(SLOTS, conn)
        return int(stored or 1)

    def set_slots(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"slots: expected at least 1, got {slots}")
        self.store.set_machine_setting(SLOTS, str(slots))

    def capacity(self, conn: sqlite3.Connection | None = None) -> Capacity:
        return Capacity(gpus=self.gpus, slots=self.slots(conn))

    def check_fits(self, record: JobRecord) -> None:
        res = record.spec.resources
        # An elastic job starts with MIN workers: they must fit; MAX must too, or it could
        # never grow to the size it asks for.
        capacity = self.capacity()
        reason = never_fits(demand_of(record, res.fewest_workers), capacity)
        if reason:
            raise OverQuota(f"Job {record.name} {reason}.")
        if res.elastic and never_fits(demand_of(record), capacity):
            most = most_workers(record, capacity)
            raise SpecError(
                [
                    FieldError(
                        field="resources.workers",
                        message=f"this machine holds at most {most} of the job's workers at "
                        f"once, not {res.workers}; ask for at most {res.min_workers}:{most}",
                    )
                ]
            )
        if res.memory_bytes is not None:  # GPUs and CPU slots: never_fits, above
            request = placement.Request(workers=res.workers, cpu=0, memory=res.memory_bytes, gpus=0)
            problem = placement.refusal(request, [this_machine()], where="this machine")
            if problem is not None:
                raise SpecError([problem])

    def free(self, conn: sqlite3.Connection | None = None) -> Free:
        return free_capacity(self.capacity(conn), self.store.holdings(ACTIVE, conn))

    def wait_reasons(
        self, records: Sequence[JobRecord]
    ) -> dict[str, tuple[str | None, int | None]]:
        """Why each queued job waits, and how many jobs are ahead of it; what each admitted
        one does before its ranks run."""
        out: dict[str, tuple[str | None, int | None]] = {
            r.id: (starting_reason(self._needs_pip(JobDir(r.job_dir))), None)
            for r in records
            if r.state == JobState.STARTING
        }
        queued = [r for r in records if r.state == JobState.QUEUED]
        if not queued:
            return out
        free = self.free()  # once per page, not once per job
        for r in queued:
            ahead = self.store.jobs_ahead(r)
            need = demand_of(r, r.spec.resources.fewest_workers)  # an elastic job's MIN
            out[r.id] = (wait_reason(need, free, ahead), ahead)
        return out

    # --- admission ------------------------------------------------------------------------
    def admit(self, conn: sqlite3.Connection, freed_by: str | None = None) -> list[str]:
        """Admit queued jobs that fit, in order, and resize running elastic jobs
        (:mod:`~trainhub.backends.local.elastic`): a blocked job of higher priority takes their
        workers above MIN; with nobody waiting they grow into what is free. Call inside a
        transaction; ``freed_by`` says what freed room (for the events of jobs that grow)."""
        free = self.free(conn)
        admitted, blocked = self._admit_queue(conn, free)
        grants = self._elastic_grants(conn)
        while blocked is not None and grants:
            job_id, priority, demand = blocked
            changes = elastic.reclaim(grants, free, job_id=job_id, priority=priority, demand=demand)
            if not changes:
                break
            self._regrant(conn, changes)
            more, blocked = self._admit_queue(conn, free)
            admitted += more
        if blocked is None and grants:
            self._regrant(conn, elastic.grow(grants, free, freed_by))
        return admitted

    def _admit_queue(
        self, conn: sqlite3.Connection, free: Free
    ) -> tuple[list[str], tuple[str, int, Demand] | None]:
        """Admit from the head of the queue while jobs fit (``free`` is consumed); the first
        job that did not fit: (id, priority, demand)."""
        admitted: list[str] = []
        after = None
        while True:
            page = self.store.queue_head(conn, limit=ADMISSION_PAGE, after=after)
            if not page:
                return admitted, None
            waiting = (
                Waiting(job_id, demand_for(gpus, slots)) for job_id, _, _, gpus, slots in page
            )
            admissions, blocked = admit(waiting, free)
            now = time.time()
            for a in admissions:
                self.store.update(
                    conn, a.id, state=JobState.STARTING, admitted_at=now, assigned_gpus=a.gpus
                )
                admitted.append(a.id)
            if blocked is not None:
                priority = next(p for job_id, p, _, _, _ in page if job_id == blocked.id)
                return admitted, (blocked.id, priority, blocked.demand)
            if len(page) < ADMISSION_PAGE:
                return admitted, None
            _, priority, seq, _, _ = page[-1]
            after = (priority, seq)

    def requeued(self, conn: sqlite3.Connection, record: JobRecord) -> None:
        """What the store keeps of a job queued again: no processes, and an elastic job asks
        for its MIN workers again."""
        res = record.spec.resources
        grant: dict[str, int] = {}
        if res.min_workers is not None:
            start = demand_of(record, res.min_workers)
            grant = {"workers": res.min_workers, "slots": start.slots, "start_gpus": start.gpus}
        self.store.update_local(
            conn, record.id, supervisor_pid=None, supervisor_start=None, process_groups=[], **grant
        )

    def _elastic_grants(self, conn: sqlite3.Connection) -> list[elastic.Grant]:
        """The running elastic jobs, as what they hold."""
        grants = []
        for record, local in self.store.with_local([JobState.RUNNING], conn):
            res = record.spec.resources
            if local.workers is None or res.min_workers is None:
                continue
            grants.append(
                elastic.Grant(
                    id=record.id,
                    priority=record.priority,
                    seq=record.seq or 0,
                    workers=local.workers,
                    min_workers=res.min_workers,
                    max_workers=res.workers,
                    per_worker=demand_of(record, 1),
                    gpus=list(record.assigned_gpus),
                )
            )
        return grants

    def _regrant(self, conn: sqlite3.Connection, changes: Sequence[elastic.Change]) -> None:
        """Record new grants; each job's supervisor starts or stops agents to match."""
        for c in changes:
            self.store.update(conn, c.id, assigned_gpus=c.gpus)
            self.store.update_local(
                conn, c.id, workers=c.workers, slots=c.slots, resize_reason=c.reason
            )

    def admit_and_launch(self, freed_by: str | None = None) -> list[str]:
        with self.store.transaction() as conn:
            admitted = self.admit(conn, freed_by)
        self.launch(admitted)
        return admitted

    @staticmethod
    def _needs_pip(jobdir: JobDir) -> bool:
        try:
            # The admitting process may be the server answering another user: a requirements
            # file the job replaced by a link or a FIFO is refused before anything opens it.
            confined.size(jobdir.root, f"bundle/{REQUIREMENTS}")
            return bool(load_requirements(jobdir.bundle))
        except FileNotFoundError:
            return False
        except ValueError:  # unreadable: the ranks start, and the runner names the file
            return False

    def launch(self, job_ids: Sequence[str]) -> None:
        """Start a detached launcher for each admitted job, with its first attempt planned."""
        for job_id in job_ids:
            record = self.store.get(job_id)
            if record is None or record.state != JobState.STARTING:
                continue
            jobdir = JobDir(record.job_dir)
            jobdir.emit("state", state=JobState.STARTING.value, gpus=record.assigned_gpus)
            env = {**os.environ, "TRAINHUB_HOME": str(self.home)}
            # With %pip lines the supervisor installs them first, then plans the ranks itself;
            # an elastic job's supervisor starts its rendezvous and agents itself.
            if not self._needs_pip(jobdir) and not record.spec.resources.elastic:
                plan, _ = attempt_plan(self.store, record, python=self.python, env=env)
                write_plan(jobdir.root, record.attempt, plan)
            argv = [
                self.python,
                "-m",
                "trainhub.backends.local.launcher",
                str(self.home),
                job_id,
                str(jobdir.root),
            ]
            proc = processes.spawn_detached(argv, jobdir.supervisor_log, env=env)
            self.store.update_local(
                None, job_id, supervisor_pid=proc.pid, supervisor_start=proc.create_time()
            )
