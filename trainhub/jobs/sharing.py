"""Who may read a job: its owner, and on a hub with teams the owner's team once shared.

A job is private until its owner shares it with their team (``PATCH jobs/{id}
{"shared": "team"}``, ``trainhub share``); teammates then read it (logs, metrics,
checkpoints, executed notebook, compare) and may run it again as a job of their own, never
change or stop it. Another team never sees it. The flag lives in the job directory
(``edits.json``), which outlives the workload; the team is the job's record's (on a cluster,
the namespace and the team volume the job lives in), never something the job directory says.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainhub.jobs.models import JobRecord

# A job id is its spec's name and a random suffix (JobService.submit): the same pattern as a
# name. A teammate's read first checks the id has it, so no id reaches a path with "..".
JOB_ID = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class Sharing(StrEnum):
    PRIVATE = "private"
    TEAM = "team"


def is_owner(record: JobRecord, user: str | None) -> bool:
    """``user`` None is the CLI on a store of its own: every job is its own."""
    return user is None or record.user == user


def teammate_may_read(record: JobRecord, user: str, team: str | None, jobs_root: Path) -> bool:
    """Whether ``user`` of ``team`` (the session's team) may read another's job: the owner
    shared it with the team, the job is that team's, and its directory is where the team's
    jobs live (``jobs_root/<id>``, so a record cannot point a read elsewhere)."""
    if team is None or record.shared != Sharing.TEAM or record.team != team:
        return False
    if not JOB_ID.match(record.id) or record.user == user:
        return False
    return Path(record.job_dir) == Path(jobs_root) / record.id


def read_only_sentence(record: JobRecord, verb: str) -> str:
    """Why a teammate cannot ``verb`` a job they can read."""
    return (
        f"Job {record.id} is {record.user}'s, shared with team {record.team} to read: only "
        f"{record.user} can {verb} it. Resubmit it to run it as a job of your own."
    )
