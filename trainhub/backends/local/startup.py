"""Starting an attempt's processes from its launch plan, with the standard library alone.

The launcher runs this before anything else of trainhub is loaded, so the torchrun agents are
on their way while the supervisor is still being imported.
"""

from __future__ import annotations

import json
import os
import subprocess

TYPE_CHECKING = False  # typing itself is not loaded here: this runs before the first rank
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

PLAN = "launch.json"  # in the job directory: written by the admitting process, used once
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt orphaned descendants, so no rank can escape a cancel by losing its parent."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def start_plan(job_dir: str, plan: Mapping[str, Any]) -> list[subprocess.Popen[bytes]]:
    """Start the plan's torchrun agents (or the rank of a one-process job), each in a session of
    its own, writing to the supervisor log."""
    bundle = os.path.join(job_dir, "bundle")
    with open(os.path.join(job_dir, "logs", "supervisor.log"), "ab") as log:
        return [
            subprocess.Popen(
                entry["argv"],
                env=entry["env"],
                cwd=bundle,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
            for entry in plan["agents"]
        ]


def start_planned(job_dir: str) -> tuple[int, list[subprocess.Popen[bytes]]] | None:
    """Start what the admitting process planned: (attempt, agents); None when there is no plan."""
    path = os.path.join(job_dir, PLAN)
    try:
        with open(path) as f:
            plan = json.load(f)
    except (OSError, ValueError):
        return None
    os.unlink(path)  # a plan is used once; a retry plans anew
    agents = start_plan(job_dir, plan)
    # Only our children's children can be orphaned; a torchrun agent starts its ranks once it
    # has loaded PyTorch, long after this.
    become_subreaper()
    return int(plan["attempt"]), agents
