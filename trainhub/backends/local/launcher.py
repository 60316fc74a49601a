"""The launcher of one local job:
``python -m trainhub.backends.local.launcher HOME JOB_ID JOB_DIR``.

Started detached by the admitting process, which has already worked out what to start
(``launch.json`` in the job directory, see :mod:`trainhub.backends.local.plan`). It starts the
ranks first and loads the rest of trainhub after, so the supervisor's own start-up overlaps
with torchrun's instead of preceding it; then it becomes the job's supervisor. Only the
standard library is imported before the ranks are on their way.
"""

from __future__ import annotations

import signal
import sys

from trainhub.backends.local.startup import start_planned

_signals: list[int] = []


def _note_signal(signum: int, _frame: object) -> None:
    _signals.append(signum)  # handled by the supervisor, as soon as it is loaded


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 3:
        print(
            "usage: python -m trainhub.backends.local.launcher HOME JOB_ID JOB_DIR", file=sys.stderr
        )
        return 2
    home, job_id, job_dir = args
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _note_signal)
    started = start_planned(job_dir)

    from pathlib import Path

    from trainhub.backends.local.supervisor import Supervisor

    supervisor = Supervisor(Path(home), job_id)
    for pending in _signals:
        supervisor.stop(pending)  # a cancel that came while the supervisor loaded
    return supervisor.run(prelaunched=started)


if __name__ == "__main__":
    sys.exit(main())
