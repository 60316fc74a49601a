"""The checkpoint an attempt starts from, decided here for both backends: it becomes the ranks'
``TRAINHUB_RESUME_FROM``, the ``resume_from`` of the attempt's ``state`` event and the
``resume_step`` of a retry's event.

A new job's first attempt starts from what the submit decided once (:func:`fork_source`: the
checkpoint of the job it forks, or none); every later attempt (a retry, a resume after a
suspension) looks again when it starts (:func:`resume_source`), as the job has saved since.

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
    return fork_source(source, asked) if source is not None and asked is not None else None


def fork_source(source_dir: str | os.PathLike[str], asked: CheckpointRef) -> CheckpointInfo | None:
    """The checkpoint a fork of the job in ``source_dir`` starts from: the step ``asked`` names,
    else that job's latest; None when it has no such checkpoint."""
    return resume_checkpoint(source_dir, asked.step)
