"""The local scheduler: on one machine, the always-on process that fires schedules whether or
not JupyterLab or a terminal is open (``trainhub scheduler``; on a cluster the controller
fires them).

One per data directory: it holds ``<home>/scheduler/lock`` with ``flock`` for its life, so a
second one started meanwhile exits at once, and a dead one's lock is free. It sleeps until the
next due time (no polling) or until a byte arrives on the FIFO ``<home>/scheduler/wake``,
which every change of a schedule writes; it ends once no schedule is left.

:func:`ensure` starts it detached (its own session, no terminal), from the CLI when a
schedule changes and from the server extension when schedules exist.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import getpass
import logging
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from trainhub.backends.capabilities import KeepsStore
from trainhub.schedules.notify import announcer

if TYPE_CHECKING:
    from trainhub.jobs.service import JobService

log = logging.getLogger(__name__)

MAX_SLEEP_SECONDS = 300.0  # a job's end is noted, and a clock step noticed, within this


def folder(home: Path) -> Path:
    return Path(home) / "scheduler"


def running(home: Path) -> bool:
    """Whether a scheduler holds this data directory's lock."""
    lock = folder(home) / "lock"
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def wake(home: Path) -> None:
    """Tell the scheduler that schedules changed (nothing when none listens)."""
    try:
        fd = os.open(folder(home) / "wake", os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no FIFO yet, or no reader (ENXIO): nothing to wake
        return
    try:
        os.write(fd, b"\n")
    except OSError as e:
        if e.errno != errno.EAGAIN:  # a full pipe wakes it all the same
            raise
    finally:
        os.close(fd)


def ensure(home: Path) -> None:
    """Start the scheduler of ``home`` detached unless one runs, then wake it."""
    if not running(home):
        start(home)
    wake(home)


def attach(service: JobService, home: Path) -> None:
    """Where ``service``'s backend runs jobs on this machine, every change of a schedule
    starts or wakes this data directory's scheduler, and a refused run is announced through
    the user's alerts; on a cluster (a member's session or CLI: the controller builds its own
    service) its ticks fire the member's schedules only."""
    schedules = service.schedules
    if not isinstance(service.backend, KeepsStore):  # a member's session on a cluster
        schedules.fires_for = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
        return
    # With none left (the last deleted) a running scheduler is told, and leaves.
    schedules.on_change = lambda: ensure(home) if schedules.records.active_ids() else wake(home)
    schedules.on_refused = announcer(home)


def start_if_scheduled(service: JobService, home: Path) -> None:
    """Start the scheduler where ``service`` runs jobs on this machine and has schedules (a
    server starting: the machine may have restarted since)."""
    if isinstance(service.backend, KeepsStore) and service.schedules.records.active_ids():
        ensure(home)


def start(home: Path) -> subprocess.Popen[bytes]:
    where = folder(home)
    where.mkdir(parents=True, exist_ok=True)
    with open(where / "scheduler.log", "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "trainhub.schedules.process"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,  # outlives the terminal and JupyterLab that started it
            env={**os.environ, "TRAINHUB_HOME": str(home)},
            cwd=home,
        )


def serve(home: Path, make_service: Callable[[], JobService]) -> int:
    """Fire schedules until none is left; 0 at once when another scheduler runs."""
    where = folder(home)
    where.mkdir(parents=True, exist_ok=True)
    lock = os.open(where / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    with contextlib.suppress(FileExistsError):
        os.mkfifo(where / "wake", 0o600)
    # Read and write: the FIFO never reads as closed between writers.
    fifo = os.open(where / "wake", os.O_RDWR | os.O_NONBLOCK)
    service = make_service()
    schedules = service.schedules
    log.info("trainhub scheduler %d serving %s", os.getpid(), home)
    while True:
        # A time due while a wake was being read is found by this pass.
        with contextlib.suppress(BlockingIOError):
            while os.read(fifo, 4096):
                pass
        try:
            service.backend.reconcile()  # the runs' jobs as they are now
            service.pipelines.advance_all()  # a scheduled pipeline's next steps start
            due = schedules.tick_all()
        except Exception:
            log.exception("trainhub scheduler: a pass failed")
            due = time.time() + 5
        if not schedules.records.active_ids() or not (where / "lock").exists():
            log.info("trainhub scheduler: no schedule left")  # or its data directory went
            return 0
        sleep = MAX_SLEEP_SECONDS if due is None else due - time.time()
        select.select([fifo], [], [], min(max(sleep, 0.0), MAX_SLEEP_SECONDS))
