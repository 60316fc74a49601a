"""Start of a local job's supervisor: ``python -m trainhub.backends.local.launch HOME JOB_ID JOB_DIR``.

The process that admitted the job has already worked out what to start (``launch.json`` in
the job directory), so this starts the ranks first and loads the rest of trainhub after:
the supervisor's own start-up then overlaps with torchrun's instead of preceding it.
Only the standard library is imported before the ranks are on their way.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

TYPE_CHECKING = False  # typing itself is not loaded here: this runs before the first rank
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

PLAN = "launch.json"


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt orphaned descendants, so no rank can escape a cancel by losing its parent."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def write_plan(job_dir: str | os.PathLike[str], attempt: int, plan: Mapping[str, Any]) -> None:
    """Written by the admitting process; readable only by the user (it holds the job's env)."""
    path = os.path.join(job_dir, PLAN)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"attempt": attempt, **plan}, f)


class Started:
    """The processes started for one attempt: its torchrun agents, and its warm runners by the
    rank they wait for (in ``run_dir``, see trainhub.rank.warm_start)."""

    def __init__(self, agents: list[subprocess.Popen[bytes]], warm: dict[int, subprocess.Popen[bytes]],
                 run_dir: str | None):
        self.agents = agents
        self.warm = warm
        self.run_dir = run_dir
        self._reporters = [threading.Thread(target=self._report_exit, args=(rank, proc), name=f"warm-{rank}",
                                            daemon=True) for rank, proc in warm.items()]
        for reporter in self._reporters:
            reporter.start()

    def warm_ready(self) -> bool:
        """Every warm runner listens (it binds once loaded), or has ended."""
        from trainhub.rank.warm_start import socket_path

        return self.run_dir is None or all(
            proc.poll() is not None or os.path.exists(socket_path(self.run_dir, rank))
            for rank, proc in self.warm.items()
        )

    def _report_exit(self, rank: int, proc: subprocess.Popen[bytes]) -> None:
        """Write down how a warm runner ended, as soon as it does: only we, its parent, can
        know, and its stand-in exits the same way (or, if no rank was taken, starts it cold)."""
        from trainhub.rank.warm_start import exit_path

        code = proc.wait()
        assert self.run_dir is not None
        path = exit_path(self.run_dir, rank)
        with contextlib.suppress(OSError):  # the directory is gone: so is the attempt
            with open(f"{path}.tmp", "w") as f:
                f.write(str(code))
            os.replace(f"{path}.tmp", path)

    def stop_warm(self) -> None:
        """At the end of the attempt: end the warm runners still there (no rank took them, as
        torchrun never got that far), and their directory."""
        for proc in self.warm.values():
            if proc.poll() is None:
                proc.kill()  # it ran no code of the job
        for reporter in self._reporters:
            reporter.join()  # none may write into the next attempt's directory
        if self.run_dir is not None:
            import shutil

            shutil.rmtree(self.run_dir, ignore_errors=True)


def start_plan(job_dir: str, plan: Mapping[str, Any]) -> Started:
    """Start the torchrun agents first (they are the start's critical path), then the warm
    runners, each in a session of its own."""
    run_dir = plan.get("run_dir")
    if run_dir:
        os.makedirs(run_dir, mode=0o700, exist_ok=True)
    bundle = os.path.join(job_dir, "bundle")
    with open(os.path.join(job_dir, "logs", "supervisor.log"), "ab") as log:
        def start(entry: dict[str, Any]) -> subprocess.Popen[bytes]:
            return subprocess.Popen(entry["argv"], env=entry["env"], cwd=bundle, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=log, start_new_session=True)

        agents = [start(entry) for entry in plan["agents"]]
        warm = {int(entry["rank"]): start(entry) for entry in plan.get("warm", [])}
    return Started(agents, warm, run_dir)


def start_planned(job_dir: str) -> tuple[int, Started] | None:
    """Start what the admitting process planned; None when there is no plan."""
    path = os.path.join(job_dir, PLAN)
    try:
        with open(path) as f:
            plan = json.load(f)
    except (OSError, ValueError):
        return None
    os.unlink(path)  # a plan is used once; a retry plans anew
    started = start_plan(job_dir, plan)
    # Only our children's children can be orphaned; a torchrun agent starts its ranks once it
    # has loaded PyTorch, long after this.
    become_subreaper()
    return int(plan["attempt"]), started


RANK_WAIT_S = 60.0  # the longest the supervisor waits for the warm runners to load
_signals: list[int] = []


def _note_signal(signum: int, _frame: object) -> None:
    _signals.append(signum)  # handled by the supervisor, as soon as it is loaded


def wait_for_warm_runners(started: Started, timeout: float = RANK_WAIT_S) -> None:
    """Until the warm runners are loaded (or a signal comes, or an agent ends).

    Loading the supervisor takes a quarter of a second of CPU; on a small machine, doing it
    while the warm runners load takes that time from the torchrun agents' own start, and
    delays the first cell by as much. A cancel (SIGTERM) meanwhile ends the wait."""
    deadline = time.monotonic() + timeout
    while not _signals and time.monotonic() < deadline:
        if started.warm_ready() or any(a.poll() is not None for a in started.agents):
            return
        time.sleep(0.01)


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 3:
        print("usage: python -m trainhub.backends.local.launch HOME JOB_ID JOB_DIR", file=sys.stderr)
        return 2
    home, job_id, job_dir = args
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _note_signal)
    started = start_planned(job_dir)
    if started is not None:
        wait_for_warm_runners(started[1])
    from pathlib import Path

    from trainhub.backends.local.supervisor import Supervisor

    supervisor = Supervisor(Path(home), job_id)
    for pending in _signals:
        supervisor.stop(pending)
    return supervisor.run(prelaunched=started)


if __name__ == "__main__":
    sys.exit(main())
