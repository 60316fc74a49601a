"""The checkpoint an attempt starts from, decided here for both backends: it becomes the ranks'
``TRAINHUB_RESUME_FROM``, the ``resume_from`` of the attempt's ``state`` event and the
``resume_step`` of a retry's event.

Reads the job directories' checkpoints (without following links: a job whose
``checkpoints/`` is a link is refused, :class:`~trainhub.jobs.confined.NotAJobFile`); writes
nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from trainhub.checkpoint.layout import CheckpointInfo, resume_checkpoint
from trainhub.jobs.specparts import CheckpointRef


def resume_source(
    job_dir: str | os.PathLike[str],
    asked: CheckpointRef | None,
    job_dir_of: Callable[[str], Path | None],
) -> CheckpointInfo | None:
    """The job's own latest checkpoint, once it saved one (a retry, a resume after a
    suspension); else the checkpoint of the job its spec forks from (``asked``), that job's
    directory found by ``job_dir_of`` (None: no such job); else None: it starts afresh."""
    own = resume_checkpoint(job_dir)
    if own is not None:
        return own
    source = job_dir_of(asked.job_id) if asked is not None else None
    return resume_checkpoint(source, asked.step) if source is not None and asked else None
