"""Suspend and resume: the rules every backend applies alike.

A suspended job gave its resources back with its progress saved: its ranks were asked to
stop (SIGTERM, which the rank runner turns into the training code's
``trainhub.checkpoint.on_stop`` callbacks, SIGKILL after the grace period), and its state
records the step of its latest checkpoint. Resuming queues it again under the same id as its
next attempt; the ranks find that checkpoint in their own job directory
(``trainhub.checkpoint.resume_step``).
"""

from __future__ import annotations

import contextlib

from trainhub.checkpoint.layout import latest_checkpoint
from trainhub.errors import Conflict
from trainhub.jobs import confined
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.jobs.states import JobState

SUSPENDABLE = frozenset({JobState.QUEUED, JobState.STARTING, JobState.RUNNING, JobState.RETRYING})


def check_suspendable(record: JobRecord) -> None:
    """A Conflict with a sentence unless the job may be suspended now."""
    if record.state == JobState.SUSPENDED:
        raise Conflict(f"Job {record.id} is already suspended.")
    if record.state not in SUSPENDABLE:
        raise Conflict(
            f"Job {record.id} already {record.state.value}: there is nothing to suspend."
        )
    if record.cancel_requested:
        raise Conflict(f"Job {record.id} is being cancelled.")


def check_resumable(record: JobRecord) -> None:
    if record.state != JobState.SUSPENDED:
        raise Conflict(
            f"Job {record.id} is {record.state.value}, not suspended: only a suspended job resumes."
        )


def saved_step(job_dir: str) -> int | None:
    """The step of the job's latest complete checkpoint (None without one, or when the job
    replaced its checkpoints directory by a link: nothing is read through it)."""
    with contextlib.suppress(OSError, ValueError, confined.NotAJobFile):
        info = latest_checkpoint(JobDir(job_dir).checkpoints)
        return info.step if info is not None else None
    return None
