"""Usage rows of the local backend's jobs, kept in its store beside the jobs.

The supervisor writes a job's row in the transaction that ends it; whatever else ends a job
(a cancel while queued, a reconcile after a lost supervisor) or ended it before accounting
existed is filled in by :func:`backfill`, which every report runs first.
"""

from __future__ import annotations

import logging

from trainhub.backends.local.store import Store
from trainhub.jobs.filter import JobFilter
from trainhub.jobs.states import TERMINAL_STATES
from trainhub.usage.compute import job_usage
from trainhub.usage.store import UsageStore

log = logging.getLogger(__name__)


def usage_store(store: Store) -> UsageStore:
    return UsageStore(store.connection)


def record_usage(store: Store, job_ids: list[str], *, threshold_pct: float) -> int:
    """Compute and write the rows of these ended jobs (again, when they have one)."""
    rows = []
    for job_id in job_ids:
        record = store.get(job_id)
        if record is None or not record.state.terminal:
            continue
        rows.append(job_usage(record, threshold_pct=threshold_pct))
    if not rows:
        return 0
    usage = usage_store(store)
    with store.transaction() as conn:
        return usage.record(rows, conn)


def backfill(store: Store, *, threshold_pct: float, recompute: bool = False) -> int:
    """Rows for the ended jobs that have none (every ended job with ``recompute``)."""
    usage = usage_store(store)  # the table exists before it is asked about
    if recompute:
        ids = [r.id for r in store.list_jobs(JobFilter(states=list(TERMINAL_STATES)), limit=-1)]
    elif store.count(JobFilter(states=list(TERMINAL_STATES))) == usage.count():
        return 0  # every ended job has its row (two index counts, not a join of both tables)
    else:
        ids = store.ended_without("usage", "job_id")
    return record_usage(store, ids, threshold_pct=threshold_pct)
