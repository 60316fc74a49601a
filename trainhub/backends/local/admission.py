"""Local admission: which queued jobs may start now, and why the others wait.

Pure functions over plain values, so the policy is tested without processes or a database.
The policy is strict priority then FIFO: the head of the queue is never overtaken by a
smaller job behind it, so large jobs cannot starve (as in Kueue's StrictFIFO).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Demand:
    gpus: int  # GPUs for the whole job
    slots: int  # CPU slots (one per rank) for jobs without GPUs


@dataclass(frozen=True)
class Capacity:
    """What this machine offers: GPU indices from NVML, and CPU slots for CPU-only ranks."""

    gpus: tuple[int, ...]
    slots: int


@dataclass
class Free:
    gpus: list[int]
    slots: int

    def fits(self, demand: Demand) -> bool:
        return demand.gpus <= len(self.gpus) and demand.slots <= self.slots

    def take(self, demand: Demand) -> list[int]:
        taken, self.gpus = self.gpus[: demand.gpus], self.gpus[demand.gpus :]
        self.slots -= demand.slots
        return taken


@dataclass(frozen=True)
class Waiting:
    id: str
    demand: Demand


@dataclass(frozen=True)
class Admission:
    id: str
    gpus: list[int] = field(default_factory=list)


def demand_for(total_gpus: int, world_size: int) -> Demand:
    """GPU jobs are limited by their GPUs; CPU-only jobs take one slot per rank."""
    return Demand(gpus=total_gpus, slots=0 if total_gpus else world_size)


def free_capacity(capacity: Capacity, active: Iterable[tuple[Sequence[int], int]]) -> Free:
    """Subtract what admitted jobs hold (their GPU indices and slots) from the machine."""
    used_gpus: set[int] = set()
    used_slots = 0
    for gpus, slots in active:
        used_gpus.update(gpus)
        used_slots += slots
    return Free(
        gpus=[g for g in capacity.gpus if g not in used_gpus], slots=capacity.slots - used_slots
    )


def admit(queue: Iterable[Waiting], free: Free) -> tuple[list[Admission], Waiting | None]:
    """Admit from the head of ``queue`` (already in priority/FIFO order) while jobs fit.

    Returns the admissions and the first job that did not fit (the blocked head), if any.
    ``free`` is consumed as jobs are admitted.
    """
    admitted: list[Admission] = []
    for job in queue:
        if not free.fits(job.demand):
            return admitted, job
        admitted.append(Admission(job.id, free.take(job.demand)))
    return admitted, None


def never_fits(demand: Demand, capacity: Capacity) -> str | None:
    """A sentence when the job could not run on this machine even if it were idle."""
    if demand.gpus > len(capacity.gpus):
        have = len(capacity.gpus)
        return (
            f"needs {_n(demand.gpus, 'GPU')}, "
            f"but this machine has {have or 'no'} GPU{'s' if have != 1 else ''}"
        )
    if demand.slots > capacity.slots:
        return (
            f"needs {_n(demand.slots, 'CPU slot')} (one per rank), but this machine offers "
            f"{capacity.slots}; lower the processes or raise the local slot limit"
        )
    return None


def starting_reason(installing: bool) -> str:
    """What an admitted job does before its first rank runs."""
    if installing:
        return "installing the packages its %pip lines ask for; its ranks start next"
    return "starting its ranks"


def wait_reason(demand: Demand, free: Free, ahead: int) -> str:
    """Why a queued job waits, e.g. "needs 2 GPUs, 1 free; 3 jobs ahead"."""
    if demand.gpus:
        need = f"needs {_n(demand.gpus, 'GPU')}, {len(free.gpus)} free"
    else:
        need = f"needs {_n(demand.slots, 'CPU slot')}, {max(free.slots, 0)} free"
    if ahead == 0:
        fits = free.fits(demand)
        return f"{need}; next in line" if not fits else f"{need}; starting shortly"
    return f"{need}; {_n(ahead, 'job')} ahead"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
