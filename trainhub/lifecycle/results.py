"""The ranks' own reports of how an attempt ended (``status/<attempt>/rank-<r>.json``, written
by the runner), the evidence :func:`trainhub.lifecycle.verdict.attempt_verdict` weighs first;
and on Kubernetes each worker's torchrun output (kept by the pod's first process), whose summary
names the rank that failed first (:func:`~trainhub.lifecycle.verdict.torchrun_root_causes`).

The job's own processes write that folder, so it is read through
:mod:`trainhub.jobs.confined`: a report, or the folder, that the job replaced by a link, a FIFO
or a directory counts as missing, never followed. The verdict then rests on how the processes
ended.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainhub.jobs import confined, world
from trainhub.jobs.directory import JobDir, agent_log_name
from trainhub.lifecycle.verdict import RunningCell, running_cells
from trainhub.rank.pod import RUN_STARTED

# Of a worker's torchrun output, the end is read: its failure summary is the last thing it says.
AGENT_TAIL_BYTES = 64 << 10


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


def agent_output(jobdir: JobDir, worker: int, attempt: int) -> str:
    """The end of worker ``worker``'s torchrun output in ``attempt``, of its pod's last run
    ("" when it kept none, or the job replaced the file by a link or a FIFO)."""
    name = agent_log_name(worker, attempt)
    try:
        size = confined.size(jobdir.root, name)
        start = max(size - AGENT_TAIL_BYTES, 0)
        text = confined.read_range(jobdir.root, name, start, size - start).decode(errors="replace")
    except (OSError, ValueError):
        return ""
    return text[max(text.rfind(RUN_STARTED), 0) :]


@dataclass(frozen=True)
class Evidence:
    """What the job directory says of how an attempt ended: the ranks' reports, the cell each
    rank was in (:func:`~trainhub.lifecycle.verdict.running_cells`), and a worker's torchrun
    output (read only when asked for: most verdicts need none, or one worker's)."""

    rank_results: dict[int, dict[str, Any]] = field(default_factory=dict)
    running: dict[int, RunningCell] = field(default_factory=dict)
    agent_output: Callable[[int], str] = lambda worker: ""
    # The ranks of the last world that claimed the directory (trainhub.jobs.world), if any.
    world_size: int | None = None


def attempt_evidence(jobdir: JobDir, attempt: int) -> Evidence:
    """The evidence of ``attempt`` its job directory holds."""
    return Evidence(
        rank_results(jobdir, attempt),
        running_cells(jobdir.iter_events(), attempt),
        functools.partial(agent_output, jobdir, attempt=attempt),
        world.last_size(jobdir, attempt),
    )
