"""Saving: ``save`` checks its arguments and plans the save, then writes it at once or, with
``async_=True``, stages a copy and writes it on a background thread. A save's handle, the one
save pending in the background (waited for by the next save, by ``wait_all`` and at exit),
and ``release_staging_memory`` live here."""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from trainhub.checkpoint import staging
from trainhub.checkpoint.environment import checkpoint_dir, emit, env_int
from trainhub.checkpoint.layout import CheckpointInfo, coerce_step
from trainhub.checkpoint.ranks import save_ranks
from trainhub.checkpoint.retention import check_retention
from trainhub.checkpoint.state import as_state
from trainhub.checkpoint.writer import Plan, write


class CheckpointHandle:
    """A save in progress or done. ``wait()`` returns its :class:`CheckpointInfo`."""

    def __init__(self, plan: Plan):
        self._plan = plan
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._info: CheckpointInfo | None = None
        self.stall_seconds = 0.0

    @property
    def path(self) -> Path:
        return self._plan.final

    @property
    def step(self) -> int:
        return self._plan.step

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> CheckpointInfo | None:
        """Block until the checkpoint is visible; re-raise the error if the save failed.

        Returns None only on a rank that cannot see the checkpoints directory.
        """
        if not self._done.wait(timeout):
            raise TimeoutError(f"checkpoint step {self.step} still being written after {timeout} s")
        if self._error is not None:
            raise self._error
        return self._info

    def _run(self, payload: Any) -> None:
        try:
            self._info = write(self._plan, payload, self.stall_seconds)
        except BaseException as e:
            self._error = e
        finally:
            self._done.set()

    def __repr__(self) -> str:
        state = "done" if self.done() else "writing"
        return f"<CheckpointHandle step={self.step} {state} path={str(self.path)!r}>"


_lock = threading.Lock()
_pending: CheckpointHandle | None = None
_atexit_registered = False


def save(
    state: Any,
    step: int,
    *,
    metrics: Mapping[str, float] | None = None,
    async_: bool = False,
    sharded: bool = False,
    keep_last: int | None = None,
    keep_best: tuple[str, Literal["min", "max"], int] | None = None,
) -> CheckpointHandle:
    """Save ``state`` as the checkpoint of ``step`` and return its handle.

    ``state`` is anything ``torch.save`` takes; values with a ``state_dict()`` (modules,
    optimizers, schedulers) are saved as their state dict. Call it on every rank.
    ``keep_last``/``keep_best`` delete older checkpoints after a successful save; the newest
    and the one just saved always stay.
    """
    step = coerce_step(step)
    clean_metrics = _check_metrics(metrics)
    check_retention(keep_last, keep_best)
    wait_all()  # one save at a time; an earlier background failure is raised here
    started = time.perf_counter()
    plan = Plan(
        root=checkpoint_dir(),
        step=step,
        metrics=clean_metrics,
        sharded=sharded,
        async_=async_,
        ranks=save_ranks(sharded),
        job_id=os.environ.get("TRAINHUB_JOB_ID") or None,
        attempt=env_int("TRAINHUB_ATTEMPT", 0),
        keep_last=keep_last,
        keep_best=tuple(keep_best) if keep_best is not None else None,  # type: ignore[arg-type]
        started=started,
    )
    handle = CheckpointHandle(plan)
    payload = as_state(state) if plan.writes else None
    if not async_:
        handle.stall_seconds = time.perf_counter() - started
        handle._run(payload)
        handle.wait()
        return handle

    staged = staging.stage(payload) if plan.writes else None
    handle.stall_seconds = time.perf_counter() - started
    _start_background(handle, staged)
    return handle


def wait_all() -> None:
    """Wait for the pending background save, if any; raise its error once."""
    global _pending
    with _lock:
        pending, _pending = _pending, None
    if pending is not None:
        pending.wait()


def _start_background(handle: CheckpointHandle, staged: Any) -> None:
    global _pending, _atexit_registered
    thread = threading.Thread(
        target=_run_in_background,
        args=(handle, staged),
        name=f"trainhub-checkpoint-{handle.step}",
    )
    with _lock:
        _pending = handle
        if not _atexit_registered:
            atexit.register(_flush_at_exit)
            _atexit_registered = True
    thread.start()


_BACKGROUND_NICENESS = 10


def _run_in_background(handle: CheckpointHandle, staged: Any) -> None:
    # Writing competes with training for cores on a busy machine: training goes first; the
    # write only has to end before the next save.
    # Not Linux, or not allowed: the write runs at training's priority.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _BACKGROUND_NICENESS)
    handle._run(staged)


def _flush_at_exit() -> None:
    try:
        wait_all()
    except BaseException as e:  # nothing above us can catch it any more: say so loudly
        print(f"trainhub: a background checkpoint save failed: {e!r}", file=sys.stderr)
        emit("checkpoint_failed", error=repr(e))


def _check_metrics(metrics: Mapping[str, Any] | None) -> dict[str, float]:
    if metrics is None:
        return {}
    if not isinstance(metrics, Mapping):
        raise TypeError(f"metrics must be a dict of name -> number, got {type(metrics).__name__}")
    clean = {}
    for name, value in metrics.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"metric names must be non-empty strings, got {name!r}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"metrics[{name!r}] must be a number, got {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"metrics[{name!r}] is {number}; checkpoint metrics must be finite")
        clean[name] = number
    return clean


def release_staging_memory() -> None:
    """Free the CPU copies kept between async saves (after waiting for the pending one)."""
    wait_all()
    staging.release()
