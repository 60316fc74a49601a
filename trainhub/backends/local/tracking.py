"""The MLflow mirror on one machine (trainhub.tracking): the supervisor enrolls a job of a team
whose teams-file entry has ``mlflow:`` as it starts and starts the sender; whoever reconciles
starts it again while jobs wait to be mirrored. The sender (``python -m
trainhub.backends.local.tracking HOME``, detached, one per home by ``flock``) runs passes while
something is due soon and exits otherwise; the next reconcile brings it back. No step of a job
waits on MLflow or fails through it: a problem is one ``mlflow`` event of the job."""

from __future__ import annotations

import contextlib
import fcntl
import sys
import time
from collections.abc import Callable
from pathlib import Path

from trainhub import detached, settings
from trainhub.jobs.directory import JobDir
from trainhub.jobs.models import JobRecord
from trainhub.teams.loading import env_team
from trainhub.tracking import cursor as cursors
from trainhub.tracking.config import MlflowServer
from trainhub.tracking.models import queue_model_version
from trainhub.tracking.pending import enroll, run_pass

LOCK = ".lock"
LINGER = 60.0  # the sender stays while a try is due within this many seconds


def state_dir(home: Path) -> Path:
    return Path(home) / "mlflow"


def team_server(record: JobRecord) -> MlflowServer | None:
    team = env_team(record.team or record.spec.team)
    return team.mlflow if team is not None else None


def _servers() -> Callable[[JobRecord], MlflowServer | None]:
    """:func:`team_server` read once per team and pass (the teams file parsed once)."""
    found: dict[str | None, MlflowServer | None] = {}

    def server_of(record: JobRecord) -> MlflowServer | None:
        team = record.team or record.spec.team
        if team not in found:
            found[team] = team_server(record)
        return found[team]

    return server_of


def enroll_job(home: Path, record: JobRecord, jobdir: JobDir) -> None:
    """Mirror this job (its team asks for it); never raises. Nothing is started here: a
    process the supervisor started would be one of the job's, ended with it; whoever
    reconciles meanwhile sends what the job logs, and its end starts the sender."""
    try:
        if team_server(record) is not None:
            enroll(state_dir(home), record.id)
    except Exception as error:  # the mirror never stands in a job's way
        jobdir.emit("mlflow", error=f"The MLflow mirror could not start: {error}")


def job_ended(home: Path, job_id: str) -> None:
    """The job's end is due to be mirrored now: its cursor due, the sender started."""
    state = state_dir(home)
    found = cursors.load(state, job_id) if state.is_dir() else None
    if found is None or found.done:
        return
    found.next_try = 0.0
    cursors.save(state, found)
    if not _sender_running(state):
        spawn_sender(home)


def nudge(home: Path) -> None:
    """Start the sender when a mirrored job is due and none runs (a reconcile's cheap check:
    one directory listing where the mirror is in use, one stat elsewhere)."""
    state = state_dir(home)
    if not state.is_dir():
        return
    with contextlib.suppress(OSError):
        now = time.time()
        if any(c.next_try <= now for c in cursors.pending(state)) and not _sender_running(state):
            spawn_sender(home)


def _sender_running(state: Path) -> bool:
    with (state / LOCK).open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
    return False


def spawn_sender(home: Path) -> None:
    state = state_dir(home)
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    detached.spawn("trainhub.backends.local.tracking", str(home), state / "sender.log")


def run_sender(home: Path) -> None:
    """Passes until nothing is due within :data:`LINGER` seconds; one sender per home. Once it
    lets go of the lock it looks once more, so a job that became due meanwhile is not left."""
    state = state_dir(home)
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    while _passes(home, state):
        now = time.time()
        if not any(c.next_try <= now for c in cursors.pending(state)):
            return


def _passes(home: Path, state: Path) -> bool:
    """Run passes while something is due soon; False when another sender holds the lock."""
    from trainhub.backends.local.store import Store

    with (state / LOCK).open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # one runs: it finds this work too
        store = Store(settings.database(home))
        try:
            while True:
                result = run_pass(state, store.get, _servers())
                if result.next_due is None or result.next_due - time.time() > LINGER:
                    return True
                time.sleep(max(0.2, result.next_due - time.time()))
        finally:
            store.close()


def model_registered(home: Path, job_id: str, name: str, version: int, files: Path) -> None:
    """A version registered from a mirrored job: queued for its MLflow run, the sender started
    (a job its team does not mirror: nothing)."""
    state = state_dir(home)
    queued = state.is_dir() and queue_model_version(state, job_id, name, version, files=files)
    if queued and not _sender_running(state):
        spawn_sender(home)


if __name__ == "__main__":
    sys.exit(detached.main(run_sender))
