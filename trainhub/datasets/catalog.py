"""Datasets by name: the one schema of a declared dataset, who may read it, and how a job's
named datasets become paths before anything starts.

The same entry is written in two places: under a team in the admin's ``teams.yaml`` (a
cluster), and in the local datasets file of the embedded default (``$TRAINHUB_HOME/
datasets.yaml``, or ``TRAINHUB_DATASETS_FILE``: :func:`trainhub.settings.datasets_file`)::

    datasets:
      imagenet:
        path: /data/imagenet          # or: claim: imagenet, sub_path: ILSVRC2012
        description: ILSVRC2012 train and val
        owner: vision-data@example.org
        teams: [vision]               # who may read it (locally: none listed = everyone here)
        content_hash: false           # lineage hashes the contents too (bounded)

Control plane only (pydantic): a rank reads its datasets with :mod:`trainhub.datasets`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainhub.adminfiles import in_file, load_file, validated
from trainhub.errors import BackendUnavailable
from trainhub.jobs.spec import JobSpec, field_error
from trainhub.jobs.specparts import DATASET_NAME, Dataset

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
MOUNT_ROOT = PurePosixPath("/datasets")  # where a cluster's pods see each dataset by name


class DatasetEntry(BaseModel):
    """One declared dataset: where it comes from, who may read it, what lineage records."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    claim: str | None = Field(
        None, pattern=_DNS_LABEL, max_length=253, description="PersistentVolumeClaim (cluster)"
    )
    sub_path: str | None = Field(None, description="Directory inside the claim")
    path: str | None = Field(
        None,
        description="Absolute path: below the team's shared volume (cluster) or below a dataset "
        "root (TRAINHUB_DATASET_ROOTS, local)",
    )
    read_only: bool = True
    description: str = ""
    owner: str = Field("", description="Who answers for it, e.g. a person or a list")
    teams: list[str] = Field(
        default_factory=list,
        description="Teams that may read it: besides the declaring team in teams.yaml; "
        "locally, none listed means everyone on the machine",
    )
    content_hash: bool = Field(
        False, description="Lineage also hashes the contents (streamed, bounded)"
    )

    @model_validator(mode="after")
    def _one_source(self) -> DatasetEntry:
        if (self.claim is None) == (self.path is None):
            raise ValueError("give either 'claim' (with an optional 'sub_path') or 'path'")
        if self.path is not None and self.sub_path is not None:
            raise ValueError("'sub_path' goes with 'claim', not with 'path'")
        for value in (self.sub_path, self.path):
            if value is not None and ".." in PurePosixPath(value).parts:
                raise ValueError(f"{value!r} must not contain '..'")
        if self.sub_path is not None and PurePosixPath(self.sub_path).is_absolute():
            raise ValueError(f"sub_path {self.sub_path!r} is a directory inside the claim")
        if self.path is not None and not PurePosixPath(self.path).is_absolute():
            raise ValueError(f"path {self.path!r} must be absolute")
        if not self.read_only:
            raise ValueError("datasets are mounted read-only; write results to the job directory")
        return self

    @field_validator("teams")
    @classmethod
    def _team_names(cls, v: list[str]) -> list[str]:
        for name in v:
            if not re.match(_DNS_LABEL, name):
                raise ValueError(f"{name!r} is not a team name")
        return v


def check_names(names: Iterable[str]) -> None:
    for name in names:
        if not re.match(DATASET_NAME, name):
            raise ValueError(f"dataset name {name!r}: use lower-case letters, digits, '-' and '_'")


class DatasetInfo(BaseModel):
    """A dataset the user's team may read, as the submit dialog and ``trainhub datasets``
    show it."""

    name: str
    description: str
    read_only: bool
    owner: str
    team: str | None = Field(None, description="The team that declared it (cluster)")
    path: str = Field(description="Where a job's ranks find it")


class DatasetList(BaseModel):
    datasets: list[DatasetInfo]


@dataclass(frozen=True)
class Readable:
    """A dataset a team may read, as one backend offers it."""

    name: str
    entry: DatasetEntry
    rank_path: str  # where the job's ranks find it
    view_path: str | None  # where the submitting side sees it (to fingerprint it); None: not here
    team: str | None = None  # the declaring team (cluster)


class Catalog:
    """The datasets one user's team may read, and the resolution of a spec's named datasets."""

    def __init__(self, readable: Iterable[Readable] = (), *, team: str | None = None):
        self.readable = {r.name: r for r in readable}
        self.team = team

    def infos(self) -> list[DatasetInfo]:
        return [
            DatasetInfo(
                name=r.name,
                description=r.entry.description,
                read_only=r.entry.read_only,
                owner=r.entry.owner,
                team=r.team,
                path=r.rank_path,
            )
            for r in sorted(self.readable.values(), key=lambda r: r.name)
        ]

    def refusal(self, name: str) -> str:
        """The same sentence for an unknown name and another team's dataset."""
        who = f"team {self.team}" if self.team else "you"
        offered = ", ".join(sorted(self.readable)) or "none"
        return f"no dataset {name!r} that {who} may read ({who} may read: {offered})"

    def resolve(self, spec: JobSpec) -> tuple[JobSpec, dict[str, Readable]]:
        """``spec`` with each dataset asked for by name given the path its ranks find it at,
        and those datasets; a name this team may not read is refused naming those it may."""
        found: dict[str, Readable] = {}
        datasets: list[Dataset] = []
        for i, ds in enumerate(spec.datasets):
            if ds.path is not None and not ds.catalog:
                datasets.append(ds)  # a path of the user's own, confined like any other
                continue
            readable = self.readable.get(ds.name)
            if readable is None:
                raise field_error(f"datasets.{i}.name", self.refusal(ds.name))
            found[ds.name] = readable
            datasets.append(Dataset(name=ds.name, path=readable.rank_path, catalog=True))
        return spec.model_copy(update={"datasets": datasets}), found


# --- the local datasets file --------------------------------------------------------------------


class DatasetsFileError(BackendUnavailable):
    """A refused datasets file (the admin's to mend): ``file: field: sentence``."""


_refused = in_file(DatasetsFileError)


def parse_entries(data: Any, source: str) -> dict[str, DatasetEntry]:
    """``{name: entry}`` from a file's ``datasets`` mapping, each mistake named by its field."""
    if data is None:
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("datasets", {}), dict):
        raise DatasetsFileError(f"{source}: datasets: must be a mapping of name to dataset")
    entries: dict[str, DatasetEntry] = {}
    for name, value in (data.get("datasets") or {}).items():
        try:
            check_names([str(name)])
        except ValueError as e:
            raise DatasetsFileError(f"{source}: datasets.{name}: {e}") from None
        entries[str(name)] = validated(
            DatasetEntry, value or {}, _refused, source, "datasets", str(name)
        )
    unknown = [k for k in data if k != "datasets"]
    if unknown:
        raise DatasetsFileError(f"{source}: {unknown[0]}: is not a known field")
    return entries


def load_datasets_file(path: Path) -> dict[str, DatasetEntry]:
    """The local datasets file; none there means no datasets by name."""
    return load_file(path, parse_entries, _refused, absent={})


def local_catalog(
    entries: Mapping[str, DatasetEntry], *, team: str | None, roots: Sequence[Path], source: str
) -> Catalog:
    """The local backend's datasets: each a path below a dataset root, read where it lies.

    A dataset that lists teams is offered to those teams alone (``TRAINHUB_TEAM`` says whose
    this installation is); one that lists none to everyone on the machine."""
    readable = []
    for name, entry in entries.items():
        if entry.path is None:
            raise DatasetsFileError(
                f"{source}: datasets.{name}.claim: a claim is mounted on a cluster; the local "
                "backend reads a path"
            )
        real = Path(os.path.realpath(entry.path))
        if not any(real == root or real.is_relative_to(root) for root in roots):
            raise DatasetsFileError(
                f"{source}: datasets.{name}.path: {entry.path} is not below a dataset root "
                "(TRAINHUB_DATASET_ROOTS)"
            )
        if entry.teams and team not in entry.teams:
            continue
        readable.append(Readable(name, entry, rank_path=str(real), view_path=str(real)))
    return Catalog(readable, team=team)


def mount_path(name: str) -> str:
    return str(MOUNT_ROOT / name)
