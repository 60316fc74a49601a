"""Durable sweep records: what a sweep asked for (space, sampler, seed, limits, rule) and
which trial became which job.

Two homes, one interface: the local backend keeps them in its SQLite store (a ``sweeps``
table beside the jobs); a cluster keeps them as small JSON files in the team's jobs root
(``.sweeps/<id>.json``), read without following links (the volume is writable by jobs). Every
change is a read-modify-write under an exclusive lock, so two reconciles (the CLI's and the
server's) never submit the same trial twice.

Either way the workspace a sweep's trials compile from is frozen beside the jobs, in
``.sweeps/<id>/`` (trainhub.bundle.snapshot), and the record keeps its digest.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from trainhub.backends.capabilities import KeepsStore
from trainhub.bundle.snapshot import Frozen
from trainhub.experiments.sweep import SweepSpec
from trainhub.jobs import confined, ownership
from trainhub.jobs.spec import JobSpec

MAX_RECORD_BYTES = 4 * 2**20


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


class SweepRecords(ABC):
    @abstractmethod
    def create(self, record: SweepRecord) -> None: ...

    @abstractmethod
    def get(self, sweep_id: str) -> SweepRecord | None: ...

    @abstractmethod
    def list(self, user: str | None = None) -> list[SweepRecord]:
        """Newest first."""

    @abstractmethod
    @contextmanager
    def change(self, sweep_id: str) -> Iterator[SweepRecord | None]:
        """The record, held exclusively; what the block leaves in it is saved."""

    @abstractmethod
    def active_ids(self) -> list[str]:
        """The sweeps that may still be running (each advance looks again)."""

    def path(self, sweep_id: str) -> Path | None:
        """The file that keeps the record, where one does (its owner is the sweep's)."""
        return None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS sweeps (
    id          TEXT PRIMARY KEY,
    user        TEXT NOT NULL,
    state       TEXT NOT NULL,
    created_at  REAL NOT NULL,
    doc         TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sweeps_by_user ON sweeps (user, created_at DESC);
"""


class StoreSweeps(SweepRecords):
    """Sweeps in the local backend's SQLite store (its ``transaction()`` and ``connection()``)."""

    def __init__(self, store: Any):
        self.store = store
        with store.transaction() as conn:
            for statement in _SCHEMA.strip().split(";\n"):
                conn.execute(statement)

    @staticmethod
    def _load(doc: str) -> SweepRecord:
        return SweepRecord.model_validate_json(doc)

    def create(self, record: SweepRecord) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO sweeps (id, user, state, created_at, doc) VALUES (?, ?, ?, ?, ?)",
                (record.id, record.user, record.state.value, record.created_at, _doc(record)),
            )

    def get(self, sweep_id: str) -> SweepRecord | None:
        row = (
            self.store.connection()
            .execute("SELECT doc FROM sweeps WHERE id = ?", (sweep_id,))
            .fetchone()
        )
        return None if row is None else self._load(row[0])

    def list(self, user: str | None = None) -> list[SweepRecord]:
        sql, args = "SELECT doc FROM sweeps", []
        if user is not None:
            sql, args = sql + " WHERE user = ?", [user]
        rows = self.store.connection().execute(sql + " ORDER BY created_at DESC", args)
        return [self._load(r[0]) for r in rows]

    def active_ids(self) -> list[str]:
        rows = self.store.connection().execute("SELECT id FROM sweeps WHERE state = 'running'")
        return [r[0] for r in rows]

    @contextmanager
    def change(self, sweep_id: str) -> Iterator[SweepRecord | None]:
        with self.store.transaction() as conn:
            row = conn.execute("SELECT doc FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
            record = None if row is None else self._load(row[0])
            yield record
            if record is not None:
                conn.execute(
                    "UPDATE sweeps SET state = ?, doc = ? WHERE id = ?",
                    (record.state.value, _doc(record), sweep_id),
                )


class FileSweeps(SweepRecords):
    """Sweeps as ``<root>/<id>.json``, changed under an exclusive lock on ``<root>/.lock``."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def _read(self, name: str) -> SweepRecord | None:
        try:
            data = confined.read_bytes(self.root, name, limit=MAX_RECORD_BYTES)
        except FileNotFoundError:
            return None
        return SweepRecord.model_validate_json(data)

    def path(self, sweep_id: str) -> Path | None:
        return self.root / f"{sweep_id}.json"

    @property
    def _mode(self) -> int:
        """A record is its owner's where members own their files (the controller acts on it
        as its owner); else as any file of the jobs root."""
        return 0o600 if ownership.guarded(self.root) else 0o644

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        # Read-only is enough to hold the lock, and any member may open the file whoever made it.
        fd = os.open(self.root / ".lock", os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def create(self, record: SweepRecord) -> None:
        with self._locked():
            confined.replace(self.root, f"{record.id}.json", _doc(record).encode(), mode=self._mode)

    def get(self, sweep_id: str) -> SweepRecord | None:
        if "/" in sweep_id or sweep_id.startswith("."):
            return None
        return self._read(f"{sweep_id}.json")

    def _names(self) -> list[str]:
        """The records' file names."""
        if not self.root.is_dir():
            return []
        return [
            name
            for name, is_dir in confined.entries(self.root)
            if not is_dir and name.endswith(".json") and not name.startswith(".")
        ]

    def list(self, user: str | None = None) -> list[SweepRecord]:
        records = []
        for name in self._names():
            with contextlib.suppress(ValueError, OSError):  # a broken file is no sweep
                record = self._read(name)
                if record is not None and (user is None or record.user == user):
                    records.append(record)
        return sorted(records, key=lambda r: r.created_at, reverse=True)

    def active_ids(self) -> list[str]:
        """The running sweeps', and those this process may not read: where members own their
        records only the owner reads whether one runs (the controller reads each as its owner,
        and advances only those that run)."""
        ids = []
        for name in self._names():
            try:
                record = self._read(name)
            except PermissionError:
                ids.append(name[: -len(".json")])
                continue
            except (ValueError, OSError):
                continue  # a broken file is no sweep
            if record is not None and record.state == SweepState.RUNNING:
                ids.append(record.id)
        return sorted(ids)

    @contextmanager
    def change(self, sweep_id: str) -> Iterator[SweepRecord | None]:
        with self._locked():
            record = self.get(sweep_id)
            yield record
            if record is not None:
                confined.replace(
                    self.root, f"{sweep_id}.json", _doc(record).encode(), mode=self._mode
                )


def _doc(record: SweepRecord) -> str:
    return record.model_dump_json()


def sweeps_home(backend: Any) -> Path:
    """The folder of the sweeps in ``backend``'s jobs root: their frozen workspaces, and on a
    cluster their records."""
    return Path(backend.jobs_root) / ".sweeps"


def records_for(backend: Any) -> SweepRecords:
    """Where ``backend`` keeps sweeps: its SQLite store when it has one, else its jobs root."""
    if isinstance(backend, KeepsStore):
        return StoreSweeps(backend.store)
    return FileSweeps(sweeps_home(backend))
