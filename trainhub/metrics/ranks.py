"""Which processes run a job's ranks: the rank of a process, from the environment torchrun gave
it, and the lookup a metrics sampler makes every second (the local supervisor's, and a pod's
first process on Kubernetes)."""

from __future__ import annotations

from collections.abc import Iterable

import psutil


def descendants() -> list[psutil.Process]:
    """This process's children and theirs (empty if it is going away)."""
    try:
        return psutil.Process().children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def rank_of(env: dict[str, str]) -> int | None:
    """The global rank a process of a job runs, from its start-up environment (None for a
    torchrun agent, which has no RANK)."""
    if "RANK" in env and "LOCAL_RANK" in env:
        return int(env["RANK"])
    return None


def rank_roots(processes: Iterable[tuple[int, int, dict[str, str]]]) -> dict[int, int]:
    """Rank -> pid of the process that runs the rank, from the (pid, parent pid, start-up
    environment) of a job's processes. What a rank starts (data loader workers, ``!`` commands)
    inherits its environment and so looks like a rank too: the rank is the one whose parent
    does not."""
    members: dict[int, dict[int, int]] = {}
    for pid, ppid, env in processes:
        rank = rank_of(env)
        if rank is not None:
            members.setdefault(rank, {})[pid] = ppid
    return {
        rank: min(pid for pid, ppid in parents.items() if ppid not in parents)
        for rank, parents in members.items()
    }


class JobRanks:
    """Rank -> pid of a job's ranks among this process's descendants, as a metrics sampler
    asks for them every second: once ``expected`` ranks are known they are not looked up
    again until one of them is gone (a scan reads every descendant's environment)."""

    def __init__(self, job_id: str, expected: int) -> None:
        self.job_id = job_id
        self.expected = expected
        self._known: dict[int, int] = {}

    def __call__(self) -> dict[int, int]:
        known = self._known
        if len(known) == self.expected and all(psutil.pid_exists(p) for p in known.values()):
            return known
        found = []
        for proc in descendants():
            try:
                env, ppid = proc.environ(), proc.ppid()
            except psutil.Error:
                continue
            if env.get("TRAINHUB_JOB_ID") == self.job_id:
                found.append((proc.pid, ppid, env))
        self._known = rank_roots(found)
        return self._known
