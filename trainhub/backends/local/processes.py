"""Process plumbing for local jobs: detached launch, liveness by PID + start time, tree kill."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import psutil


def free_port() -> int:
    """A free TCP port on loopback for a job's rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn_detached(
    argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None
) -> psutil.Process:
    """Start ``argv`` in its own session, outliving whoever started it.

    A thread reaps it if we outlive it, so long-lived parents (the Jupyter server) keep no
    zombies.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=env,
        )
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return psutil.Process(proc.pid)


def is_alive(pid: int | None, started: float | None) -> bool:
    """True when ``pid`` still names the process that started at ``started`` (not a reused PID)."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(proc.create_time() - started) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def signal_groups(pgids: Iterable[int], sig: int) -> None:
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)


def descendants() -> list[psutil.Process]:
    try:
        return psutil.Process().children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def terminate_tree(
    pgids: Sequence[int], grace: float, extra: Iterable[psutil.Process] = ()
) -> None:
    """TERM every process group and every descendant, wait ``grace`` seconds, then KILL the rest."""
    signal_groups(pgids, signal.SIGTERM)
    procs = {p.pid: p for p in [*descendants(), *extra]}
    for p in procs.values():
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(list(procs.values()), timeout=grace)
    signal_groups(pgids, signal.SIGKILL)
    for p in alive + descendants():
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(descendants(), timeout=5)


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


def processes_of_job(job_id: str, pgids: Iterable[int]) -> list[psutil.Process]:
    """Every live process of a job whose supervisor is gone: its torchrun agents' groups, and
    the ranks (torchrun starts each in a session of its own) found by their TRAINHUB_JOB_ID."""
    wanted = set(pgids)
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == me:
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(proc.pid) in wanted or proc.environ().get("TRAINHUB_JOB_ID") == job_id:
                found.append(proc)
    return found


def kill_job_processes(job_id: str, pgids: Sequence[int], grace: float = 5.0) -> None:
    procs = processes_of_job(job_id, pgids)
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()


def wait_until(predicate, timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
