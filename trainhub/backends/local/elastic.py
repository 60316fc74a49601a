"""Elastic jobs on one machine: when a running elastic job grows or shrinks, and the sentences
its events say. Pure functions over plain values (the admitter applies them inside its
transaction, the supervisor acts on the grant), so the policy is tested without processes.

The policy, as torchrun's elastic agent and Kueue's dynamically sized jobs have it: an elastic
job is admitted with MIN workers (``resources.min_workers``); while nothing waits in the
queue, free room grows running elastic jobs one worker at a time toward MAX (higher priority
first, then the oldest); a queued job of higher priority that does not fit takes workers above
MIN from lower-priority elastic jobs (the lowest priority first, then the newest), but only
when that makes it fit. MIN workers are never taken: below MIN a job can only be cancelled.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from trainhub.backends.local.admission import Demand, Free


@dataclass
class Grant:
    """What a running elastic job holds now, and what each of its workers needs."""

    id: str
    priority: int
    seq: int
    workers: int
    min_workers: int
    max_workers: int
    per_worker: Demand  # one worker's GPUs and CPU slots
    gpus: list[int] = field(default_factory=list)  # the GPU indices it holds, in worker order

    @property
    def slots(self) -> int:
        return self.workers * self.per_worker.slots


@dataclass(frozen=True)
class Change:
    """A new grant for a job: ``workers`` workers holding ``gpus`` and ``slots``."""

    id: str
    workers: int
    gpus: list[int]
    slots: int
    reason: str


def grow(grants: Sequence[Grant], free: Free, freed_by: str | None = None) -> list[Change]:
    """Give free room to running elastic jobs below MAX, a worker at a time (``free`` is
    consumed). Call only when no queued job waits: the queue comes first. ``freed_by``: what
    freed the room, e.g. "job X"."""
    reason = f"slots freed by {freed_by}" if freed_by else "slots free"
    grown: dict[str, Grant] = {}
    for grant in sorted(grants, key=lambda g: (-g.priority, g.seq)):
        while grant.workers < grant.max_workers and free.fits(grant.per_worker):
            grant.gpus = grant.gpus + free.take(grant.per_worker)
            grant.workers += 1
            grown[grant.id] = grant
    return [Change(g.id, g.workers, g.gpus, g.slots, reason) for g in grown.values()]


def reclaim(
    grants: Sequence[Grant], free: Free, *, job_id: str, priority: int, demand: Demand
) -> list[Change]:
    """Workers above MIN taken from elastic jobs of lower priority than the queued job
    ``job_id``, so that ``demand`` fits; none when even all of them would not make it fit.
    ``free`` gains what is taken, and the grants lose it (nothing changes without a fit)."""
    room = Free(list(free.gpus), free.slots)
    taken: dict[str, Grant] = {}
    victims = sorted(
        (replace(g) for g in grants if g.priority < priority and g.workers > g.min_workers),
        key=lambda g: (g.priority, -g.seq),
    )
    for grant in victims:
        while not room.fits(demand) and grant.workers > grant.min_workers:
            per = grant.per_worker.gpus
            released = grant.gpus[len(grant.gpus) - per :] if per else []
            grant.gpus = grant.gpus[: len(grant.gpus) - per]
            grant.workers -= 1
            room.gpus += released
            room.slots += grant.per_worker.slots
            taken[grant.id] = grant
        if room.fits(demand):
            break
    if not room.fits(demand):
        return []
    free.gpus, free.slots = sorted(room.gpus), room.slots
    for g in grants:
        if g.id in taken:
            g.workers, g.gpus = taken[g.id].workers, taken[g.id].gpus
    return [
        Change(g.id, g.workers, g.gpus, g.slots, f"preempted by job {job_id}")
        for g in taken.values()
    ]


def workers_word(n: int) -> str:
    return f"{n} worker{'' if n == 1 else 's'}"


def grew_sentence(workers: int, reason: str) -> str:
    """``"grew to 3 workers: slots freed by job X"``."""
    return f"grew to {workers_word(workers)}: {reason}"


def shrank_sentence(workers: int, reason: str) -> str:
    """``"shrank to 2 workers: worker 2 preempted by job Y"``."""
    return f"shrank to {workers_word(workers)}: {reason}"


def lost_reason(worker: int, exit_code: int) -> str:
    """Why an agent that ended on its own left the group."""
    if exit_code < 0:
        try:
            how = f"killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            how = f"killed by signal {-exit_code}"
    else:
        how = f"exited with code {exit_code}"
    return f"worker {worker}'s agent {how}"
