"""Claims: how a control-plane step submits a job exactly once.

A step that is about to submit a job for a piece of work (a sweep's trial, a schedule's run)
first claims it in the work's document under that document's lock
(trainhub.jobs.records), stamped with when and by which process; it submits after the lock
is released and then notes the job. Another step that meets the claim submits nothing.

A claim with no job noted may belong to a submitter that died mid-way. :func:`settle` tells
which: the claiming process still at work (pending), the job it made found by the key the job
carries (matched), or no job and a submitter known to be gone — ended, on this machine where
that is known; past :data:`CLAIM_SECONDS` for one of another machine — (stale: the caller
gives the work up or claims it again, as its own rules say).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

import psutil

# No submit takes this long: a claim this old whose job is nowhere was abandoned.
CLAIM_SECONDS = 900.0


def claimer() -> str:
    """This process, as a claim records it: host, pid and start time (a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{psutil.Process().create_time():.3f}"


def _gone(claimed_by: str | None) -> bool | None:
    """Whether the claiming process has ended; None where that cannot be known (a process of
    another host)."""
    parts = (claimed_by or "").rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname():
        return None
    try:
        process = psutil.Process(int(parts[1]))
        # A zombie has ended; it stays listed until its parent (often init) reaps it.
        return (
            f"{process.create_time():.3f}" != parts[2] or process.status() == psutil.STATUS_ZOMBIE
        )
    except (psutil.NoSuchProcess, ValueError):
        return True


@dataclass(frozen=True)
class Settled:
    job_id: str | None = None  # the claim's job, found
    stale: bool = False  # no job, and its submitter is gone


PENDING = Settled()


def settle(
    claimed_at: float | None, claimed_by: str | None, now: float, find: Callable[[], str | None]
) -> Settled:
    """What became of a claim with no job noted; ``find`` looks for its job by its key. It is
    asked after the submitter is judged gone, so a job that submitter made is seen."""
    gone = _gone(claimed_by)
    if gone is None:
        gone = now - (claimed_at or 0) > CLAIM_SECONDS
    job_id = find()
    if job_id is not None:
        return Settled(job_id=job_id)
    return Settled(stale=True) if gone else PENDING
