"""``trainhub cleanup``: apply each team's retention policy to its jobs' outputs and say how
much space every team and job uses. Deletions go through :mod:`trainhub.jobs.confined` (never
through a link the job left); only ended jobs lose files (:func:`retention.plan`)."""

from __future__ import annotations

import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from trainhub.jobs import confined
from trainhub.jobs.filter import EVERY_JOB
from trainhub.jobs.models import JobRecord
from trainhub.outputs import FOLDER
from trainhub.outputs.retention import JobOutputs, OutputFile, Retention, plan, team_key

PAGE = 500


class JobSpace(BaseModel):
    job_id: str
    user: str
    team: str
    state: str
    files: int = Field(ge=0)
    bytes: int = Field(ge=0, description="Outputs before the cleanup")
    deleted_files: int = Field(ge=0)
    freed: int = Field(ge=0, description="Bytes deleted (or, in a dry run, to delete)")
    kept: int = Field(ge=0, description="Bytes left")


class TeamSpace(BaseModel):
    team: str
    jobs: int = Field(ge=0)
    bytes: int = Field(ge=0)
    freed: int = Field(ge=0)
    kept: int = Field(ge=0)
    policy: Retention | None


class CleanupReport(BaseModel):
    dry_run: bool
    time: float
    teams: list[TeamSpace]
    jobs: list[JobSpace]
    errors: list[str] = Field(default_factory=list, description="Jobs whose outputs were refused")


def job_outputs(record: JobRecord) -> JobOutputs:
    """What lies in one job's outputs, read without following links."""
    files = tuple(
        OutputFile(name, st.st_size, st.st_mtime)
        for name, st in confined.walk(Path(record.job_dir), FOLDER)
        if stat.S_ISREG(st.st_mode)
    )
    return JobOutputs(
        job_id=record.id,
        user=record.user,
        team=record.team,
        state=record.state.value,
        ended=record.state.terminal,
        files=files,
    )


def cleanup(
    records: Iterable[JobRecord],
    policy_of: Callable[[str | None], Retention | None],
    *,
    dry_run: bool,
    now: float | None = None,
) -> CleanupReport:
    now = time.time() if now is None else now
    by_id = {r.id: r for r in records}
    jobs, errors = [], []
    for record in by_id.values():
        try:
            jobs.append(job_outputs(record))
        except (OSError, ValueError) as e:  # outputs/ replaced by a link, say: left alone
            errors.append(f"{record.id}: {e}")
    policies = {team_key(j.team): policy_of(j.team) for j in jobs}
    decided = plan(jobs, policies, now=now)
    freed: dict[str, int] = {}
    deleted: dict[str, int] = {}
    touched: set[str] = set()
    for d in decided.deletions:
        if not dry_run:
            job_dir = Path(by_id[d.job_id].job_dir)
            try:
                confined.unlink(job_dir, f"{FOLDER}/{d.path}")
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as e:
                errors.append(f"{d.job_id}: {e}")
                continue
            touched.add(d.job_id)
        freed[d.job_id] = freed.get(d.job_id, 0) + d.bytes
        deleted[d.job_id] = deleted.get(d.job_id, 0) + 1
    for job_id in touched:
        confined.remove_empty_dirs(Path(by_id[job_id].job_dir), FOLDER)
    rows = [
        JobSpace(
            job_id=j.job_id,
            user=j.user,
            team=team_key(j.team),
            state=j.state,
            files=len(j.files),
            bytes=j.bytes,
            deleted_files=deleted.get(j.job_id, 0),
            freed=freed.get(j.job_id, 0),
            kept=j.bytes - freed.get(j.job_id, 0),
        )
        for j in jobs
    ]
    rows.sort(key=lambda r: (r.team, -r.bytes, r.job_id))
    teams = []
    for team in sorted(policies):
        members = [r for r in rows if r.team == team]
        teams.append(
            TeamSpace(
                team=team,
                jobs=len(members),
                bytes=sum(r.bytes for r in members),
                freed=sum(r.freed for r in members),
                kept=sum(r.kept for r in members),
                policy=policies[team],
            )
        )
    return CleanupReport(dry_run=dry_run, time=now, teams=teams, jobs=rows, errors=errors)


def all_records(backend: object) -> list[JobRecord]:
    """Every job the backend holds (every user's), page by page."""
    records: list[JobRecord] = []
    before = None
    while True:
        page = backend.list_jobs(EVERY_JOB, limit=PAGE, before_seq=before)  # type: ignore[attr-defined]
        records += page
        if len(page) < PAGE:
            return records
        before = page[-1].seq


def size_text(n: int) -> str:
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n}B"


def _policy_text(p: Retention | None) -> str:
    if p is None:
        return "keep everything"
    parts = [
        f"{p.days}d" if p.days else "",
        f"job {p.max_job_size}" if p.max_job_size else "",
        f"team {p.max_team_size}" if p.max_team_size else "",
    ]
    return ", ".join(x for x in parts if x) or "keep everything"


def _columns(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def table(report: CleanupReport) -> str:
    """Teams, then jobs: used, freed (or to free, in a dry run) and kept."""
    verb = "TO FREE" if report.dry_run else "FREED"
    teams = [("TEAM", "JOBS", "USED", verb, "KEPT", "POLICY")]
    teams += [
        (
            t.team,
            str(t.jobs),
            size_text(t.bytes),
            size_text(t.freed),
            size_text(t.kept),
            _policy_text(t.policy),
        )
        for t in report.teams
    ]
    jobs = [("JOB", "TEAM", "USER", "STATE", "FILES", "USED", verb, "KEPT")]
    jobs += [
        (
            j.job_id,
            j.team,
            j.user,
            j.state,
            str(j.files),
            size_text(j.bytes),
            size_text(j.freed),
            size_text(j.kept),
        )
        for j in report.jobs
    ]
    out = [_columns(teams), "", _columns(jobs)]
    if report.dry_run:
        out.append("\ndry run: nothing was deleted")
    out += [f"refused: {e}" for e in report.errors]
    return "\n".join(out)
