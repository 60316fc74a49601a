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

from trainhub.metrics.ranks import descendants


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
