"""Small durable documents of a team's control plane (a sweep, a schedule), changed under a
lock: a read-modify-write by one process at a time, so two of them (the CLI's and the
server's, or a scheduler's) never act on the same state twice.

Two homes, one interface: the local backend keeps them in its SQLite store (one table per
kind beside the jobs); a cluster keeps them as small JSON files in the team's jobs root
(``.sweeps/<id>.json``, ``.schedules/<id>.json``), read without following links (the volume
is writable by jobs) and changed under ``flock``.

A document is a pydantic model with ``id``, ``user``, ``created_at`` and a ``state`` (a
string) that the store indexes.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import os
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from trainhub.backends.capabilities import KeepsStore, TouchesAsOwner
from trainhub.jobs import confined, ownership

MAX_DOCUMENT_BYTES = 4 * 2**20

T = TypeVar("T", bound=BaseModel)


class Documents(ABC, Generic[T]):
    @abstractmethod
    def create(self, doc: T) -> None: ...

    @abstractmethod
    def get(self, doc_id: str) -> T | None: ...

    @abstractmethod
    def list(self, user: str | None = None) -> list[T]:
        """Newest first."""

    @abstractmethod
    @contextmanager
    def change(self, doc_id: str) -> Iterator[T | None]:
        """The document, held exclusively; what the block leaves in it is saved."""

    @abstractmethod
    def delete(self, doc_id: str) -> None: ...

    @abstractmethod
    def ids(self, states: Collection[str] | None = None) -> builtins.list[str]:
        """The documents in one of ``states`` (all when None), and those this process may not
        read: where members own their files only the owner reads what state one is in (the
        cluster's controller reads each as its owner, and looks again)."""

    def path(self, doc_id: str) -> Path | None:
        """The file that keeps the document, where one does (its owner is the document's)."""
        return None


def _state(doc: BaseModel) -> str:
    return str(doc.state)  # type: ignore[attr-defined]


class StoreDocuments(Documents[T]):
    """Documents in the local backend's SQLite store (its ``transaction()`` and
    ``connection()``), one table per kind."""

    def __init__(self, store: Any, table: str, model: type[T]):
        self.store, self.table, self.model = store, table, model
        with store.transaction() as conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY, user TEXT NOT NULL, "
                "state TEXT NOT NULL, created_at REAL NOT NULL, doc TEXT NOT NULL)"
            )
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS {table}_by_user ON {table} (user, created_at DESC)"
            )

    def create(self, doc: T) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                f"INSERT INTO {self.table} (id, user, state, created_at, doc) "
                "VALUES (?, ?, ?, ?, ?)",
                (doc.id, doc.user, _state(doc), doc.created_at, doc.model_dump_json()),  # type: ignore[attr-defined]
            )

    def get(self, doc_id: str) -> T | None:
        row = (
            self.store.connection()
            .execute(f"SELECT doc FROM {self.table} WHERE id = ?", (doc_id,))
            .fetchone()
        )
        return None if row is None else self.model.model_validate_json(row[0])

    def list(self, user: str | None = None) -> list[T]:
        sql, args = f"SELECT doc FROM {self.table}", []
        if user is not None:
            sql, args = sql + " WHERE user = ?", [user]
        rows = self.store.connection().execute(sql + " ORDER BY created_at DESC", args)
        return [self.model.model_validate_json(r[0]) for r in rows]

    def ids(self, states: Collection[str] | None = None) -> builtins.list[str]:
        rows = self.store.connection().execute(f"SELECT id, state FROM {self.table} ORDER BY id")
        return [r[0] for r in rows if states is None or r[1] in states]

    @contextmanager
    def change(self, doc_id: str) -> Iterator[T | None]:
        with self.store.transaction() as conn:
            row = conn.execute(f"SELECT doc FROM {self.table} WHERE id = ?", (doc_id,)).fetchone()
            doc = None if row is None else self.model.model_validate_json(row[0])
            yield doc
            if doc is not None:
                conn.execute(
                    f"UPDATE {self.table} SET state = ?, doc = ? WHERE id = ?",
                    (_state(doc), doc.model_dump_json(), doc_id),
                )

    def delete(self, doc_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute(f"DELETE FROM {self.table} WHERE id = ?", (doc_id,))


class FileDocuments(Documents[T]):
    """Documents as ``<root>/<id>.json``, changed under an exclusive lock on ``<root>/.lock``."""

    def __init__(self, root: Path, model: type[T]):
        self.root, self.model = Path(root), model

    def _read(self, name: str) -> T | None:
        try:
            data = confined.read_bytes(self.root, name, limit=MAX_DOCUMENT_BYTES)
        except FileNotFoundError:
            return None
        return self.model.model_validate_json(data)

    def path(self, doc_id: str) -> Path | None:
        return self.root / f"{doc_id}.json"

    @property
    def _mode(self) -> int:
        """A document is its owner's where members own their files (the controller acts on it
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

    def _write(self, doc: T) -> None:
        data = doc.model_dump_json().encode()
        confined.replace(self.root, f"{doc.id}.json", data, mode=self._mode)  # type: ignore[attr-defined]

    def create(self, doc: T) -> None:
        with self._locked():
            self._write(doc)

    def get(self, doc_id: str) -> T | None:
        if "/" in doc_id or doc_id.startswith("."):
            return None
        return self._read(f"{doc_id}.json")

    def _names(self) -> builtins.list[str]:
        if not self.root.is_dir():
            return []
        return [
            name
            for name, is_dir in confined.entries(self.root)
            if not is_dir and name.endswith(".json") and not name.startswith(".")
        ]

    def list(self, user: str | None = None) -> list[T]:
        docs = []
        for name in self._names():
            with contextlib.suppress(ValueError, OSError):  # a broken file is no document
                doc = self._read(name)
                if doc is not None and (user is None or doc.user == user):  # type: ignore[attr-defined]
                    docs.append(doc)
        return sorted(docs, key=lambda d: d.created_at, reverse=True)  # type: ignore[attr-defined]

    def ids(self, states: Collection[str] | None = None) -> builtins.list[str]:
        ids = []
        for name in self._names():
            try:
                doc = self._read(name)
            except PermissionError:
                ids.append(name[: -len(".json")])
                continue
            except (ValueError, OSError):
                continue  # a broken file is no document
            if doc is not None and (states is None or _state(doc) in states):
                ids.append(doc.id)  # type: ignore[attr-defined]
        return sorted(ids)

    @contextmanager
    def change(self, doc_id: str) -> Iterator[T | None]:
        with self._locked():
            doc = self.get(doc_id)
            yield doc
            if doc is not None:
                self._write(doc)

    def delete(self, doc_id: str) -> None:
        with self._locked(), contextlib.suppress(FileNotFoundError):
            confined.unlink(self.root, f"{doc_id}.json")


def documents_for(backend: Any, table: str, model: type[T], home: Path) -> Documents[T]:
    """Where ``backend`` keeps documents of one kind: its SQLite store when it has one (table
    ``table``), else files in ``home`` under its jobs root."""
    if isinstance(backend, KeepsStore):
        return StoreDocuments(backend.store, table, model)
    return FileDocuments(home, model)


def as_owner(
    backend: Any, path: Path | None, user: str | None = None
) -> contextlib.AbstractContextManager[None]:
    """Touch a document's file as its owner (``user`` where given), where the backend keeps
    several members' files (the cluster's controller acts on each as its owner); a document
    with no file of its own, or a process of one member's, needs nothing."""
    if path is None or not isinstance(backend, TouchesAsOwner):
        return contextlib.nullcontext()
    return backend.as_owner(path, user)
