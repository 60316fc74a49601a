"""The launch plan of one attempt of a local job, built in one place.

The admitting process writes the first attempt's plan into the job directory
(:data:`~trainhub.backends.local.startup.PLAN`) for the launcher to start at once; the supervisor
builds a retry's plan itself. Both come from :func:`attempt_plan`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from trainhub.backends.local import processes
from trainhub.backends.local.startup import PLAN
from trainhub.backends.local.store import Store
from trainhub.backends.local.torchrun import Attempt, LaunchPlan, launch_plan
from trainhub.checkpoint.layout import CheckpointInfo
from trainhub.jobs import confined
from trainhub.jobs.directory import JobDir
from trainhub.jobs.environment import layer_directories
from trainhub.jobs.models import JobRecord
from trainhub.lifecycle.resume import resume_source


def resume_source_of(store: Store, record: JobRecord) -> CheckpointInfo | None:
    """The latest checkpoint the record's job may start an attempt from now
    (:mod:`trainhub.lifecycle.resume`); the store knows where the job it forks keeps its
    checkpoints."""

    def job_dir_of(job_id: str) -> Path | None:
        source = store.get(job_id)
        return Path(source.job_dir) if source is not None else None

    return resume_source(record.job_dir, record.spec.fork_from, job_dir_of)


def starts_from(store: Store, record: JobRecord) -> str | None:
    """The checkpoint the record's current attempt starts from: the first attempt from the one
    its submit decided (kept in the store); a later one (a retry, a resume) from the latest at
    the time it starts."""
    if record.attempt == 0:
        decided = store.local(record.id).starts_from
        # A fork queued by a trainhub that did not keep the decision looks, as that one did.
        if decided is not None or record.spec.fork_from is None:
            return decided
    source = resume_source_of(store, record)
    return str(source.path) if source is not None else None


def attempt_of(
    record: JobRecord, *, python: str, env: Mapping[str, str], port: int, resume: str | None
) -> Attempt:
    """The record's current attempt, as its processes start."""
    jobdir = JobDir(record.job_dir)
    return Attempt(
        python=python,
        base_env=env,
        spec=record.spec,
        job_id=record.id,
        job_dir=str(jobdir.root),
        bundle=str(jobdir.bundle),
        number=record.attempt,
        port=port,
        resume_from=resume,
    )


def attempt_plan(
    store: Store, record: JobRecord, *, python: str, env: Mapping[str, str]
) -> tuple[LaunchPlan, str | None]:
    """What to start for the record's current attempt, and the checkpoint it resumes from."""
    jobdir = JobDir(record.job_dir)
    resume = starts_from(store, record)
    plan = launch_plan(
        attempt_of(record, python=python, env=env, port=processes.free_port(), resume=resume),
        record.assigned_gpus,
    )
    # The job's pip layer exists before its ranks start, so the next cell imports what a cell's
    # own pip puts there: Python's import system keeps a path that was missing as missing.
    for directory in layer_directories(jobdir.pip_prefix):
        Path(directory).mkdir(parents=True, exist_ok=True)
    return plan, resume


def write_plan(job_dir: str | os.PathLike[str], attempt: int, plan: LaunchPlan) -> None:
    """For the launcher; readable only by the user, as it holds the job's environment. Written
    without following links: a job retried after its supervisor died may have left one there."""
    data = json.dumps({"attempt": attempt, **plan}).encode()
    confined.replace(Path(job_dir), PLAN, data, mode=0o600)
