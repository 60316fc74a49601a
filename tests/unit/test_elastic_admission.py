"""Elastic jobs growing while other processes submit, end and admit jobs at the same time: the
store's one exclusive transaction keeps every grant inside the machine's slots and each
elastic job between its MIN and MAX workers."""

from __future__ import annotations

import multiprocessing
import random
from pathlib import Path

from tests.unit.test_store import record
from trainhub.backends.local.admitter import Admitter
from trainhub.backends.local.store import Store
from trainhub.backends.local.store_rows import LocalJob
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState

SLOTS = 4
ELASTIC = parse_spec({"name": "e", "source": {"path": "t.py"}, "resources": {"workers": "1:3"}})
ACTIVE = (JobState.STARTING, JobState.RUNNING, JobState.RETRYING)


def admitter(home: Path) -> Admitter:
    store = Store(home / "trainhub.db")
    a = Admitter(home, store)
    a.__dict__["gpus"] = ()  # no NVML: CPU slots only
    return a


def broken_rules(a: Admitter, conn) -> list[str]:
    """What the store holds that it must not, seen inside the transaction."""
    held = a.store.with_local(ACTIVE, conn)
    problems = []
    if sum(local.slots for _, local in held) > SLOTS:
        problems.append(f"{sum(local.slots for _, local in held)} slots held of {SLOTS}")
    for rec, local in held:
        if local.workers is not None and not (
            1 <= local.workers <= 3 == rec.spec.resources.workers
        ):
            problems.append(f"{rec.id} holds {local.workers} workers")
        if local.workers is not None and local.slots != local.workers:
            problems.append(f"{rec.id}: {local.workers} workers in {local.slots} slots")
    return problems


def churn(home: Path, name: str, rounds: int, out) -> None:
    a, rng = admitter(home), random.Random(name)
    problems, seen = [], set()
    for n in range(rounds):
        with a.store.transaction() as conn:
            running = a.store.with_local(ACTIVE, conn)
            pick = rng.random()
            if pick < 0.3:  # a submit, now and then one of high priority
                job = record(f"{name}-{n}").model_copy(update={"priority": rng.choice([0, 2])})
                a.store.insert(conn, job, LocalJob(slots=1))
            elif pick < 0.6:  # a job that started
                for rec, _ in running:
                    if rec.state == JobState.STARTING:
                        a.store.update(conn, rec.id, state=JobState.RUNNING)
                        break
            else:  # a fixed-size job that ended
                ended = [r for r, local in running if local.workers is None]
                if ended:
                    a.store.update(conn, rng.choice(ended).id, state=JobState.SUCCEEDED)
            a.admit(conn, freed_by="job x")
            problems += broken_rules(a, conn)
            seen |= {local.resize_reason.split()[0] for _, local in held(a, conn)}
    out.put((problems, seen))


def held(a: Admitter, conn):
    return [(r, local) for r, local in a.store.with_local(ACTIVE, conn) if local.resize_reason]


def test_growing_never_exceeds_the_slots_while_others_admit(tmp_path: Path) -> None:
    a = admitter(tmp_path)
    a.store.set_machine_setting("slots", str(SLOTS))
    with a.store.transaction() as conn:
        for job_id in ("elastic-a", "elastic-b"):
            job = record(job_id).model_copy(update={"spec": ELASTIC, "priority": 1})
            a.store.insert(conn, job, LocalJob(slots=1, workers=1))
            a.store.update(conn, job_id, state=JobState.RUNNING)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=churn, args=(tmp_path, f"p{i}", 60, out)) for i in range(4)]
    for p in procs:
        p.start()
    reports = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
    assert [problem for problems, _ in reports for problem in problems] == []
    # The churn made the jobs grow into freed slots and lose workers to urgent jobs.
    assert set().union(*(seen for _, seen in reports)) >= {"slots", "preempted"}
    sizes = {r.id: local.workers for r, local in a.store.with_local(ACTIVE)}
    assert 1 <= sizes["elastic-a"] <= 3 and 1 <= sizes["elastic-b"] <= 3
