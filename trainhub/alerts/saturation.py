"""A team's quota staying saturated (pure): every GPU of its nominal quota held by its jobs
for ``minutes`` in a row is announced once per such stretch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Saturation:
    since: float | None = None  # when the current saturated stretch began
    announced: bool = False


def observe(
    state: Saturation, now: float, used_gpus: float, quota_gpus: int, minutes: float
) -> tuple[Saturation, bool]:
    """The new state, and whether to announce now. A team without GPU quota never saturates."""
    if quota_gpus <= 0 or used_gpus < quota_gpus:
        return Saturation(), False
    since = now if state.since is None else state.since
    if not state.announced and now - since >= minutes * 60:
        return Saturation(since, True), True
    return Saturation(since, state.announced), False


def sentence(used_gpus: float, quota_gpus: int, since: float, now: float) -> str:
    return (
        f"its jobs have held {used_gpus:g} of the {quota_gpus} GPUs of its quota for "
        f"{(now - since) / 60:.0f} minutes; new jobs wait (or borrow, where the cohort lends)"
    )
