"""Start of a local job's supervisor: ``python -m trainhub.backends.local.launch HOME JOB_ID JOB_DIR``.

The process that admitted the job has already worked out what to start (``launch.json`` in
the job directory), so this starts the ranks first and loads the rest of trainhub after:
the supervisor's own start-up then overlaps with torchrun's instead of preceding it.
Only the standard library is imported before the ranks are on their way.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PLAN = "launch.json"


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt orphaned descendants, so no rank can escape a cancel by losing its parent."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def write_plan(job_dir: Path, attempt: int, agents: list[dict[str, Any]]) -> None:
    """Written by the admitting process; readable only by the user (it holds the job's env)."""
    path = job_dir / PLAN
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"attempt": attempt, "agents": agents}, f)


def start_planned(job_dir: Path) -> tuple[int, list[subprocess.Popen[bytes]]] | None:
    """Start the planned processes, in sessions of their own; None when there is no plan."""
    path = job_dir / PLAN
    try:
        plan = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    path.unlink(missing_ok=True)  # a plan is used once; a retry plans anew
    become_subreaper()  # before any rank exists, so none can be orphaned past us
    agents = []
    with open(job_dir / "logs" / "supervisor.log", "ab") as log:
        for agent in plan["agents"]:
            agents.append(subprocess.Popen(
                agent["argv"], env=agent["env"], cwd=str(job_dir / "bundle"),
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            ))
    return int(plan["attempt"]), agents


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 3:
        print("usage: python -m trainhub.backends.local.launch HOME JOB_ID JOB_DIR", file=sys.stderr)
        return 2
    home, job_id, job_dir = args
    started = start_planned(Path(job_dir))
    from trainhub.backends.local.supervisor import Supervisor

    return Supervisor(Path(home), job_id).run(prelaunched=started)


if __name__ == "__main__":
    sys.exit(main())
