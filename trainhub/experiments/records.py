"""Durable sweep records: what a sweep asked for (space, sampler, seed, limits, rule) and
which trial became which job.

Kept as every driver of many jobs keeps its records (trainhub.jobs.records): a ``sweeps``
table in the local store, ``.sweeps/<id>.json`` in a cluster team's jobs root; every change
under an exclusive lock, so two reconciles never submit the same trial twice.

Either way the workspace a sweep's trials compile from is frozen beside the jobs, in
``.sweeps/<id>/`` (trainhub.bundle.snapshot), and the record keeps its digest.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from trainhub.bundle.snapshot import Frozen
from trainhub.experiments.sweep import SweepSpec
from trainhub.jobs.records import FileRecords, Record, Records, StoreRecords, records_home
from trainhub.jobs.records import records_for as generic_records_for
from trainhub.jobs.spec import JobSpec

KIND = "sweeps"  # the store's table; the folder .sweeps in a jobs root


class SweepState(StrEnum):
    RUNNING = "running"  # trials left to submit, or trials still active
    FINISHED = "finished"  # every trial submitted and ended
    CANCELLED = "cancelled"


class Trial(BaseModel):
    """One trial: its number, its parameters, and the job it became (or why it did not)."""

    trial: int
    parameters: dict[str, Any]
    job_id: str | None = None
    error: str | None = None  # the submit was refused: this sentence, and no job
    stopped_early: str | None = None  # why the rule stopped it
    claimed_at: float | None = None  # when a controller step took it to submit


class SweepRecord(Record):
    name: str
    job: JobSpec  # what each trial runs, before its parameters are set
    sweep: SweepSpec  # with the seed fixed at creation
    state: SweepState = SweepState.RUNNING
    trials: list[Trial] = Field(default_factory=list)
    finished_at: float | None = None
    cancel_reason: str | None = None
    # The workspace frozen at creation, which every trial compiles from (None: a sweep from
    # before trainhub froze them, whose trials compile from the workspace of who submits).
    source: Frozen | None = None

    @property
    def seed(self) -> int:
        return self.sweep.seed or 0


SweepRecords = Records[SweepRecord]


class StoreSweeps(StoreRecords[SweepRecord]):
    """Sweeps in the local backend's SQLite store, its ``sweeps`` table."""

    def __init__(self, store: Any):
        super().__init__(store, KIND, SweepRecord)


class FileSweeps(FileRecords[SweepRecord]):
    """Sweeps as ``<root>/<id>.json``, changed under an exclusive lock on ``<root>/.lock``."""

    def __init__(self, root: Path):
        super().__init__(root, SweepRecord)


def sweeps_home(backend: Any) -> Path:
    """The folder of the sweeps in ``backend``'s jobs root: their frozen workspaces, and on a
    cluster their records."""
    return records_home(backend, KIND)


def records_for(backend: Any) -> SweepRecords:
    """Where ``backend`` keeps sweeps: its SQLite store when it has one, else its jobs root."""
    return generic_records_for(backend, KIND, SweepRecord)
