"""Retention: which checkpoints a ``keep_last`` / ``keep_best`` policy deletes, and the check
that refuses a malformed policy. Pure: the writer applies it after a successful save
(:mod:`trainhub.checkpoint.writer`)."""

from __future__ import annotations

from typing import Any, Literal

from trainhub.checkpoint.layout import CheckpointInfo


def retention_victims(
    infos: list[CheckpointInfo],
    *,
    keep_last: int | None = None,
    keep_best: tuple[str, Literal["min", "max"], int] | None = None,
) -> list[CheckpointInfo]:
    """The checkpoints a retention policy deletes; the newest one is always kept.

    Kept: the ``keep_last`` newest, and the ``keep_best`` best by a metric (checkpoints
    without that metric do not compete). With neither policy nothing is deleted.
    """
    check_retention(keep_last, keep_best)
    if keep_last is None and keep_best is None:
        return []
    by_step = sorted(infos, key=lambda i: i.step)
    kept = {i.step for i in by_step[-1:]}
    if keep_last is not None:
        kept |= {i.step for i in by_step[-keep_last:]}
    if keep_best is not None:
        metric, mode, count = keep_best
        ranked = sorted(
            (i for i in by_step if metric in i.metrics),
            key=lambda i: (i.metrics[metric] if mode == "min" else -i.metrics[metric], -i.step),
        )
        kept |= {i.step for i in ranked[:count]}
    return [i for i in by_step if i.step not in kept]


def check_retention(keep_last: Any, keep_best: Any) -> None:
    """Refuse a malformed retention policy with a sentence naming the argument."""
    if keep_last is not None and (
        not isinstance(keep_last, int) or isinstance(keep_last, bool) or keep_last < 1
    ):
        raise ValueError(f"keep_last must be an integer of at least 1, got {keep_last!r}")
    if keep_best is None:
        return
    shape = f"keep_best must be (metric, 'min' | 'max', count), got {keep_best!r}"
    if not isinstance(keep_best, tuple | list) or len(keep_best) != 3:
        raise ValueError(shape)
    metric, mode, count = keep_best
    if not isinstance(metric, str) or not metric or mode not in ("min", "max"):
        raise ValueError(shape)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"keep_best count must be an integer of at least 1, got {count!r}")
