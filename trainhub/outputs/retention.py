"""How long a team keeps its jobs' outputs, and what ``trainhub cleanup`` deletes.

A team's policy (``retention:`` of a team in the teams file; locally of ``retention.yaml`` in
the data directory, or ``TRAINHUB_RETENTION_FILE``)::

    retention:
      days: 30              files older than this are deleted
      max_job_size: 20Gi    a job keeps at most this much (its oldest files go first)
      max_team_size: 500Gi  the team's jobs together keep at most this much (oldest first)

Every field is optional; no policy keeps everything. Only ended jobs (succeeded, failed,
cancelled) lose files: a queued, running or otherwise unfinished job's outputs count towards
the team's size and are never touched. :func:`plan` is pure: it takes what lies on disk and
the policies and says what to delete and what stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from trainhub.adminfiles import in_file, load_file, top_level, validated
from trainhub.errors import BackendUnavailable
from trainhub.jobs.quantities import parse_quantity

DAY = 86_400


class Retention(BaseModel):
    """One team's retention policy for job outputs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    days: int | None = Field(None, ge=1, description="Files older than this many days go")
    max_job_size: str | None = Field(None, description="Most one job keeps, e.g. 20Gi")
    max_team_size: str | None = Field(None, description="Most the team's jobs keep together")

    @field_validator("max_job_size", "max_team_size", mode="before")
    @classmethod
    def _size(cls, v: Any) -> str | None:
        if v is None:
            return None
        if isinstance(v, bool):
            raise ValueError(f"{v!r} is not a size such as 512Mi, 20Gi or 2G")
        bytes_ = parse_quantity(v)  # the sentence names what a size looks like
        if bytes_ <= 0:
            raise ValueError("must be more than 0 bytes")
        return str(v)

    @property
    def job_bytes(self) -> int | None:
        return None if self.max_job_size is None else parse_quantity(self.max_job_size)

    @property
    def team_bytes(self) -> int | None:
        return None if self.max_team_size is None else parse_quantity(self.max_team_size)


class RetentionFileError(BackendUnavailable):
    """A refused retention file (the admin's to mend): ``file: field: sentence``."""


_refused = in_file(RetentionFileError)


def parse_retention(data: Any, source: str) -> Retention | None:
    """The policy of a file's ``retention`` mapping; each mistake named by its field."""
    data = top_level(data, source, _refused, ("retention",), "retention: must be a mapping")
    if data is None or data.get("retention") is None:
        return None
    return validated(Retention, data["retention"], _refused, source, "retention")


def load_retention_file(path: Path) -> Retention | None:
    """The local retention file; none there means outputs are kept."""
    return load_file(path, parse_retention, _refused, absent=None)


# --- what to delete (pure) -------------------------------------------------------------------


@dataclass(frozen=True)
class OutputFile:
    path: str  # relative to the job's outputs directory
    bytes: int
    mtime: float


@dataclass(frozen=True)
class JobOutputs:
    job_id: str
    user: str
    team: str | None
    state: str
    ended: bool  # only an ended job loses files
    files: tuple[OutputFile, ...]

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)


@dataclass
class Deletion:
    job_id: str
    path: str
    bytes: int
    mtime: float
    reason: str  # "days", "max_job_size" or "max_team_size"


@dataclass
class Plan:
    deletions: list[Deletion] = field(default_factory=list)

    def freed(self, job_id: str | None = None) -> int:
        return sum(d.bytes for d in self.deletions if job_id in (None, d.job_id))


def team_key(team: str | None) -> str:
    return team or "-"


def plan(jobs: list[JobOutputs], policies: dict[str, Retention | None], *, now: float) -> Plan:
    """What to delete: per ended job, files older than ``days``; then its oldest files while it
    holds more than ``max_job_size``; then, per team, the oldest files of its ended jobs while
    all of its jobs (unfinished ones included) hold more than ``max_team_size``. Ties in age go
    by job and path, so two runs on the same files decide alike."""
    result = Plan()
    kept: dict[str, list[OutputFile]] = {}
    for job in jobs:
        policy = policies.get(team_key(job.team))
        files = sorted(job.files, key=lambda f: (f.mtime, f.path))
        if not job.ended or policy is None:
            kept[job.job_id] = files
            continue
        if policy.days is not None:
            cutoff = now - policy.days * DAY
            old = [f for f in files if f.mtime < cutoff]
            result.deletions += [_deletion(job, f, "days") for f in old]
            files = [f for f in files if f.mtime >= cutoff]
        cap = policy.job_bytes
        total = sum(f.bytes for f in files)
        while cap is not None and files and total > cap:
            oldest = files.pop(0)
            total -= oldest.bytes
            result.deletions.append(_deletion(job, oldest, "max_job_size"))
        kept[job.job_id] = files
    by_team: dict[str, list[JobOutputs]] = {}
    for job in jobs:
        by_team.setdefault(team_key(job.team), []).append(job)
    for team, members in by_team.items():
        policy = policies.get(team)
        cap = policy.team_bytes if policy is not None else None
        if cap is None:
            continue
        total = sum(f.bytes for j in members for f in kept[j.job_id])
        candidates = sorted(
            ((f, j) for j in members if j.ended for f in kept[j.job_id]),
            key=lambda pair: (pair[0].mtime, pair[1].job_id, pair[0].path),
        )
        for f, job in candidates:
            if total <= cap:
                break
            total -= f.bytes
            result.deletions.append(_deletion(job, f, "max_team_size"))
    return result


def _deletion(job: JobOutputs, f: OutputFile, reason: str) -> Deletion:
    return Deletion(job.job_id, f.path, f.bytes, f.mtime, reason)
