"""What a rank finishes before it ends: asked to stop (SIGTERM: preemption, suspension, a
cancel), the stop callbacks registered with ``trainhub.checkpoint.on_stop`` and their saves;
at the end of its run, a background checkpoint save still under way, so none is lost."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainhub.jobs.directory import write_json_atomic
from trainhub.rank.context import RankContext
from trainhub.rank.failure import platform_status
from trainhub.rank.logmarks import say


def flush_checkpoints(status_path: Path) -> bool:
    """Finish a background checkpoint save the code started, so none is lost at exit."""
    checkpoint = sys.modules.get("trainhub.checkpoint")
    if checkpoint is None:
        return True
    try:
        checkpoint.wait_all()
        return True
    except Exception as exc:  # a write that failed (disk full, lost mount) is the platform's side
        say(f"a checkpoint could not be written: {exc}")
        write_json_atomic(status_path, platform_status(exc, "a checkpoint could not be written"))
        return False


def stop_handler(ctx: RankContext, cleanup: Callable[[], None] = lambda: None) -> Any:
    """SIGTERM (preemption, suspension, a deleted pod, a cancel): run the callbacks the code
    registered with ``trainhub.checkpoint.on_stop``, finish their saves, then end by SIGTERM
    as a rank without a handler would, after ``cleanup`` (what the rank's ``finally`` would
    have removed: a death by signal runs none)."""
    from trainhub.checkpoint import stopping  # not in the handler: it may interrupt an import

    def handler(signum: int, frame: Any) -> None:
        signal.signal(signum, signal.SIG_IGN)  # once, however many signals follow
        name = signal.Signals(signum).name
        say(f"{name} received: running the job's stop callbacks")
        ctx.emit("stop_requested", signal=name)
        checkpoint = sys.modules.get("trainhub.checkpoint")
        # A background save that failed earlier is said, and is no reason not to save now.
        errors = _errors_of(checkpoint.wait_all) if checkpoint else []
        errors += stopping.run_stop_callbacks()
        if checkpoint is not None:
            errors += _errors_of(checkpoint.wait_all)  # a callback's background save
        for error in errors:
            say(f"while stopping: {error}")
        sys.stdout.flush()
        sys.stderr.flush()
        cleanup()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    return handler


def _errors_of(fn: Any) -> list[str]:
    try:
        fn()
        return []
    except Exception as exc:
        return [f"{type(exc).__name__}: {exc}"]
