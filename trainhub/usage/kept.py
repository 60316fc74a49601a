"""The usage rows the cluster's controller keeps for a team, where members own their files.

A member's session may read only their own job directories and those shared with them, but a
team's usage (the Usage panel's team totals, ``trainhub usage --by user``) counts every member's
jobs. So when a job ends the controller, which reads its directory as its owner, keeps its row
as a small JSON file of its own on the team volume (``.trainhub/usage/<job>.json``, the
controller's, readable by the team: usage is the team's to see, the work that made it is not),
and a session counts those rows for the jobs it cannot read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from trainhub.jobs import confined
from trainhub.jobs.directory import write_json_atomic
from trainhub.usage.compute import UsageRow

USAGE_DIR = Path(".trainhub", "usage")  # on the team's volume
MAX_ROW_BYTES = 64 << 10


def keep(team_root: Path, row: UsageRow) -> None:
    write_json_atomic(team_root / USAGE_DIR / f"{row.job_id}.json", row.as_dict())


def kept_rows(
    team_root: Path, *, since: float, user: str | None, excluding: set[str]
) -> list[UsageRow]:
    """The rows kept of jobs that ended since ``since`` (``user``'s only, when given), but
    for the jobs in ``excluding`` (derived afresh by whoever may read them); a file that is
    not a row is left out."""
    folder = team_root / USAGE_DIR
    rows = []
    try:
        names = [n for n, is_dir in confined.entries(folder) if not is_dir]
    except (FileNotFoundError, NotADirectoryError):
        return []
    for name in names:
        job_id, json_suffix = os.path.splitext(name)
        if json_suffix != ".json" or job_id in excluding:
            continue
        try:
            data = json.loads(confined.read_bytes(folder, name, limit=MAX_ROW_BYTES))
            row = UsageRow(**data)
        except (OSError, ValueError, TypeError, confined.NotAJobFile):
            continue
        if row.finished_at >= since and (user is None or row.user == user):
            rows.append(row)
    return rows
