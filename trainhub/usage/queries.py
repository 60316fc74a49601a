"""The usage a front door answers, asked of a backend's usage store: the usage report
(``trainhub usage``, ``GET trainhub/api/usage``) and a signed-in user's Usage panel, each
holding only what that user may see."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from trainhub import settings
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.states import JobState
from trainhub.usage.models import UsageBy, UsageQuery, UsageReport, UsageScope, since_time
from trainhub.usage.panel import MONTH_DAYS, UsagePanel, panel, period_starts

if TYPE_CHECKING:
    from trainhub.backends.base import Backend


def usage_report(
    backend: Backend, query: UsageQuery, *, user: str | None, team: str | None, recompute: bool
) -> UsageReport:
    """``query``'s report: ``user``'s own jobs, or ``team``'s totals grouped by team; every
    job without ``user``."""
    since = since_time(query.since)
    if user is not None and query.by == UsageBy.TEAM:
        if team is None:  # no team of one's own: one's own jobs by the team they named
            groups = backend.usage(query.by, since, user=user)
        else:
            groups = backend.usage(query.by, since, team=team)
    else:
        groups = backend.usage(query.by, since, user=user, recompute=recompute)
    return UsageReport(
        by=query.by,
        since=since,
        waste_utilization_pct=settings.waste_utilization_pct(),
        groups=groups,
    )


def usage_panel(backend: Backend, *, user: str, team: str | None) -> UsagePanel:
    """``user``'s Usage panel now, with ``team``'s totals when given."""
    now = time.time()
    since = min(period_starts(now)[1], now - MONTH_DAYS * 86400)
    quotas, source = backend.quotas()
    queued = [JobState.QUEUED]
    with backend.usage_rows(UsageScope(since, None if team else user, team)) as rows:
        return panel(
            rows,
            user=user,
            team=team,
            now=now,
            quotas=quotas,
            quota_source=source,
            waiting=backend.count(JobFilter(states=queued)),
            waiting_mine=backend.count(JobFilter(user=user, states=queued)),
            waste_utilization_pct=settings.waste_utilization_pct(),
        )
