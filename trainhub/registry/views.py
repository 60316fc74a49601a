"""The registry read back from its entries (pure): each model's versions with their metrics
and lineage, where each alias points, which versions are archived, and the audit log."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field

from trainhub.registry.entries import Entry, KeptFiles, SourceOf
from trainhub.registry.refs import Ref


class VersionView(BaseModel):
    model: str
    version: int
    user: str
    created_at: float
    description: str = ""
    source: SourceOf
    files: KeptFiles
    metrics: dict[str, float] = Field(default_factory=dict)
    lineage: dict[str, Any] = Field(default_factory=dict)
    archived: bool = False
    aliases: list[str] = Field(default_factory=list)
    load: str = Field(description="The line that loads it: trainhub.models.load('NAME/N')")


class AuditEntry(BaseModel):
    """One event of a model, oldest first: registered, alias moved, archived, unarchived."""

    time: float
    user: str
    event: Literal["version", "alias", "archive", "unarchive"]
    version: int = Field(description="The version registered or archived, or the alias's new one")
    alias: str | None = None
    previous: int | None = Field(None, description="Where the alias pointed before (null: nowhere)")
    reason: str = ""


class ModelView(BaseModel):
    name: str
    versions: list[VersionView] = Field(description="Newest first")
    aliases: dict[str, int] = Field(description="Alias -> version")
    latest: int | None = Field(description="The newest version not archived")
    audit: list[AuditEntry] = Field(description="Oldest first")
    metric_names: list[str] = Field(description="Every metric of its versions, for a table")


class ModelSummary(BaseModel):
    name: str
    versions: int
    latest: int | None
    aliases: dict[str, int]
    updated_at: float
    user: str = Field(description="Who registered its newest version")


class ModelList(BaseModel):
    models: list[ModelSummary]


def _ordered(entries: Iterable[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.created_at, e.id))


def state_of(entries: Iterable[Entry]) -> tuple[dict[str, int], set[int]]:
    """(alias -> version, archived versions) after every event so far."""
    aliases: dict[str, int] = {}
    archived: set[int] = set()
    for e in _ordered(entries):
        if e.event == "alias" and e.alias:
            if e.version:
                aliases[e.alias] = e.version
            else:
                aliases.pop(e.alias, None)
        elif e.event == "archive":
            archived.add(e.version)
        elif e.event == "unarchive":
            archived.discard(e.version)
    return dict(sorted(aliases.items())), archived


def version_view(entry: Entry, aliases: dict[str, int], archived: set[int]) -> VersionView:
    assert entry.source is not None and entry.files is not None
    return VersionView(
        model=entry.model,
        version=entry.version,
        user=entry.user,
        created_at=entry.created_at,
        description=entry.description,
        source=entry.source,
        files=entry.files,
        metrics=entry.metrics,
        lineage=entry.lineage,
        archived=entry.version in archived,
        aliases=[a for a, v in aliases.items() if v == entry.version],
        load=f"trainhub.models.load({f'{entry.model}/{entry.version}'!r})",
    )


def model_view(name: str, entries: Iterable[Entry]) -> ModelView:
    own = [e for e in entries if e.model == name]
    aliases, archived = state_of(own)
    versions = sorted(
        (version_view(e, aliases, archived) for e in own if e.event == "version"),
        key=lambda v: v.version,
        reverse=True,
    )
    audit = [
        AuditEntry(
            time=e.created_at,
            user=e.user,
            event=e.event,
            version=e.version,
            alias=e.alias,
            previous=e.previous,
            reason=e.reason,
        )
        for e in _ordered(own)
    ]
    names = sorted({m for v in versions for m in v.metrics})
    latest = next((v.version for v in versions if not v.archived), None)
    return ModelView(
        name=name,
        versions=versions,
        aliases=aliases,
        latest=latest,
        audit=audit,
        metric_names=names,
    )


def model_list(entries: Iterable[Entry]) -> ModelList:
    by_name: dict[str, list[Entry]] = {}
    for e in entries:
        by_name.setdefault(e.model, []).append(e)
    summaries = []
    for name, own in by_name.items():
        view = model_view(name, own)
        if not view.versions:
            continue
        summaries.append(
            ModelSummary(
                name=name,
                versions=len(view.versions),
                latest=view.latest,
                aliases=view.aliases,
                updated_at=max(e.created_at for e in own),
                user=view.versions[0].user,
            )
        )
    return ModelList(models=sorted(summaries, key=lambda s: s.updated_at, reverse=True))


def pick(view: ModelView, ref: Ref) -> VersionView | None:
    """The version ``ref`` names in ``view``; None where there is none. ``NAME`` alone is the
    newest version not archived; a number or an alias reaches an archived one too."""
    if ref.alias is not None:
        wanted = view.aliases.get(ref.alias)
    elif ref.version is not None:
        wanted = ref.version
    else:
        wanted = view.latest
    return next((v for v in view.versions if v.version == wanted), None)
