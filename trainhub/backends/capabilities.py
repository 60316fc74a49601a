"""What a backend may do beyond :class:`~trainhub.backends.base.Backend`: one
:class:`typing.Protocol` per ability, and whoever needs one asks ``isinstance(backend, Ability)``
where it is used (Kueue's job integrations are built so: a small required interface, optional
interfaces beside it). A backend has an ability by having its methods; nothing registers it.

These are what code calls. What a person is offered is :class:`~trainhub.backends.base.Feature`,
the list the REST config document gives the UI.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from trainhub.backends.local.admission import Capacity
    from trainhub.jobs.models import JobRecord


@runtime_checkable
class Pools(Protocol):
    """Runs jobs in pools of nodes (a cluster team's), one chosen per job."""

    def pool_for(self, record: JobRecord) -> str:
        """The pool the job runs in, chosen once by the submit walk; :class:`OverQuota` when
        no pool could hold one of its workers."""
        ...


@runtime_checkable
class MountsDatasets(Protocol):
    """Mounts data of its own beside the workspace and the admin's dataset roots."""

    def dataset_roots(self) -> list[Path]:
        """Where this process sees that data (a cluster team's shared volume and datasets)."""
        ...


@runtime_checkable
class WatchFedReads(Protocol):
    """Can answer its reads from a watch-fed cache instead of asking each time."""

    def watch_reads(self) -> None:
        """Start the cache; a long-running server calls it once, off its event loop."""
        ...


@runtime_checkable
class TouchesAsOwner(Protocol):
    """May keep several members' files in one process (the cluster's controller)."""

    def as_owner(self, path: Path, user: str | None = None) -> AbstractContextManager[None]:
        """Within it, ``path`` (a job directory, a sweep's record) is touched as its owner, who
        must be ``user`` where given; nothing where the process is one member's."""
        ...


@runtime_checkable
class OneMachine(Protocol):
    """Runs jobs on this machine, admitting them itself within its GPUs and CPU slots."""

    def capacity(self) -> Capacity:
        """The machine's GPUs and CPU slots (the submit dialog's limits come from them)."""
        ...

    def slots(self) -> int:
        """The machine's CPU slots, one value for every process."""
        ...

    def set_slots(self, slots: int) -> None: ...


class SQLiteStore(Protocol):
    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """An exclusive write transaction."""
        ...

    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection, for tables kept beside the jobs."""
        ...


@runtime_checkable
class KeepsStore(Protocol):
    """Keeps its jobs in a SQLite store of its own, where sweeps are kept beside them."""

    store: SQLiteStore
