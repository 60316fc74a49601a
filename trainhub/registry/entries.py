"""What the registry stores: one append-only entry per event, never changed afterwards.

A version is an entry (``<name>.v<N>``) made once with its files already in place; an alias
move, an archive or an unarchive is an entry (``<name>.e<N>``) of the model's event log. An
entry is created only where its id is free (:func:`trainhub.jobs.records.Records.create_new`),
so two registrations racing for version N get N and N+1, and nothing overwrites a version or
rewrites the log: aliases and archived flags are read back from the log
(:mod:`trainhub.registry.views`). Kept with the team's other records
(:func:`trainhub.jobs.records.records_for`): a table of the local store, or
``.models/<id>.json`` on a cluster team's volume, readable by the team.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from trainhub.jobs.records import Record

KIND = "models"  # the store's table, and .models/ in the jobs root


class EntryState(StrEnum):
    KEPT = "kept"  # never "running": no reconcile advances an entry


class KeptFiles(BaseModel):
    """A version's files: a folder of the registry's home (``.models/<folder>``)."""

    folder: str
    files: int = Field(ge=0)
    bytes: int = Field(ge=0)
    single: str | None = Field(
        None, description="The one file's name, when the version is one file (load() opens it)"
    )
    linked: int = Field(0, ge=0, description="How many files were hard-linked, not copied")


class SourceOf(BaseModel):
    """Where a version came from."""

    job: str
    attempt: int = 0
    kind: Literal["checkpoint", "output", "outputs"]
    step: int | None = None
    path: str | None = Field(None, description="The output's path inside the job's outputs")


class Entry(Record):
    state: EntryState = EntryState.KEPT
    model: str
    event: Literal["version", "alias", "archive", "unarchive"]
    version: int = Field(ge=0, description="The version made, or the one an event is about")
    # a version's
    source: SourceOf | None = None
    files: KeptFiles | None = None
    lineage: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)
    description: str = ""
    # an alias move's (version: where it points now; 0 where the move removed it)
    alias: str | None = None
    previous: int | None = None
    reason: str = ""


def version_id(name: str, version: int) -> str:
    return f"{name}.v{version}"


def event_id(name: str, number: int) -> str:
    return f"{name}.e{number}"
