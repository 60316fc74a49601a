"""Which world of ranks the job's directory belongs to now, so that a world the rendezvous
has left behind cannot go on writing the job's checkpoints.

torchrun's c10d rendezvous drops an agent whose heartbeats stop for a few seconds (a stalled
store, a starved pod) without telling it (pytorch#111646): its ranks train on as a world of
their own while the other agents form a new one, and both publish the same steps. Rank 0 of
every world claims the directory when it starts (:func:`claim`, ``world.json``, written
atomically); before publishing a checkpoint it checks the claim is still its own
(:func:`check`). A world that finds a later one's claim stops with :class:`WorldSuperseded`:
its agent restarts the ranks, rejoins the rendezvous, and the agents form one world again.
A whole world restarting, a retry and a resize claim the directory anew: the old world's rank
0 is gone by then, so nothing is refused that should not be."""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from trainhub.jobs.directory import JobDir, write_json_atomic

WORLD = "world.json"

# This process's claim: rank 0 of a world makes one at most; the checkpoint writer, in the same
# process, compares it with the file's.
_claim: dict[str, Any] | None = None


class WorldSuperseded(RuntimeError):
    """A later world of ranks has claimed the job's directory: this one must not write to it."""


def _path(job: JobDir) -> Path:
    return job.root / WORLD


def claim(job: JobDir, *, world_size: int, attempt: int) -> dict[str, Any]:
    """Rank 0 of a new world claims the job's directory (a later claim supersedes it)."""
    global _claim
    mine = {
        "id": uuid.uuid4().hex,
        "world_size": world_size,
        "attempt": attempt,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": round(time.time(), 3),
    }
    write_json_atomic(_path(job), mine)
    _claim = mine
    return mine


def check(job: JobDir, what: str) -> None:
    """Raise :class:`WorldSuperseded` if another world claimed the directory after this
    process did. A process that claimed nothing (not a job's rank 0) is not checked."""
    if _claim is None:
        return
    try:
        current = json.loads(_path(job).read_text())
    except (OSError, ValueError):
        return  # no claim to compare (removed by hand): the rendezvous' word stands
    if not isinstance(current, dict) or current.get("id") == _claim["id"]:
        return
    raise WorldSuperseded(
        f"not {what}: this world of {_claim['world_size']} (rank 0 on {_claim['host']} since "
        f"{_when(_claim)}) is no longer the job's: a world of {current.get('world_size')} "
        f"started on {current.get('host')} at {_when(current)}. The rendezvous dropped this "
        "worker's agent; its ranks stop so that the agents form one world again"
    )


def last_size(job: JobDir, attempt: int) -> int | None:
    """How many ranks the last world of ``attempt`` to claim the directory had: the world an
    elastic job ended in, where a resize asked for just before the end never formed. None
    when no world of that attempt claimed it (or the claim cannot be read: the job's own
    files, read without following links)."""
    try:
        current = job.read_json(WORLD)
    except (OSError, ValueError):
        return None
    if not isinstance(current, dict) or current.get("attempt") != attempt:
        return None
    size = current.get("world_size")
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def forget() -> None:
    """Drop this process's claim (tests that play several worlds in one process)."""
    global _claim
    _claim = None


def _when(c: dict[str, Any]) -> str:
    try:
        return time.strftime("%H:%M:%S", time.gmtime(float(c["started"]))) + " UTC"
    except (KeyError, TypeError, ValueError):
        return "an unknown time"
