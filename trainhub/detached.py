"""A helper process that outlives its caller and is never taken for a job's: the senders of
alerts (trainhub.alerts.outbox) and of the MLflow mirror (trainhub.backends.local.tracking)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def spawn(module: str, argument: str, log: Path) -> None:
    """``python -m module argument`` in a session of its own, its errors appended to ``log``,
    without the variables that mark a job's processes: nothing takes it for the job, and the
    job's end never waits for it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINHUB_JOB")}
    with log.open("ab") as errors:
        subprocess.Popen(
            [sys.executable, "-m", module, argument],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
            close_fds=True,
        )


def main(run: Callable[[Path], None], argv: list[str] | None = None) -> int:
    """The entry point of a helper that :func:`spawn` started: ``run`` on its one argument;
    an interrupt is an ordinary end."""
    args = sys.argv[1:] if argv is None else argv
    with contextlib.suppress(KeyboardInterrupt):
        run(Path(args[0]))
    return 0
