"""The agents of one attempt of an elastic local job, followed by its supervisor.

Each worker is a torchrun agent started with ``--nnodes MIN:MAX`` and a c10d rendezvous whose
store this module hosts (:mod:`~trainhub.backends.local.rendezvous`). The admitter decides the
job's grant (:mod:`~trainhub.backends.local.elastic`); :meth:`ElasticGroup.step` makes the
agents match it: it starts an agent for each worker granted (torchrun sees a node waiting and
restarts every rank at the new world size), stops the newest agents when workers were taken
from the job, and drops an agent that ended on its own, handing its slots back while MIN
remain (torchrun re-forms the group without it). Each change is a ``resize`` event.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import psutil

from trainhub.backends.local import processes
from trainhub.backends.local.admitter import Admitter, demand_of
from trainhub.backends.local.elastic import grew_sentence, lost_reason, shrank_sentence
from trainhub.backends.local.plan import attempt_of
from trainhub.backends.local.startup import start_plan
from trainhub.backends.local.store import Store
from trainhub.backends.local.torchrun import elastic_agent
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord

# How long a stopped agent has to stop its ranks (torchrun TERMs them, then KILLs) before it
# and what is left of them are killed.
STOP_GRACE_SECONDS = float(os.environ.get("TRAINHUB_ELASTIC_STOP_GRACE", "10"))
GRANT_POLL_SECONDS = 0.5


@dataclass
class Worker:
    agent: subprocess.Popen[bytes]
    gpus: list[int]
    tree: list[psutil.Process] = field(default_factory=list)  # for a stop: what it started
    stop_by: float | None = None  # when a stopped agent is killed


class ElasticGroup:
    def __init__(
        self,
        store: Store,
        admitter: Admitter,
        record: JobRecord,
        jobdir: JobDir,
        resume: str | None,
        env: Mapping[str, str],
    ):
        self.store, self.admitter, self.record, self.jobdir = store, admitter, record, jobdir
        self.resume, self.env = resume, env
        res = record.spec.resources
        self.min_workers = res.fewest_workers
        self.per_worker = demand_of(record, 1)
        self.port = processes.free_port()
        self.workers: dict[int, Worker] = {}  # by worker number, 0 to MAX-1
        self.stopping: dict[int, Worker] = {}
        self.lost: list[int] = []  # exit codes of agents that ended on their own
        self.finished = False  # an agent ended its ranks' run: no more changes
        self.rendezvous: subprocess.Popen[bytes] | None = None
        self._next_poll = 0.0

    # --- start ------------------------------------------------------------------------
    def start(self) -> list[subprocess.Popen[bytes]]:
        """Host the rendezvous store, then start an agent for each granted worker."""
        with open(self.jobdir.supervisor_log, "ab") as log:
            self.rendezvous = subprocess.Popen(
                [sys.executable, "-m", "trainhub.backends.local.rendezvous", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        self._wait_for_store()
        granted = self.store.local(self.record.id).workers or self.min_workers
        gpus = list(self.record.assigned_gpus)
        per = self.per_worker.gpus
        for n in range(granted):
            self._add(n, gpus[n * per : (n + 1) * per])
        return self.agents

    def _wait_for_store(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.rendezvous is not None and self.rendezvous.poll() is not None:
                return  # it failed: the agents fail to rendezvous, and say why
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1),
            ):
                return
            time.sleep(0.1)

    def _add(self, n: int, gpus: list[int]) -> None:
        attempt = attempt_of(
            self.record, python=sys.executable, env=self.env, port=self.port, resume=self.resume
        )
        entry = elastic_agent(attempt, gpus)
        (agent,) = start_plan(str(self.jobdir.root), {"agents": [entry]})
        self.workers[n] = Worker(agent, gpus)

    @property
    def agents(self) -> list[subprocess.Popen[bytes]]:
        return [w.agent for w in (*self.workers.values(), *self.stopping.values())]

    # --- follow -----------------------------------------------------------------------
    def step(self) -> list[int] | None:
        """One look at the agents and the grant; the exit codes once the attempt is over."""
        self._reap_stopped()
        lost = self._reap()
        if not self.workers:  # the run ended; a worker lost before it was not its ending
            return [0] if self.finished else self.lost or [0]
        if self.finished:
            return None  # the others end their run too
        if len(self.workers) < self.min_workers:  # too few to go on: the attempt fails
            return self._give_up()
        if lost:
            self.admitter.admit_and_launch(freed_by=f"a lost worker of job {self.record.id}")
        if time.monotonic() >= self._next_poll:
            self._next_poll = time.monotonic() + GRANT_POLL_SECONDS
            self._follow_grant()
        return None

    def _reap(self) -> bool:
        """Drop agents that ended; True when one was lost (ended by itself, not done)."""
        lost = False
        for n, w in sorted(self.workers.items()):
            code = w.agent.poll()
            if code is None:
                continue
            del self.workers[n]
            if code == 0 or self.finished:
                # Its ranks finished the run (one that joined as it ended found it closed).
                self.finished = True
                continue
            self.lost.append(code)
            if len(self.workers) >= self.min_workers:
                self._release(w, lost_reason(n, code))
            lost = True
        return lost

    def _give_up(self) -> list[int]:
        processes.terminate_tree([a.pid for a in self.agents], grace=STOP_GRACE_SECONDS)
        return [*self.lost, *(w.agent.wait() for w in self.workers.values())]

    def _release(self, worker: Worker, reason: str) -> None:
        """Hand a lost worker's slots back; the others go on without it."""
        with self.store.transaction() as conn:
            record = self.store.get(self.record.id, conn)
            local = self.store.local(self.record.id, conn)
            if record is None or local.workers is None:
                return
            held = [g for g in record.assigned_gpus if g not in worker.gpus]
            workers = max(local.workers - 1, 0)
            self.store.update(conn, record.id, assigned_gpus=held)
            self.store.update_local(
                conn, record.id, workers=workers, slots=workers * self.per_worker.slots
            )
        self._event(len(self.workers), shrank_sentence(len(self.workers), reason))

    def _follow_grant(self) -> None:
        record = self.store.get(self.record.id)
        local = self.store.local(self.record.id)
        if record is None or local.workers is None:
            return
        reason = local.resize_reason or "resized"
        live = len(self.workers)
        if local.workers > live:
            used = {g for w in self.workers.values() for g in w.gpus}
            spare = [g for g in record.assigned_gpus if g not in used]
            per = self.per_worker.gpus
            for _ in range(local.workers - live):
                taken = {*self.workers, *self.stopping}
                n = min(set(range(len(taken) + 1)) - taken)
                self._add(n, spare[:per])
                spare = spare[per:]
            self._event(local.workers, grew_sentence(local.workers, reason))
        elif local.workers < live:
            for n in sorted(self.workers, reverse=True)[: live - local.workers]:
                self._stop(n)
                left = len(self.workers)
                self._event(left, shrank_sentence(left, f"worker {n} {reason}"))
        self._record_processes()

    def _stop(self, n: int) -> None:
        """Stop a worker whose slots were taken: its agent stops its ranks and leaves."""
        worker = self.workers.pop(n)
        with contextlib.suppress(psutil.Error):
            worker.tree = [psutil.Process(worker.agent.pid)]
            worker.tree += worker.tree[0].children(recursive=True)
        with contextlib.suppress(ProcessLookupError):
            worker.agent.terminate()
        worker.stop_by = time.monotonic() + STOP_GRACE_SECONDS
        self.stopping[n] = worker

    def _reap_stopped(self) -> None:
        for n, w in list(self.stopping.items()):
            if w.agent.poll() is None and time.monotonic() < (w.stop_by or 0):
                continue
            for p in w.tree:  # ranks torchrun did not stop in time, and orphans of a kill
                with contextlib.suppress(psutil.Error):
                    p.kill()
            w.agent.poll()
            del self.stopping[n]

    def _record_processes(self) -> None:
        self.store.update_local(None, self.record.id, process_groups=[a.pid for a in self.agents])

    def _event(self, workers: int, message: str) -> None:
        res = self.record.spec.resources
        self.jobdir.emit(
            "resize",
            attempt=self.record.attempt,
            workers=workers,
            world_size=workers * res.ranks_per_worker,
            gpus=workers * res.gpus_per_worker,
            reason=message,
        )

    def close(self) -> None:
        """End the rendezvous store (the agents are the supervisor's to stop)."""
        self._reap_stopped()
        if self.rendezvous is not None and self.rendezvous.poll() is None:
            self.rendezvous.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.rendezvous.wait(5)
