"""Durable sweep records: what a sweep asked for (space, sampler, seed, limits, rule) and
which trial became which job.

Kept as trainhub.jobs.documents keeps a team's documents: a ``sweeps`` table in the local
store, ``.sweeps/<id>.json`` in a cluster team's jobs root; every change is a read-modify-write
under an exclusive lock, so two reconciles (the CLI's and the server's) never submit the same
trial twice.

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
from trainhub.jobs.documents import Documents, documents_for
from trainhub.jobs.spec import JobSpec


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
    claimed_by: str | None = None  # which process did (trainhub.jobs.claims)


class SweepRecord(BaseModel):
    id: str
    name: str
    user: str
    created_at: float
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


# Changed under the record's lock (trainhub.jobs.documents): two reconciles never submit one
# trial twice.
SweepRecords = Documents[SweepRecord]


def sweeps_home(backend: Any) -> Path:
    """The folder of the sweeps in ``backend``'s jobs root: their frozen workspaces, and on a
    cluster their records."""
    return Path(backend.jobs_root) / ".sweeps"


def records_for(backend: Any) -> SweepRecords:
    """Where ``backend`` keeps sweeps: a ``sweeps`` table in its SQLite store when it has one,
    else ``.sweeps/<id>.json`` in its jobs root."""
    return documents_for(backend, "sweeps", SweepRecord, sweeps_home(backend))
