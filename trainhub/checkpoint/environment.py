"""What checkpointing reads of the job it runs in, from the environment: where checkpoints
go, the integer settings torchrun and the launcher set (rank, world size, attempt), and the
job's event log that saves are recorded in. Outside a job there is no event log."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from trainhub.jobs.directory import JobDir


def job_dir() -> JobDir | None:
    """The job this process runs in, or None outside a job."""
    root = os.environ.get("TRAINHUB_JOB_DIR")
    return JobDir(root) if root else None


def checkpoint_dir() -> Path:
    """Where saves go and ``latest()`` looks: the job's directory, or the interactive one."""
    job = job_dir()
    if job is not None:
        return job.checkpoints.absolute()
    # Resolved: the user may point it through a link, and readers never follow links below it.
    return Path(os.environ.get("TRAINHUB_CHECKPOINT_DIR") or "checkpoints").resolve()


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None


def emit(type: str, **fields: Any) -> None:
    job = job_dir()
    if job is not None:
        job.emit(type, **fields)
