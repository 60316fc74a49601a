"""Saving when a job is asked to stop.

Training code registers what to save; the rank runner calls it when the rank gets SIGTERM
(Kueue preempting or suspending the job, a pod deleted, a cancel), within the grace period
before SIGKILL, and the next run resumes from that checkpoint::

    import trainhub.checkpoint as ckpt

    @ckpt.on_stop
    def save_now():
        ckpt.save({"model": model, "optim": opt}, step)

A callback runs in the rank's main thread between two Python instructions of the training
code, so it saves the state as it is at that moment. While the callbacks run, a replicated
save is written by rank 0 alone, without waiting for the other ranks to agree (they may be
inside a collective that will never finish); sharded saves need every rank and do not suit it.

Standard library only: the runner imports it in every rank.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[[], object])

_callbacks: list[Callable[[], object]] = []
_stopping = False


def on_stop(fn: F) -> F:
    """Call ``fn()`` when this rank is asked to stop; returns ``fn`` (usable as a decorator)."""
    if not callable(fn):
        raise TypeError(f"on_stop takes a function, not {type(fn).__name__}")
    _callbacks.append(fn)
    return fn


def stop_requested() -> bool:
    """Whether this rank was asked to stop (its stop callbacks run or ran)."""
    return _stopping


def run_stop_callbacks() -> list[str]:
    """Call every registered callback once, in order; returns what the failing ones raised."""
    global _stopping
    _stopping = True
    errors = []
    while _callbacks:
        fn = _callbacks.pop(0)
        try:
            fn()
        except BaseException as e:  # the others still get their turn
            errors.append(f"{getattr(fn, '__qualname__', fn)!s}: {type(e).__name__}: {e}")
    return errors
