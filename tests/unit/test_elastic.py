"""The pure decisions of elastic local jobs: when a running elastic job grows or shrinks, and
what its events say."""

from __future__ import annotations

import pytest

from trainhub.backends.local.admission import Demand, Free
from trainhub.backends.local.elastic import (
    Grant,
    grew_sentence,
    grow,
    lost_reason,
    reclaim,
    shrank_sentence,
)
from trainhub.backends.local.torchrun import torchrun_argv

ONE_SLOT = Demand(gpus=0, slots=1)


def grant(job: str, workers: int, *, priority: int = 1, seq: int = 1, gpus=(), per=ONE_SLOT):
    return Grant(job, priority, seq, workers, 1, 3, per, list(gpus))


def test_free_slots_grow_jobs_toward_max_higher_priority_first():
    low, high = grant("low", 1, priority=0), grant("high", 1, priority=2, seq=2)
    free = Free(gpus=[], slots=3)
    changes = grow([low, high], free, "job blocker")
    assert [(c.id, c.workers, c.slots) for c in changes] == [("high", 3, 3), ("low", 2, 2)]
    assert changes[0].reason == "slots freed by job blocker" and free.slots == 0
    assert grow([grant("full", 3)], Free([], 5)) == []  # at MAX already


def test_gpus_are_granted_and_taken_back_a_worker_at_a_time():
    per = Demand(gpus=2, slots=0)
    job = grant("j", 1, gpus=[0, 1], per=per)
    free = Free(gpus=[2, 3, 4], slots=0)
    (change,) = grow([job], free)
    assert (change.workers, change.gpus, free.gpus) == (2, [0, 1, 2, 3], [4])
    taken = reclaim([job], free, job_id="urgent", priority=2, demand=Demand(gpus=3, slots=0))
    assert [(c.workers, c.gpus) for c in taken] == [(1, [0, 1])]
    assert free.gpus == [2, 3, 4]


def test_a_higher_priority_job_takes_workers_above_min_only_when_that_makes_it_fit():
    newer, older = grant("newer", 3, seq=5), grant("older", 3, seq=1)
    free = Free(gpus=[], slots=0)
    taken = reclaim([older, newer], free, job_id="urgent", priority=2, demand=Demand(0, 2))
    assert [(c.id, c.workers, c.reason) for c in taken] == [("newer", 1, "preempted by job urgent")]
    assert free.slots == 2 and (newer.workers, older.workers) == (1, 3)
    # Not from jobs of its own priority or higher, never below MIN, nothing for a partial fit.
    same = grant("same", 3, priority=2)
    assert reclaim([same], Free([], 0), job_id="u", priority=2, demand=ONE_SLOT) == []
    at_min = grant("min", 1, priority=0)
    assert reclaim([at_min], Free([], 0), job_id="u", priority=2, demand=ONE_SLOT) == []
    small = grant("small", 2, priority=0)
    untouched = Free([], 0)
    assert reclaim([small], untouched, job_id="u", priority=2, demand=Demand(0, 2)) == []
    assert small.workers == 2 and untouched.slots == 0


def test_membership_changes_say_why():
    assert grew_sentence(3, "slots freed by job x") == "grew to 3 workers: slots freed by job x"
    assert shrank_sentence(1, "worker 2 preempted by job y") == (
        "shrank to 1 worker: worker 2 preempted by job y"
    )
    assert lost_reason(1, -9) == "worker 1's agent killed by SIGKILL"
    assert lost_reason(0, 1) == "worker 0's agent exited with code 1"


def test_elastic_agents_rendezvous_through_the_store_trainhub_hosts():
    argv = torchrun_argv(
        "py",
        "b",
        workers=3,
        node_rank=0,
        nproc_per_worker=2,
        master_port=9,
        run_id="r",
        elastic=(1, 3),
        max_restarts=5,
    )
    assert "--nnodes=1:3" in argv and "--rdzv-backend=c10d" in argv
    assert "--rdzv-endpoint=127.0.0.1:9" in argv and "--max-restarts=5" in argv
    assert any(a.startswith("--rdzv-conf=is_host=false") for a in argv)
    assert not any(a.startswith("--node-rank") for a in argv)


def test_usage_counts_each_size_an_elastic_job_ran_at():
    from tests.unit.test_usage import T0, record
    from trainhub.jobs.spec import parse_spec
    from trainhub.usage.compute import usage_row

    spec = parse_spec(
        {
            "name": "e",
            "source": {"path": "t.py"},
            "resources": {"workers": "1:3", "gpus_per_worker": 1},
        }
    )
    events = [
        {"time": T0 + 6, "type": "state", "state": "running", "gpus": [0]},
        {"time": T0 + 16, "type": "resize", "workers": 3, "gpus": 3, "reason": "grew"},
        {"time": T0 + 76, "type": "resize", "workers": 2, "gpus": 2, "reason": "shrank"},
        {"time": T0 + 106, "type": "state", "state": "succeeded"},
    ]
    # Steps every second, but for the restart after each change (5 s without a step) and
    # the 3 steps redone after the first (the last checkpoint was 3 steps back).
    steps = [0.0, *range(21, 76), *range(81, 106)]
    step_of = {t: i for i, t in enumerate(steps)}
    step_of.update({t: step_of[t] - 3 for t in range(21, 24)})
    scalars = [{"time": T0 + 6 + t, "rank": 0, "step": step_of[t], "loss": 1.0} for t in steps]
    elastic = record(spec=spec, gpus=3)
    row = usage_row(elastic, events, scalars=scalars, threshold_pct=10)
    assert row.gpu_allocated_s == pytest.approx(1 * 10 + 3 * 60 + 2 * 30)
    assert row.attempts == 1 and row.requeue_s == 0
    # Each restart shows as start-up of the stretch after it, the repeated steps as redone.
    assert row.startup_s > 10 and row.redone_steps >= 3 and row.gpu_redone_s > 0
    fixed = usage_row(record(gpus=3), events, threshold_pct=10)
    assert fixed.gpu_allocated_s == pytest.approx(3 * 100)  # a fixed size, as before
