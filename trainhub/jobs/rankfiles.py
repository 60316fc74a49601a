"""What one rank of a job left for a person to read: its log (what the backend shows of the
rank's process until the rank opens its own log) and its executed notebook, each refused with
a sentence naming the job's ranks, or saying why the rank kept no notebook."""

from __future__ import annotations

from typing import Any

from trainhub.backends.base import Backend
from trainhub.errors import NotFound
from trainhub.jobs import logs
from trainhub.jobs.access import JobAccess
from trainhub.jobs.directory import JobDir, notebook_name
from trainhub.jobs.models import JobRecord
from trainhub.jobs.spec import field_error
from trainhub.jobs.states import JobState


def _no_notebook(record: JobRecord, rank: int) -> str:
    """Why a job has no executed notebook (of ``rank``) to show."""
    spec = record.spec
    if spec.source.kind != "notebook":
        return f"Job {record.id} runs a script; only a notebook job keeps an executed notebook."
    ranks = spec.notebook_ranks
    if ranks != "all" and rank not in ranks:
        return (
            f"Rank {rank} of job {record.id} keeps no executed notebook (the spec's "
            f"notebook_ranks is {ranks}); its output is in its log."
        )
    if record.state in (JobState.QUEUED, JobState.STARTING):
        return f"Job {record.id} has not started; its executed notebook appears as it runs."
    return (
        f"Job {record.id} has no executed notebook of rank {rank}: the rank wrote none (it may "
        "have stopped before its first cell); its log says what happened."
    )


def _ranks_text(world: int) -> str:
    if world == 1:
        return "only rank is 0"
    if world == 2:
        return "ranks are 0 and 1"
    return f"ranks are 0 to {world - 1}"


def rank_record(access: JobAccess, job_id: str, user: str | None, rank: int) -> JobRecord:
    """The record of a job ``user`` may read that has a rank ``rank``."""
    record = access.readable(job_id, user)
    if rank < 0:
        raise field_error("rank", "must be 0 or more")
    world = record.spec.resources.world_size
    if rank >= world:
        raise NotFound(f"Job {job_id} has no rank {rank}; its {_ranks_text(world)}.")
    return record


def log_source(backend: Backend, record: JobRecord, rank: int) -> logs.Reader:
    """Raw reads of ``rank``'s log: the backend's live output until the rank has a log."""
    jobdir = JobDir(record.job_dir)
    on_disk = jobdir.log_reader(rank)

    def read(offset: int, length: int) -> bytes:
        if not jobdir.has_log(rank):
            # The rank has not opened its own log yet (still starting, or it failed before
            # it could): the backend may show what its process printed so far.
            live = backend.live_log(record.id, rank, offset, length)
            if live is not None:
                return live[0]
        return on_disk(offset, length)

    return read


def read_notebook(record: JobRecord, rank: int) -> dict[str, Any]:
    """``rank``'s executed notebook as it last wrote it; NotFound says why there is none."""
    name = notebook_name(rank)
    try:
        data = JobDir(record.job_dir).read_json(name)
    except FileNotFoundError:
        raise NotFound(_no_notebook(record, rank)) from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ValueError(f"{name} of the job is not a notebook")
    return data
