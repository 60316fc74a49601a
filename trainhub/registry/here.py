"""The registry as the calling process reaches it, and what a job notes of the models it
loads.

In a notebook, a terminal or the server: the job service's (``JobService.registry``), the
team's of its backend. Inside a job's rank, which has no backend: the registry beside its job
directory (``TRAINHUB_JOB_DIR``) — the local store of the data directory the jobs root lies
in, or ``.models`` on the team's volume — so a job registers its own output and loads a
version by name. A version loaded inside a job is noted in ``models.jsonl`` of its directory,
which the job's lineage shows as its inputs (``lineage.models``).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainhub.jobs import confined
from trainhub.jobs.directory import MODEL_INPUTS, JobDir, _jsonl_line
from trainhub.jobs.records import FileRecords, StoreRecords
from trainhub.registry.entries import KIND, Entry
from trainhub.registry.policy import ModelPolicy, load_models_file
from trainhub.registry.refs import Source, parse_source
from trainhub.registry.service import Registry
from trainhub.registry.snapshot import JobFacts
from trainhub.registry.views import VersionView

if TYPE_CHECKING:
    from trainhub.jobs.service import JobService

DATABASE = "trainhub.db"  # trainhub.settings.database's name, beside the jobs root locally


def job_dir() -> Path | None:
    """Inside a job's rank, its directory; None elsewhere."""
    value = os.environ.get("TRAINHUB_JOB_DIR")
    return Path(value) if value else None


def this_job() -> JobFacts | None:
    """Inside a job's rank: the job, from its environment and its own directory."""
    root = job_dir()
    if root is None:
        return None
    jobdir, spec, lineage = JobDir(root), {}, {}
    with contextlib.suppress(OSError, ValueError):
        spec = jobdir.read_spec()
    with contextlib.suppress(OSError, ValueError):
        lineage = jobdir.read_lineage() or {}
    return JobFacts(
        id=os.environ.get("TRAINHUB_JOB_ID") or root.name,
        name=str(spec.get("name") or root.name),
        user=str(lineage.get("user") or getpass.getuser()),
        attempt=int(os.environ.get("TRAINHUB_ATTEMPT") or 0),
        job_dir=str(root),
    )


def beside(jobs_root: Path) -> Registry:
    """The registry of the jobs root a job lies in (inside a rank). Aliases a role protects
    are moved through a front door, where the team's policy is at hand: here every default
    protection holds."""
    home = jobs_root / f".{KIND}"
    database = jobs_root.parent / DATABASE
    if jobs_root.name == "jobs" and database.is_file():
        from trainhub.backends.local.store import Store
        from trainhub.backends.local.tracking import model_registered

        records: Any = StoreRecords(Store(database), KIND, Entry)
        policy = load_models_file(jobs_root.parent / "models.yaml")

        def mirrored(version: VersionView, files: Path) -> None:  # as the local backend's
            model_registered(
                jobs_root.parent, version.source.job, version.model, version.version, files
            )

        return Registry(records, home, policy=lambda: policy, on_version=mirrored)
    return Registry(FileRecords(home, Entry, team_readable=True), home, policy=ModelPolicy)


def registry() -> Registry:
    root = job_dir()
    if root is not None:
        return beside(root.parent)
    from trainhub.api import service

    return service().registry


def register(
    service: JobService | None,
    name: str,
    source: str | Source | None,
    *,
    user: str | None = None,
    description: str = "",
) -> VersionView:
    """Register ``source`` (``JOB[:STEP|:OUTPUT]``) as the next version of ``name``: through
    ``service`` a job ``user`` may read (their own, or one their team shared); with no service,
    inside a job, its own (``source`` None: its newest checkpoint, else its outputs)."""
    job = this_job() if service is None else None
    if isinstance(source, str):
        source = parse_source(source)
    if service is None:
        if job is None:
            raise RuntimeError("outside a job, register through the job service")
        source = source or Source(job.id)
        if source.job != job.id:
            raise ValueError(f"from: a job registers its own files ({job.id}), not {source.job}'s")
        return beside(Path(job.job_dir).parent).register(
            name, source, job, user=job.user, description=description
        )
    if source is None:
        raise ValueError("from: name a job: JOB, JOB:STEP or JOB:OUTPUT")
    record = service.readable(source.job, user)
    facts = JobFacts(
        id=record.id,
        name=record.name,
        user=record.user,
        attempt=record.attempt,
        job_dir=record.job_dir,
        state=record.state.value,
    )
    return service.registry.register(
        name, source, facts, user=user or getpass.getuser(), description=description
    )


def note_input(version: VersionView, how: str) -> None:
    """Inside a job: write down that it loaded ``version`` (``how``: the reference asked)."""
    root = job_dir()
    if root is None:
        return
    line = {
        "model": version.model,
        "version": version.version,
        "asked": how,
        "source_job": version.source.job,
        "time": time.time(),
        "rank": int(os.environ.get("RANK") or 0),
    }
    with contextlib.suppress(OSError, ValueError):  # the lineage note never fails a load
        confined.append(root, MODEL_INPUTS, _jsonl_line(line))
