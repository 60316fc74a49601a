"""Prometheus metrics of jobs, computed from the backend at scrape time.

:func:`families` is pure (a :class:`Snapshot` in, metric families out); :class:`JobsCollector`
is a ``prometheus_client`` custom collector that takes a snapshot on every ``collect()``. Each
exporter (the server extension for the user's own jobs, the hub's metrics service for every
team) registers one in a registry of its own per scrape, so nothing lives in the library's
global registry and nothing is counted between scrapes: counters are sums over the records
(ended jobs only grow), which is what Prometheus' ``rate()`` expects of a counter.

prometheus_client is a dependency of the server and hub extras only: imported here, never
by the core's other modules.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from trainhub.jobs.filter import JobFilter
from trainhub.jobs.models import JobRecord
from trainhub.jobs.states import JobState
from trainhub.usage.compute import held_gpus
from trainhub.usage.models import UsageBy, UsageGroup

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Queue waits: from seconds (an idle machine) to a day (a saturated cluster).
WAIT_BUCKETS = (10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0)
PAGE = 500  # records per backend list call


@dataclass(frozen=True)
class IdleSession:
    """A session holding GPUs, as the idle-GPU service last saw it."""

    user: str
    team: str
    gpus: float  # a shared session: its share's fraction of one GPU
    idle: bool  # its GPUs are under the idle threshold now


@dataclass(frozen=True)
class Snapshot:
    records: Sequence[JobRecord]
    usage_by_team: Sequence[UsageGroup] = ()  # every ended job, all time
    sessions: Sequence[IdleSession] | None = None  # None: this exporter does not see sessions
    per_job: bool = False  # one series per active job (the user's own exporter)
    errors: Sequence[str] = field(default_factory=tuple)  # sources that could not be read


def _team(record: JobRecord) -> str:
    return record.team or record.spec.team or ""


def families(snap: Snapshot) -> list[Metric]:
    teams = sorted({_team(r) for r in snap.records} | {g.key for g in snap.usage_by_team})
    jobs = GaugeMetricFamily("trainhub_jobs", "Jobs by state and team.", labels=["state", "team"])
    by_state = Counter((r.state.value, _team(r)) for r in snap.records)
    for state in JobState:
        for team in teams or [""]:
            jobs.add_metric([state.value, team], by_state.get((state.value, team), 0))

    gpus = GaugeMetricFamily(
        "trainhub_job_gpus_in_use",
        "GPUs held by admitted jobs (starting, running, retrying), by team; a job on a "
        "share of a GPU counts its fraction.",
        labels=["team"],
    )
    held: defaultdict[str, float] = defaultdict(float)
    for r in snap.records:
        if r.state.active:
            held[_team(r)] += held_gpus(r)
    for team in teams:
        gpus.add_metric([team], held.get(team, 0))

    wait = HistogramMetricFamily(
        "trainhub_queue_wait_seconds",
        "Seconds from submission to admission of the jobs that were admitted, by team.",
        labels=["team"],
    )
    waits: dict[str, list[float]] = defaultdict(list)
    for r in snap.records:
        if r.admitted_at is not None:
            waits[_team(r)].append(max(0.0, r.admitted_at - r.created_at))
    for team in teams:
        values = waits.get(team, [])
        buckets = [(str(b), sum(v <= b for v in values)) for b in WAIT_BUCKETS]
        buckets.append(("+Inf", len(values)))
        wait.add_metric([team], buckets, sum_value=sum(values))

    failures = CounterMetricFamily(
        "trainhub_job_failures",
        "Failed jobs by team and failure class (the verdict's).",
        labels=["team", "failure_class"],
    )
    failed = Counter(
        (_team(r), r.verdict.failure_class.value if r.verdict else "unknown")
        for r in snap.records
        if r.state == JobState.FAILED
    )
    for (team, klass), n in sorted(failed.items()):
        failures.add_metric([team, klass], n)

    out: list[Metric] = [jobs, gpus, wait, failures]
    for name, attr, text in (
        ("trainhub_gpu_allocated_seconds", "gpu_allocated_s", "GPU-seconds allocated"),
        ("trainhub_gpu_busy_seconds", "gpu_busy_s", "GPU-seconds busy (NVML utilization)"),
        ("trainhub_gpu_waste_seconds", "gpu_waste_s", "GPU-seconds under the waste threshold"),
    ):
        fam = CounterMetricFamily(name, f"{text} of ended jobs, by team.", labels=["team"])
        for g in snap.usage_by_team:
            fam.add_metric([g.key], getattr(g, attr))
        out.append(fam)

    if snap.sessions is not None:
        sessions = GaugeMetricFamily(
            "trainhub_gpu_sessions", "Interactive sessions holding GPUs, by team.", labels=["team"]
        )
        idle = GaugeMetricFamily(
            "trainhub_idle_gpu_sessions",
            "Interactive sessions whose GPUs are under the idle threshold, by team.",
            labels=["team"],
        )
        idle_gpus = GaugeMetricFamily(
            "trainhub_idle_gpus",
            "GPUs held by idle interactive sessions, by team (a share counts its fraction).",
            labels=["team"],
        )
        for team in sorted({s.team for s in snap.sessions} | set(teams)):
            mine = [s for s in snap.sessions if s.team == team]
            sessions.add_metric([team], len(mine))
            idle.add_metric([team], sum(s.idle for s in mine))
            idle_gpus.add_metric([team], sum(s.gpus for s in mine if s.idle))
        out += [sessions, idle, idle_gpus]

    if snap.per_job:
        active = GaugeMetricFamily(
            "trainhub_active_job_gpus",
            "GPUs of each of the user's admitted jobs.",
            labels=["job_id", "name", "team", "state"],
        )
        for r in snap.records:
            if r.state.active:
                active.add_metric([r.id, r.name, _team(r), r.state.value], held_gpus(r))
        out.append(active)

    up = GaugeMetricFamily("trainhub_exporter_source_errors", "Sources this scrape could not read.")
    up.add_metric([], len(snap.errors))
    out.append(up)
    return out


class JobsCollector:
    """A custom collector: ``collect()`` takes a fresh snapshot each time."""

    def __init__(self, snapshot: Callable[[], Snapshot]):
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        yield from families(self._snapshot())


def exposition(snapshot: Callable[[], Snapshot]) -> bytes:
    """The text format of one scrape, through a registry of its own."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JobsCollector(snapshot))  # type: ignore[arg-type]
    return generate_latest(registry)


# --- reading a backend ---------------------------------------------------------------------------
def all_records(backend: Any, *, user: str | None) -> list[JobRecord]:
    """Every job of ``user`` (every job: None) the backend lists, page by page."""
    out: list[JobRecord] = []
    before: int | None = None
    while True:
        page = backend.list_jobs(JobFilter(user=user), limit=PAGE, before_seq=before)
        out.extend(page)
        seqs = [r.seq for r in page if r.seq is not None]
        if len(page) < PAGE or not seqs:
            return out
        before = min(seqs)


def backend_snapshot(
    backends: Iterable[Any],
    *,
    user: str | None = None,
    sessions: Sequence[IdleSession] | None = None,
    per_job: bool = False,
) -> Snapshot:
    """A snapshot over one or more backends (one per team on a cluster); a backend that cannot
    be read is counted in ``trainhub_exporter_source_errors``, the others still export."""
    from trainhub.errors import TrainhubError

    records: list[JobRecord] = []
    usage: dict[str, UsageGroup] = {}
    errors: list[str] = []
    for backend in backends:
        try:
            records += all_records(backend, user=user)
        except (TrainhubError, OSError) as e:
            errors.append(f"{backend.name}: {e}")
            continue
        try:
            groups = backend.usage(UsageBy.TEAM, 0.0, user=user)
        except (TrainhubError, OSError) as e:
            errors.append(f"{backend.name} usage: {e}")
            continue
        for g in groups:
            key = "" if g.key == "-" else g.key
            seen = usage.get(key)
            usage[key] = g.model_copy(update={"key": key}) if seen is None else _add(seen, g)
    return Snapshot(records, list(usage.values()), sessions, per_job, errors)


def _add(a: UsageGroup, b: UsageGroup) -> UsageGroup:
    return a.model_copy(
        update={n: getattr(a, n) + getattr(b, n) for n in UsageGroup.model_fields if n != "key"}
    )
