"""The ranks' own reports of how an attempt ended (``status/<attempt>/rank-<r>.json``, written
by the runner), the evidence :func:`trainhub.lifecycle.verdict.attempt_verdict` weighs first.

The job's own processes write that folder, so it is read through
:mod:`trainhub.jobs.confined`: a report, or the folder, that the job replaced by a link, a FIFO
or a directory counts as missing, never followed. The verdict then rests on how the processes
ended.
"""

from __future__ import annotations

from typing import Any

from trainhub.jobs import confined
from trainhub.jobs.directory import JobDir


def rank_results(jobdir: JobDir, attempt: int) -> dict[int, dict[str, Any]]:
    """Each rank's report of ``attempt``, by rank; ranks that wrote none are left out."""
    folder = f"status/{attempt}"
    try:
        found = confined.entries(jobdir.root, folder)
    except confined.NotAJobFile:
        return {}
    results = {}
    for name, is_dir in found:
        stem, _, rank = name.removesuffix(".json").partition("-")
        if is_dir or not name.endswith(".json") or stem != "rank" or not rank.isdigit():
            continue
        try:  # a rank's result the job replaced by a link or FIFO counts as missing
            results[int(rank)] = jobdir.read_json(f"{folder}/{name}")
        except (ValueError, OSError):
            continue
    return results
