"""The Usage panel's one answer: a signed-in user's and their team's GPU-hours, the team's
quota per pool now, the queue, failures by class and the user's most wasteful jobs.

Pure: the usage store (whichever the backend gives), the quotas and the queue count in, a
:class:`UsagePanel` out; the quotas come from the local admission's capacity or a Kueue
ClusterQueue (:func:`local_quotas`, :func:`cluster_queue_quotas`).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from pydantic import BaseModel, Field

from trainhub.metrics.gpushare import SessionGpu
from trainhub.usage.models import UsageBy, utc_day
from trainhub.usage.store import UsageStore

GPU_RESOURCE = "nvidia.com/gpu"
MONTH_DAYS = 30  # the failure rate, the waits and the daily chart look this far back
WASTEFUL = 5


class PoolQuota(BaseModel):
    """One resource of one pool (a Kueue flavor; the local machine), in its own unit."""

    pool: str
    resource: str = Field(description="nvidia.com/gpu, cpu, ... (local: gpus, cpu slots)")
    used: float
    nominal: float | None = Field(None, description="The quota (local: what the machine has)")
    borrowed: float = Field(0.0, description="In use beyond the nominal quota, from the cohort")
    lendable: float | None = Field(
        None, description="Nominal quota not in use that the cohort may borrow now"
    )


class Hours(BaseModel):
    week: float = Field(description="GPU-hours of the jobs that ended this UTC week (from Monday)")
    month: float = Field(description="GPU-hours of the jobs that ended this UTC month")


class DayHours(BaseModel):
    day: str
    mine: float
    team: float | None = None


class FailureShare(BaseModel):
    failure_class: str
    jobs: int
    rate: float = Field(description="Share of the period's ended jobs")


class WastefulJob(BaseModel):
    """A job and where its time went (seconds of its attempts; x ``gpus`` for GPU time)."""

    job_id: str
    state: str
    finished_at: float
    gpus: float
    gpu_allocated_s: float
    gpu_waste_s: float
    goodput: float | None
    productive_s: float
    startup_s: float
    checkpoint_s: float
    redone_s: float
    interrupted_s: float
    data_wait_s: float = 0.0


class UsagePanel(BaseModel):
    user: str
    team: str | None
    now: float
    week_start: float
    month_start: float
    mine: Hours
    team_hours: Hours | None = None
    daily: list[DayHours] = Field(default_factory=list, description="The last 30 UTC days")
    quotas: list[PoolQuota] = Field(default_factory=list)
    quota_source: str = Field(description="local admission, or the ClusterQueue's name")
    waiting: int = Field(description="Jobs queued now (the team's, else the machine's)")
    waiting_mine: int
    typical_wait_s: float | None = Field(
        None, description="Median queue wait of the jobs that ended in the last 30 days"
    )
    ended_30d: int
    failures: list[FailureShare] = Field(default_factory=list)
    goodput_30d: float | None = Field(
        None,
        description="The user's goodput over 30 days: of their GPU time, else (no GPU time) of "
        "their attempts' time",
    )
    wasteful: list[WastefulJob] = Field(default_factory=list)
    waste_utilization_pct: float
    session_gpu: SessionGpu | None = Field(
        None, description="The share of a GPU this session holds, and others' memory on it"
    )


def period_starts(now: float) -> tuple[float, float]:
    """(Monday 00:00 UTC of this week, the 1st 00:00 UTC of this month)."""
    day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    week = day - timedelta(days=day.weekday())
    return week.timestamp(), day.replace(day=1).timestamp()


def _hours(usage: UsageStore, since: float, **scope: str | None) -> float:
    groups = usage.report(UsageBy.USER, since, **scope)  # type: ignore[arg-type]
    return sum(g.gpu_allocated_s for g in groups) / 3600


def panel(
    usage: UsageStore,
    *,
    user: str,
    team: str | None,
    now: float,
    quotas: list[PoolQuota],
    quota_source: str,
    waiting: int,
    waiting_mine: int,
    waste_utilization_pct: float,
) -> UsagePanel:
    week, month = period_starts(now)
    since = now - MONTH_DAYS * 86400
    team_scope = {"team": team} if team else None
    mine_days = {
        g.key: g.gpu_allocated_s / 3600 for g in usage.report(UsageBy.DAY, since, user=user)
    }
    team_days = (
        {g.key: g.gpu_allocated_s / 3600 for g in usage.report(UsageBy.DAY, since, team=team)}
        if team
        else {}
    )
    days = [utc_day(now - i * 86400) for i in range(MONTH_DAYS - 1, -1, -1)]
    scope: dict[str, Any] = team_scope or {"user": user}
    waits = usage.waits(since, **scope)
    classes = usage.failure_classes(since, **scope)
    ended = sum(g.jobs for g in usage.report(UsageBy.USER, since, **scope))
    mine_30d = usage.report(UsageBy.USER, since, user=user)
    return UsagePanel(
        user=user,
        team=team,
        now=now,
        week_start=week,
        month_start=month,
        mine=Hours(week=_hours(usage, week, user=user), month=_hours(usage, month, user=user)),
        team_hours=(
            Hours(week=_hours(usage, week, team=team), month=_hours(usage, month, team=team))
            if team
            else None
        ),
        daily=[
            DayHours(
                day=d, mine=mine_days.get(d, 0.0), team=team_days.get(d, 0.0) if team else None
            )
            for d in days
        ],
        quotas=quotas,
        quota_source=quota_source,
        waiting=waiting,
        waiting_mine=waiting_mine,
        typical_wait_s=statistics.median(waits) if waits else None,
        ended_30d=ended,
        failures=[
            FailureShare(failure_class=c, jobs=n, rate=n / ended if ended else 0.0)
            for c, n in sorted(classes.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        goodput_30d=(
            mine_30d[0].goodput
            if mine_30d and mine_30d[0].goodput is not None
            else usage.time_goodput(since, user=user)
        ),
        wasteful=[WastefulJob(**r) for r in usage.most_wasteful(since, user=user, limit=WASTEFUL)],
        waste_utilization_pct=waste_utilization_pct,
    )


# --- quotas ------------------------------------------------------------------------------------


def local_quotas(gpus: int, gpus_free: int, slots: int, slots_free: int) -> list[PoolQuota]:
    """What the local admission knows: the machine's GPUs and CPU slots, and what is free.
    Nothing is borrowed on one machine; what is free is what another job may take."""
    return [
        PoolQuota(
            pool="local",
            resource=resource,
            used=total - free,
            nominal=total,
            lendable=free,
        )
        for resource, total, free in (("gpus", gpus, gpus_free), ("cpu slots", slots, slots_free))
        if total
    ]


def _amount(value: Any) -> float | None:
    """A Kubernetes quantity as a number in the resource's own unit (``500m`` CPU is 0.5)."""
    from trainhub.jobs.quantities import parse_api_quantity

    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return float(parse_api_quantity(value))
    except ValueError:
        return None


def _not_its_gpus(key: tuple[str, str], own: str, shares: Mapping[str, tuple[str, int]]) -> bool:
    """A GPU resource the flavor lists at quota 0 only because another flavor has it."""
    flavor, resource = key
    if resource in ("cpu", "memory") or resource == own:
        return False
    return flavor in shares or any(resource == s for s, _ in shares.values())


def _per(per_gpu: int, value: float | None) -> float | None:
    return value / per_gpu if value is not None else None


def cluster_queue_quotas(
    cq: dict[str, Any] | None, shares: Mapping[str, tuple[str, int]] | None = None
) -> list[PoolQuota]:
    """Per flavor and resource of a ClusterQueue: used and borrowed (its status), nominal and
    the lending limit (its spec). Lendable: the unused nominal quota, within the lending
    limit when one is set.

    ``shares``: flavor -> (its shared GPU resource, shares per GPU), for pools that share
    their GPUs; their shares are said in GPUs (4 units of 1/4 are 1 GPU, ``nvidia.com/gpu``),
    and the GPU resources a flavor does not have (quota 0, listed because Kueue covers a
    resource for every flavor of the group) are left out."""
    shares = shares or {}
    if not cq:
        return []
    usage: dict[tuple[str, str], tuple[float, float]] = {}
    status = cq.get("status") or {}
    for fu in status.get("flavorsReservation") or status.get("flavorsUsage") or []:
        for r in fu.get("resources") or []:
            usage[(fu.get("name", ""), r.get("name", ""))] = (
                _amount(r.get("total")) or 0.0,
                _amount(r.get("borrowed")) or 0.0,
            )
    out = []
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for r in flavor.get("resources") or []:
                key = (flavor.get("name", ""), r.get("name", ""))
                own_gpus, per_gpu = shares.get(key[0], (GPU_RESOURCE, 1))
                if _not_its_gpus(key, own_gpus, shares):
                    continue
                used, borrowed = usage.get(key, (0.0, 0.0))
                nominal = _amount(r.get("nominalQuota"))
                limit = _amount(r.get("lendingLimit"))
                free = None if nominal is None else max(0.0, nominal - min(used, nominal))
                if free is not None and limit is not None:
                    free = min(free, limit)
                per = per_gpu if key[1] == own_gpus else 1
                unit = partial(_per, per)
                out.append(
                    PoolQuota(
                        pool=key[0],
                        resource=GPU_RESOURCE if per > 1 else key[1],
                        used=unit(used) or 0.0,
                        nominal=unit(nominal),
                        borrowed=unit(borrowed) or 0.0,
                        lendable=unit(free),
                    )
                )
    return out
