"""One job's usage row, derived from its record and its job directory.

:func:`usage_row` is pure: the record, the events and the sampler's records in, the row out.
:func:`job_usage` reads the job directory for it (confined: a file the job replaced by a link
or FIFO counts as absent, and the row is then built from the record alone).

- GPU-seconds allocated: ``gpus`` (a share of one GPU counts as its fraction: 0.25 for
  ``gpu_share: 1/4``) x the length of each attempt, from its ``running`` state
  event to the next state change (or the record's started/finished times when the
  directory has none). An elastic job's GPUs change within an attempt: each stretch counts
  the GPUs it held (:func:`sized_spans`, from its ``running`` and ``resize`` events, or on a
  cluster its ``workers`` events).
- GPU-seconds busy: each GPU sample stands for the sampling interval before it (the median
  gap between that GPU's samples) at its utilization, clipped to the attempts.
- GPU-seconds wasted: the sampled GPU-seconds whose utilization was under the threshold.
- CPU-seconds: the ranks' samples (``cpu_percent`` of one core, children included) likewise.
- Goodput and what was lost (start-up, checkpoint stalls, redone steps, interrupted attempts,
  waiting for data, waiting between attempts): :mod:`trainhub.usage.goodput`, from the events,
  the scalars and the ranks' data-wait records.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise
from typing import Any, get_type_hints

from pydantic import create_model

from trainhub.jobs.models import DataWait, JobRecord
from trainhub.jobs.shares import parse_share
from trainhub.jobs.states import JobState
from trainhub.usage.goodput import Goodput, goodput
from trainhub.usage.models import utc_day

DEFAULT_INTERVAL = 1.0  # the supervisor's sampling interval, when samples cannot tell
_ENDS_ATTEMPT = frozenset(s.value for s in JobState if s != JobState.RUNNING)


@dataclass(frozen=True, kw_only=True)
class UsageRow(Goodput):
    """The job's usage, beside its goodput and what was lost (:class:`Goodput`'s fields)."""

    job_id: str
    user: str
    team: str
    pool: str
    state: str
    failure_class: str | None
    gpus: float  # whole GPUs, or the fraction of one a job on a share held
    created_at: float
    admitted_at: float | None
    started_at: float | None
    finished_at: float
    day: str  # UTC day the job ended (the report groups by it)
    wall_s: float
    queue_wait_s: float
    gpu_allocated_s: float
    gpu_busy_s: float
    gpu_waste_s: float
    gpu_sampled_s: float
    cpu_s: float
    attempts: int
    retries: int
    waste_utilization_pct: float
    goodput_allocated_s: float = 0.0  # gpu_allocated_s when the job has a goodput, else 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# The row as the REST API answers it (the job view's goodput): the same fields, as a model,
# the job's own first (a dataclass lists its base's first).
_HINTS = get_type_hints(UsageRow)
JobUsage = create_model(
    "JobUsage",
    __doc__="One job's usage and goodput (seconds throughout; so far, while it runs).",
    **{  # type: ignore[call-overload]
        name: (_HINTS[name], ...)
        for name in sorted(_HINTS, key=lambda name: name in Goodput.__dataclass_fields__)
    },
    # Beside GPU utilization (busy over sampled): how much of the step waited for data.
    data_wait=(DataWait | None, None),
)


def attempt_spans(
    events: Iterable[Mapping[str, Any]], started_at: float | None, finished_at: float
) -> list[tuple[float, float]]:
    """(start, end) of each attempt: a ``running`` state event opens one (the first opens at
    ``started_at`` when that is earlier), the next other state event (retrying, queued after
    a preemption, a terminal state) closes it; nothing lasts past ``finished_at``."""
    spans: list[tuple[float, float]] = []
    opened: float | None = None
    for event in events:
        if event.get("type") != "state" or not isinstance(event.get("time"), int | float):
            continue
        state = event.get("state")
        if state == JobState.RUNNING.value:
            if opened is None:
                opened = float(event["time"])
        elif state in _ENDS_ATTEMPT and opened is not None:
            spans.append((opened, max(opened, float(event["time"]))))
            opened = None
    if opened is not None:
        spans.append((opened, max(opened, finished_at)))
    if not spans and started_at is not None:
        spans.append((started_at, max(started_at, finished_at)))
    elif spans and started_at is not None and started_at < spans[0][0]:
        # The first attempt began when the backend says it did (a pod's start on Kubernetes),
        # not when a reconcile first saw it running and wrote the event.
        spans[0] = (started_at, spans[0][1])
    # The record's end is the end: the final state event is written just after it.
    return [(start, min(end, finished_at)) for start, end in spans if start < finished_at]


def _held(event: Mapping[str, Any], gpus_per_worker: int) -> float | None:
    """The GPUs an elastic job holds from ``event`` on: a resize's count (one machine), the
    workers Kueue admitted (a cluster's ``workers`` event), or the GPUs an attempt started
    with."""
    if event.get("type") == "resize" and isinstance(event.get("gpus"), int | float):
        return float(event["gpus"])
    if event.get("type") == "workers" and isinstance(event.get("workers"), int):
        return float(event["workers"] * gpus_per_worker)
    if event.get("type") == "state" and event.get("state") == JobState.RUNNING.value:
        gpus = event.get("gpus")
        return float(len(gpus)) if isinstance(gpus, list) else None
    return None


def sized_spans(
    events: Sequence[Mapping[str, Any]],
    spans: Sequence[tuple[float, float]],
    gpus: float,
    *,
    elastic: bool,
    gpus_per_worker: int = 0,
) -> list[tuple[float, float, float]]:
    """(start, end, GPUs) of each stretch of the attempts at one size: an elastic job's spans
    cut at its membership changes (``resize`` events); ``gpus`` where no event says."""
    if not elastic:
        return [(s, e, gpus) for s, e in spans]  # a fixed size: as it always was
    changes = sorted(
        (float(e["time"]), held)
        for e in events
        if isinstance(e.get("time"), int | float)
        and (held := _held(e, gpus_per_worker)) is not None
    )
    out = []
    for start, end in spans:
        size = next((g for t, g in reversed(changes) if t <= start + 1.0), gpus)
        cut = start
        for t, g in changes:
            if start + 1.0 < t < end:  # the attempt's own running event is at its start
                out.append((cut, t, size))
                cut, size = t, g
        out.append((cut, end, size))
    return out


def _interval(times: Sequence[float]) -> float:
    gaps = [b - a for a, b in pairwise(times) if b > a]
    return statistics.median(gaps) if gaps else DEFAULT_INTERVAL


def _covered(t: float, step: float, spans: Sequence[tuple[float, float]]) -> float:
    """Seconds of ``[t - step, t]`` inside the spans: a reading at ``t`` (NVML's utilization,
    psutil's CPU percentage) describes the interval before it."""
    return sum(max(0.0, min(t, end) - max(t - step, start)) for start, end in spans)


def _series(
    samples: Iterable[Mapping[str, Any]], key: str, value: str
) -> dict[Any, list[tuple[float, float | None]]]:
    """(time, value) per ``key`` (a GPU, a rank), in time order."""
    out: dict[Any, list[tuple[float, float | None]]] = defaultdict(list)
    for s in samples:
        t, v = s.get("time"), s.get(value)
        # A record without the reading is another series' (a rank's data wait), not a gap.
        if not isinstance(t, int | float) or s.get(key) is None or value not in s:
            continue
        out[s[key]].append((float(t), float(v) if isinstance(v, int | float) else None))
    for series in out.values():
        series.sort(key=lambda p: p[0])
    return out


def gpu_seconds(
    gpu_samples: Iterable[Mapping[str, Any]],
    spans: Sequence[tuple[float, float]],
    threshold_pct: float,
) -> tuple[float, float, float]:
    """(busy, wasted, sampled) GPU-seconds of the samples inside ``spans``; a sample whose
    utilization NVML could not read counts in none of them."""
    busy = waste = sampled = 0.0
    for series in _series(gpu_samples, "gpu", "utilization").values():
        step = _interval([t for t, _ in series])
        for t, utilization in series:
            seconds = _covered(t, step, spans)
            if utilization is None or not seconds:
                continue
            sampled += seconds
            busy += seconds * min(max(utilization, 0.0), 100.0) / 100
            if utilization < threshold_pct:
                waste += seconds
    return busy, waste, sampled


def cpu_seconds(
    system_samples: Iterable[Mapping[str, Any]], spans: Sequence[tuple[float, float]]
) -> float:
    """CPU-seconds of the ranks (the machine's own records, ``rank: null``, are left out)."""
    total = 0.0
    for series in _series(system_samples, "rank", "cpu_percent").values():
        # psutil's percentage is measured since the previous reading: a sampler delayed on
        # a busy machine reads a longer interval, which the median step would undercount.
        previous = None
        first_step = _interval([t for t, _ in series])
        for t, percent in series:
            step = first_step if previous is None else t - previous
            previous = t
            if percent is not None:
                total += _covered(t, step, spans) * percent / 100
    return total


def usage_row(
    record: JobRecord,
    events: Iterable[Mapping[str, Any]] = (),
    gpu_samples: Iterable[Mapping[str, Any]] = (),
    system_samples: Iterable[Mapping[str, Any]] = (),
    scalars: Iterable[Mapping[str, Any]] = (),
    *,
    threshold_pct: float,
    finished_at: float | None = None,
) -> UsageRow:
    """The usage row of an ended job. ``finished_at`` stands in for a record without one
    (a running job's row so far)."""
    end = record.finished_at or finished_at or record.started_at or record.created_at
    events = list(events)
    spans = attempt_spans(events, record.started_at, end)
    system_samples = list(system_samples)
    res = record.spec.resources
    gpus = held_gpus(record)
    sized = sized_spans(
        events, spans, gpus, elastic=res.elastic, gpus_per_worker=res.gpus_per_worker
    )
    allocated_each = sum(e - s for s, e in spans)
    allocated = sum((e - s) * g for s, e, g in sized)
    # A membership change restarts every rank: its start-up and redone steps count as those of
    # a new attempt; the parts' GPU-seconds at the job's mean size.
    mean = allocated / allocated_each if allocated_each > 0 else gpus
    good = goodput([(s, e) for s, e, _ in sized], events, scalars, mean, system_samples)
    # A share's samples are of the whole GPU it is on: its part of them is its fraction.
    part = gpus if res.gpu_share else 1.0
    busy, waste, sampled = (
        (x * part for x in gpu_seconds(gpu_samples, spans, threshold_pct))
        if gpus
        else (0.0, 0.0, 0.0)
    )
    # Samples stand for an interval each: never report more than was allocated.
    busy, waste, sampled = (min(x, allocated) for x in (busy, waste, sampled))
    admitted = record.admitted_at if record.admitted_at is not None else end
    return UsageRow(
        job_id=record.id,
        user=record.user,
        team=record.team or record.spec.team or "",
        pool=record.spec.queue or record.queue or "",
        state=record.state.value,
        failure_class=record.verdict.failure_class.value if record.verdict else None,
        gpus=gpus,
        created_at=record.created_at,
        admitted_at=record.admitted_at,
        started_at=record.started_at,
        finished_at=end,
        day=utc_day(end),
        wall_s=max(0.0, end - record.started_at) if record.started_at else 0.0,
        queue_wait_s=max(0.0, admitted - record.created_at),
        gpu_allocated_s=allocated,
        gpu_busy_s=busy,
        gpu_waste_s=waste,
        gpu_sampled_s=sampled,
        cpu_s=cpu_seconds(system_samples, spans),
        attempts=len(spans),
        retries=sum(record.retries.values()),
        waste_utilization_pct=threshold_pct,
        goodput_allocated_s=allocated if good.goodput is not None else 0.0,
        **asdict(good),
    )


def held_gpus(record: JobRecord) -> float:
    """The GPUs the job's attempts held: its whole GPUs, or its share's fraction of one."""
    share = record.spec.resources.gpu_share
    return float(parse_share(share)) if share else record.gpus


def job_usage(record: JobRecord, *, threshold_pct: float) -> UsageRow:
    """:func:`usage_row` from the job's directory."""
    from trainhub.jobs.directory import JobDir

    jobdir = JobDir(record.job_dir)

    def records(read: Any, *args: Any) -> list[dict[str, Any]]:
        try:
            return read(*args)[0]
        except (OSError, ValueError):  # refused (a link, a FIFO) or unreadable: absent
            return []

    events = records(jobdir.read_events)
    return usage_row(
        record,
        events,
        records(jobdir.read_metrics, "gpu") if held_gpus(record) else [],
        records(jobdir.read_metrics, "system"),
        records(jobdir.read_metrics, "scalars"),
        threshold_pct=threshold_pct,
        finished_at=time.time(),
    )
