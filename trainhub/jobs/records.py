"""Durable records of what drives many jobs on every reconcile (a sweep, a pipeline run), and
the claims that keep two reconciles from submitting one job twice.

Two homes, one interface: the local backend keeps them in its SQLite store (a table beside
the jobs); a cluster keeps them as small JSON files in the team's jobs root
(``.<kind>/<id>.json``), read without following links (the volume is writable by jobs). Every
change is a read-modify-write under an exclusive lock, so two reconciles (the CLI's and the
server's, or two controller workers) never act on one record at once.

A record is a :class:`Record`: its kind adds ``state``, a str Enum whose value ``running``
means it may still act.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from trainhub.backends.capabilities import KeepsStore, TouchesAsOwner
from trainhub.jobs import confined, ownership
from trainhub.jobs.claims import CLAIM_SECONDS as CLAIM_SECONDS  # re-exported: a claim's age
from trainhub.jobs.claims import settle

log = logging.getLogger(__name__)

MAX_RECORD_BYTES = 4 * 2**20
RUNNING = "running"  # the state value of a record that may still act


class Record(BaseModel):
    """What every kind of record has: its id, its user, when it was made, and its state (each
    kind's own str Enum)."""

    id: str
    user: str
    created_at: float
    state: Any


R = TypeVar("R", bound=Record)


class Records(ABC, Generic[R]):
    @abstractmethod
    def create(self, record: R) -> None: ...

    @abstractmethod
    def create_new(self, record: R) -> bool:
        """Create the record only where its id is free; False (nothing written) where one is
        there: what keeps an append-only kind (the model registry's entries) append-only."""

    @abstractmethod
    def get(self, record_id: str) -> R | None: ...

    @abstractmethod
    def list(self, user: str | None = None) -> list[R]:
        """Newest first."""

    @abstractmethod
    @contextmanager
    def change(self, record_id: str) -> Iterator[R | None]:
        """The record, held exclusively; what the block leaves in it is saved."""

    @abstractmethod
    def active_ids(self) -> list[str]:
        """The records that may still be running (each advance looks again)."""

    @abstractmethod
    def delete(self, record_id: str) -> None:
        """Remove the record (a schedule deleted; sweeps and runs keep theirs)."""

    def path(self, record_id: str) -> Path | None:
        """The file that keeps the record, where one does (its owner is the record's)."""
        return None


class StoreRecords(Records[R]):
    """Records in a table of the local backend's SQLite store (its ``transaction()`` and
    ``connection()``)."""

    def __init__(self, store: Any, table: str, model: type[R]):
        self.store, self.table, self.model = store, table, model
        with store.transaction() as conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY, user TEXT NOT NULL,"
                " state TEXT NOT NULL, created_at REAL NOT NULL, doc TEXT NOT NULL)"
            )
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS {table}_by_user ON {table} (user, created_at DESC)"
            )

    def _load(self, doc: str) -> R:
        return self.model.model_validate_json(doc)

    def create(self, record: R) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                f"INSERT INTO {self.table} (id, user, state, created_at, doc)"
                " VALUES (?, ?, ?, ?, ?)",
                (record.id, record.user, _state(record), record.created_at, _doc(record)),
            )

    def create_new(self, record: R) -> bool:
        try:
            self.create(record)
        except sqlite3.IntegrityError:  # the primary key is taken
            return False
        return True

    def get(self, record_id: str) -> R | None:
        row = (
            self.store.connection()
            .execute(f"SELECT doc FROM {self.table} WHERE id = ?", (record_id,))
            .fetchone()
        )
        return None if row is None else self._load(row[0])

    def list(self, user: str | None = None) -> list[R]:
        sql, args = f"SELECT doc FROM {self.table}", []
        if user is not None:
            sql, args = sql + " WHERE user = ?", [user]
        rows = self.store.connection().execute(sql + " ORDER BY created_at DESC", args)
        return [self._load(r[0]) for r in rows]

    def active_ids(self) -> list[str]:
        rows = self.store.connection().execute(
            f"SELECT id FROM {self.table} WHERE state = ?", (RUNNING,)
        )
        return [r[0] for r in rows]

    @contextmanager
    def change(self, record_id: str) -> Iterator[R | None]:
        with self.store.transaction() as conn:
            row = conn.execute(
                f"SELECT doc FROM {self.table} WHERE id = ?", (record_id,)
            ).fetchone()
            record = None if row is None else self._load(row[0])
            yield record
            if record is not None:
                conn.execute(
                    f"UPDATE {self.table} SET state = ?, doc = ? WHERE id = ?",
                    (_state(record), _doc(record), record_id),
                )

    def delete(self, record_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute(f"DELETE FROM {self.table} WHERE id = ?", (record_id,))


class FileRecords(Records[R]):
    """Records as ``<root>/<id>.json``, changed under an exclusive lock on ``<root>/.lock``."""

    def __init__(
        self, root: Path, model: type[R], *, team_readable: bool | Callable[[R], bool] = False
    ):
        self.root = Path(root)
        self.model = model
        # Every record (the model registry), or those it says (a comment on a shared job).
        self.team_readable = team_readable

    def _read(self, name: str) -> R | None:
        try:
            data = confined.read_bytes(self.root, name, limit=MAX_RECORD_BYTES)
        except FileNotFoundError:
            return None
        return self.model.model_validate_json(data)

    def path(self, record_id: str) -> Path | None:
        return self.root / f"{record_id}.json"

    def _mode(self, record: R) -> int:
        """A record is its owner's where members own their files (the controller acts on it
        as its owner), unless the team reads it; else as any file of the jobs root."""
        readable = self.team_readable
        if callable(readable):
            readable = readable(record)
        private = ownership.guarded(self.root) and not readable
        return 0o600 if private else 0o644

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

    def create(self, record: R) -> None:
        with self._locked():
            confined.replace(
                self.root, f"{record.id}.json", _doc(record).encode(), mode=self._mode(record)
            )

    def create_new(self, record: R) -> bool:
        with self._locked():
            if os.path.lexists(self.root / f"{record.id}.json"):
                return False
            confined.replace(
                self.root, f"{record.id}.json", _doc(record).encode(), mode=self._mode(record)
            )
        return True

    def get(self, record_id: str) -> R | None:
        if "/" in record_id or record_id.startswith("."):
            return None
        return self._read(f"{record_id}.json")

    def _names(self) -> list[str]:
        """The records' file names."""
        if not self.root.is_dir():
            return []
        return [
            name
            for name, is_dir in confined.entries(self.root)
            if not is_dir and name.endswith(".json") and not name.startswith(".")
        ]

    def list(self, user: str | None = None) -> list[R]:
        records = []
        for name in self._names():
            with contextlib.suppress(ValueError, OSError):  # a broken file is no record
                record = self._read(name)
                if record is not None and (user is None or record.user == user):
                    records.append(record)
        return sorted(records, key=lambda r: r.created_at, reverse=True)

    def active_ids(self) -> list[str]:
        """The running records', and those this process may not read: where members own their
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
                continue  # a broken file is no record
            if record is not None and _state(record) == RUNNING:
                ids.append(record.id)
        return sorted(ids)

    @contextmanager
    def change(self, record_id: str) -> Iterator[R | None]:
        with self._locked():
            record = self.get(record_id)
            yield record
            if record is not None:
                confined.replace(
                    self.root, f"{record_id}.json", _doc(record).encode(), mode=self._mode(record)
                )

    def delete(self, record_id: str) -> None:
        if "/" in record_id or record_id.startswith("."):
            return
        with self._locked(), contextlib.suppress(FileNotFoundError):
            confined.unlink(self.root, f"{record_id}.json")


def _doc(record: Record) -> str:
    return record.model_dump_json()


def _state(record: Record) -> str:
    return str(record.state)


def records_home(backend: Any, kind: str) -> Path:
    """The folder of one kind of record in ``backend``'s jobs root (``.sweeps``,
    ``.pipelines``): their frozen workspaces, and on a cluster the records themselves."""
    return Path(backend.jobs_root) / f".{kind}"


def records_for(
    backend: Any,
    kind: str,
    model: type[R],
    *,
    team_readable: bool | Callable[[R], bool] = False,
) -> Records[R]:
    """Where ``backend`` keeps records of ``kind``: a table of its SQLite store when it has
    one, else files in its jobs root (``team_readable``: readable by every member even where
    members own their files, as the team's model registry is; or those records it says)."""
    if isinstance(backend, KeepsStore):
        return StoreRecords(backend.store, kind, model)
    return FileRecords(records_home(backend, kind), model, team_readable=team_readable)


# --- claims ----------------------------------------------------------------------------------

GAVE_UP = "its submit did not finish (the process submitting it ended)"


class Claim(Protocol):
    """One job a record claimed under its lock before submitting it outside the lock."""

    job_id: str | None
    error: str | None
    claimed_at: float | None


C = TypeVar("C", bound=Claim)


def repair_claims(
    claims: Iterable[C], key: Callable[[C], Any], submitted: Mapping[Any, str]
) -> None:
    """Claims whose submitter died before noting the job: the job, found by the claim's
    ``key`` in ``submitted`` (key -> job id, read from the jobs' specs); none once the claim
    is stale (trainhub.jobs.claims: its submitter gone, or silent past its CLAIM_SECONDS): an
    error saying so."""
    now = time.time()
    for claim in claims:
        if claim.job_id is not None or claim.error is not None:
            continue
        by = getattr(claim, "claimed_by", None)  # a claim that names no process: by its age
        settled = settle(claim.claimed_at, by, now, functools.partial(submitted.get, key(claim)))
        if settled.job_id is not None:
            claim.job_id = settled.job_id
        elif settled.stale:
            claim.error = GAVE_UP


def as_owner(
    backend: Any, path: Path | None, user: str | None = None
) -> contextlib.AbstractContextManager[None]:
    """Touch a record's file as its owner (``user`` where given), where the backend keeps
    several members' files (the cluster's controller); a record with no file of its own, or a
    process of one member's, needs nothing."""
    if path is None or not isinstance(backend, TouchesAsOwner):
        return contextlib.nullcontext()
    return backend.as_owner(path, user)


def advance_running(
    backend: Any, records: Records[Any], advance: Callable[[str], object], kind: str
) -> None:
    """One step (``advance``) of every running record, each as its owner where the backend
    keeps several members' files (the cluster's controller: the record and what it submits are
    its owner's, and a record in another member's name is left); one record's trouble never
    stops the others. ``kind`` names the records in the log ("sweep", "pipeline run")."""
    for record_id in records.active_ids():
        path = records.path(record_id)
        try:
            with as_owner(backend, path):
                record = records.get(record_id)
                if record is None or _state(record) != RUNNING:
                    continue
                with as_owner(backend, path, record.user):
                    advance(record_id)
        except Exception:
            log.exception("trainhub: %s %s could not advance", kind, record_id)
