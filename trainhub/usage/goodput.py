"""Goodput: the share of a job's allocated GPU time that produced training progress it kept.

Pure: the attempts' spans (:func:`trainhub.usage.compute.attempt_spans`), the job's events
and its training scalars in, a :class:`Goodput` out. Progress is the step of
``trainhub.log(step=...)`` (the lowest rank that logged, rank 0 by default); what is not
progress is said separately, each as GPU-seconds (``gpus`` x seconds):

- start-up: from an attempt's ``running`` state to its first step (a whole attempt that
  logged no step);
- checkpoint stalls: the ``stall_seconds`` of the checkpoint events within an attempt (the
  time training waited for a save);
- redone: after a restart from an older checkpoint, the time from the attempt's first step
  until it passed the highest step an earlier attempt had reached;
- interrupted: an attempt that did not end the job, from its last step to its end (the
  partial step and the time until the failure or preemption was seen);
- data wait: the time the ranks' DataLoaders made the step wait for data
  (:mod:`trainhub.rank.datawait`) in what is left, an attempt's steps past the redone ones
  up to its last step: the records written in that window, each rank's ``data_wait_s``
  averaged over the ranks that wrote any (the GPUs of a rank idle while it waits).

Waiting between attempts (a retry's backoff, queueing again after a preemption) holds no GPU
and is reported as wall seconds (``requeue_s``), outside the share. A job that logged no
step has no goodput (None): nothing says what was progress. The share is one of time, so a
job without GPUs has one too (its GPU-seconds are all 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any


@dataclass(frozen=True)
class Goodput:
    gpu_productive_s: float = 0.0
    gpu_startup_s: float = 0.0
    gpu_checkpoint_s: float = 0.0
    gpu_redone_s: float = 0.0
    gpu_interrupted_s: float = 0.0
    gpu_data_wait_s: float = 0.0
    requeue_s: float = 0.0
    steps: int = 0  # distinct steps reached (kept progress)
    redone_steps: int = 0
    goodput: float | None = None  # productive / allocated; None without any step
    # The same parts in seconds of the attempts (GPUs or not): what a breakdown draws.
    productive_s: float = 0.0
    startup_s: float = 0.0
    checkpoint_s: float = 0.0
    redone_s: float = 0.0
    interrupted_s: float = 0.0
    data_wait_s: float = 0.0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def step_points(scalars: Iterable[Mapping[str, Any]]) -> list[tuple[float, int]]:
    """(time, step) of the lowest rank's scalar records, in time order, one per step and
    time (a step logs several names at once)."""
    records = [s for s in scalars if _number(s.get("time")) and _number(s.get("step"))]
    if not records:
        return []
    ranks = [s.get("rank") for s in records if _number(s.get("rank"))]
    first_rank = min(ranks) if ranks else None
    return sorted(
        {
            (float(s["time"]), int(s["step"]))
            for s in records
            if first_rank is None or s.get("rank", first_rank) == first_rank
        }
    )


def checkpoint_stalls(events: Iterable[Mapping[str, Any]]) -> list[tuple[float, float]]:
    """(time, stall seconds) of each checkpoint event."""
    return [
        (float(e["time"]), max(0.0, float(e["stall_seconds"])))
        for e in events
        if e.get("type") == "checkpoint"
        and _number(e.get("time"))
        and _number(e.get("stall_seconds"))
    ]


def data_waits(records: Iterable[Mapping[str, Any]]) -> list[tuple[float, Any, float]]:
    """(time, rank, data_wait_s) of the ranks' data-wait records (``metrics/system.jsonl``)."""
    return [
        (float(r["time"]), r.get("rank"), max(0.0, float(r["data_wait_s"])))
        for r in records
        if _number(r.get("time")) and _number(r.get("data_wait_s"))
    ]


def _waited(waits: Sequence[tuple[float, Any, float]], start: float, end: float) -> float:
    """The ranks' mean data wait of the records written in ``[start, end]``."""
    inside = [(rank, w) for t, rank, w in waits if start <= t <= end]
    ranks = {rank for rank, _ in inside}
    return sum(w for _, w in inside) / len(ranks) if ranks else 0.0


def goodput(
    spans: Sequence[tuple[float, float]],
    events: Iterable[Mapping[str, Any]],
    scalars: Iterable[Mapping[str, Any]],
    gpus: float,
    system: Iterable[Mapping[str, Any]] = (),
) -> Goodput:
    """The goodput of a job whose attempts held ``gpus`` GPUs during ``spans``; ``system``:
    its ``metrics/system.jsonl`` records (the ranks' data wait among them)."""
    requeue = sum(max(0.0, b[0] - a[1]) for a, b in pairwise(spans))
    points = step_points(scalars)
    allocated = sum(e - s for s, e in spans)
    if not points or not spans or allocated <= 0:
        return Goodput(requeue_s=requeue)
    stalls = checkpoint_stalls(events)
    waits = data_waits(system)
    startup = redone = interrupted = stalled = waited = 0.0
    redone_steps = 0
    high = -1  # the highest step an earlier attempt reached
    for i, (start, end) in enumerate(spans):
        last_span = i == len(spans) - 1
        # A record written as the job ended may carry a time just past the record's end.
        own = [(t, s) for t, s in points if start <= t and (t <= end or last_span)]
        if not own:
            startup += end - start
            continue
        first = own[0][0]
        startup += max(0.0, min(first, end) - start)
        past = next((t for t, s in own if s > high), own[-1][0])
        redone += max(0.0, min(past, end) - first)
        redone_steps += len({s for _, s in own if s <= high})
        if not last_span:
            interrupted += max(0.0, end - own[-1][0])
        stalled += min(end - start, sum(x for t, x in stalls if start <= t <= end))
        # The last attempt's final record is written as its rank ends, past its last step.
        kept_until = float("inf") if last_span else own[-1][0]
        waited += min(end - start, _waited(waits, max(first, past), kept_until))
        high = max(high, max(s for _, s in own))
    lost = [startup, stalled, redone, interrupted, waited]
    # The parts may overlap (a save while redoing steps): never more than was allocated.
    scale = min(1.0, allocated / sum(lost)) if sum(lost) > 0 else 1.0
    startup, stalled, redone, interrupted, waited = (x * scale for x in lost)
    productive = max(0.0, allocated - startup - stalled - redone - interrupted - waited)
    kept = len({s for _, s in points})
    return Goodput(
        gpu_productive_s=gpus * productive,
        gpu_startup_s=gpus * startup,
        gpu_checkpoint_s=gpus * stalled,
        gpu_redone_s=gpus * redone,
        gpu_interrupted_s=gpus * interrupted,
        gpu_data_wait_s=gpus * waited,
        requeue_s=requeue,
        steps=kept,
        redone_steps=redone_steps,
        goodput=productive / allocated,
        productive_s=productive,
        startup_s=startup,
        checkpoint_s=stalled,
        redone_s=redone,
        interrupted_s=interrupted,
        data_wait_s=waited,
    )
