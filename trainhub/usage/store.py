"""The usage rows of ended jobs, kept in a SQLite table beside the jobs, and the report over
them: one ``GROUP BY`` over an index on the end time that holds every summed column (and
indexes by user and by team), so a report over 100,000 jobs stays within 200 ms.

The table lives in whatever database the backend keeps (the local backend's store); the rows
are a cache of what :func:`trainhub.usage.compute.job_usage` derives from a job's record and
directory, so :meth:`UsageStore.record` may run again for the same job at any time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from trainhub.usage.compute import UsageRow
from trainhub.usage.models import UsageBy, UsageGroup

SCHEMA = """
CREATE TABLE IF NOT EXISTS usage (
    job_id                 TEXT PRIMARY KEY,
    user                   TEXT NOT NULL,
    team                   TEXT NOT NULL,
    pool                   TEXT NOT NULL,
    state                  TEXT NOT NULL,
    failure_class          TEXT,
    gpus                   INTEGER NOT NULL,
    created_at             REAL NOT NULL,
    admitted_at            REAL,
    started_at             REAL,
    finished_at            REAL NOT NULL,
    day                    TEXT NOT NULL,
    wall_s                 REAL NOT NULL,
    queue_wait_s           REAL NOT NULL,
    gpu_allocated_s        REAL NOT NULL,
    gpu_busy_s             REAL NOT NULL,
    gpu_waste_s            REAL NOT NULL,
    gpu_sampled_s          REAL NOT NULL,
    cpu_s                  REAL NOT NULL,
    attempts               INTEGER NOT NULL,
    retries                INTEGER NOT NULL,
    waste_utilization_pct  REAL NOT NULL,
    goodput                REAL,
    goodput_allocated_s    REAL NOT NULL,
    gpu_productive_s       REAL NOT NULL,
    gpu_startup_s          REAL NOT NULL,
    gpu_checkpoint_s       REAL NOT NULL,
    gpu_redone_s           REAL NOT NULL,
    gpu_interrupted_s      REAL NOT NULL,
    gpu_data_wait_s        REAL NOT NULL,
    requeue_s              REAL NOT NULL,
    steps                  INTEGER NOT NULL,
    redone_steps           INTEGER NOT NULL,
    productive_s           REAL NOT NULL,
    startup_s              REAL NOT NULL,
    checkpoint_s           REAL NOT NULL,
    redone_s               REAL NOT NULL,
    interrupted_s          REAL NOT NULL,
    data_wait_s            REAL NOT NULL
);
-- Covers every report over all users: a range of end times read from the index alone.
CREATE INDEX IF NOT EXISTS usage_report ON usage (
    finished_at, user, team, pool, day, state, gpu_allocated_s, gpu_busy_s, gpu_waste_s, cpu_s,
    wall_s, queue_wait_s, retries, goodput_allocated_s, gpu_productive_s, gpu_redone_s
);
CREATE INDEX IF NOT EXISTS usage_by_user ON usage (user, finished_at);
CREATE INDEX IF NOT EXISTS usage_by_team ON usage (team, finished_at);
"""

_COLUMNS = tuple(UsageRow.__dataclass_fields__)
_UPSERT = (
    f"INSERT OR REPLACE INTO usage ({', '.join(_COLUMNS)})"
    f" VALUES ({', '.join(f':{c}' for c in _COLUMNS)})"
)
# Group keys as SQL; an empty team or pool reads "-" in the report.
_KEYS = {
    UsageBy.USER: "user",
    UsageBy.TEAM: "team",
    UsageBy.POOL: "pool",
    UsageBy.DAY: "day",
}
_SUMS = (
    "COUNT(*), SUM(state = 'succeeded'), SUM(state = 'failed'), SUM(state = 'cancelled'),"
    " SUM(gpu_allocated_s), SUM(gpu_busy_s), SUM(gpu_waste_s), SUM(cpu_s), SUM(wall_s),"
    " SUM(queue_wait_s), SUM(retries),"
    " SUM(goodput_allocated_s), SUM(gpu_productive_s), SUM(gpu_redone_s)"
)
_GROUP_FIELDS = (
    "jobs",
    "succeeded",
    "failed",
    "cancelled",
    "gpu_allocated_s",
    "gpu_busy_s",
    "gpu_waste_s",
    "cpu_s",
    "wall_s",
    "queue_wait_s",
    "retries",
    "goodput_allocated_s",
    "gpu_productive_s",
    "gpu_redone_s",
)


class UsageStore:
    """Usage rows over a connection the caller provides (one per thread, as the store's)."""

    def __init__(self, connection: Callable[[], sqlite3.Connection]):
        """Creates the table and its indexes when missing; never inside a transaction
        (``executescript`` commits whatever is open)."""
        self._connection = connection
        conn = self._connection()
        have = {r[1] for r in conn.execute("PRAGMA table_info(usage)")}
        if have and set(_COLUMNS) - have:
            # The rows are a cache of what the job directories say: a table from before a
            # column existed is dropped, and the next report derives every row again.
            conn.execute("DROP TABLE usage")
        conn.executescript(SCHEMA)

    def record(self, rows: Iterable[UsageRow], conn: sqlite3.Connection | None = None) -> int:
        """Write (or rewrite) rows; returns how many."""
        data = [row.as_dict() for row in rows]
        (conn or self._connection()).executemany(_UPSERT, data)
        return len(data)

    def recorded(self, job_ids: Sequence[str]) -> set[str]:
        """Which of ``job_ids`` have a row."""
        found: set[str] = set()
        conn = self._connection()
        for i in range(0, len(job_ids), 500):
            part = job_ids[i : i + 500]
            marks = ", ".join("?" for _ in part)
            found.update(
                r[0]
                for r in conn.execute(f"SELECT job_id FROM usage WHERE job_id IN ({marks})", part)
            )
        return found

    def count(self) -> int:
        return int(self._connection().execute("SELECT COUNT(*) FROM usage").fetchone()[0])

    def row(self, job_id: str) -> dict[str, Any] | None:
        cur = self._connection().execute("SELECT * FROM usage WHERE job_id = ?", (job_id,))
        found = cur.fetchone()
        return (
            None
            if found is None
            else dict(zip([c[0] for c in cur.description], found, strict=True))
        )

    def report(
        self,
        by: UsageBy,
        since: float,
        *,
        user: str | None = None,
        team: str | None = None,
    ) -> list[UsageGroup]:
        """Sums per group of the jobs that ended at or after ``since`` (only ``user``'s, only
        ``team``'s when given), largest GPU allocation first."""
        key = _KEYS[by]
        where, args = self._scope(since, user, team)
        order = "key" if by == UsageBy.DAY else "SUM(gpu_allocated_s) DESC, key"
        # Over every user the covering index is read alone; the planner would rather walk the
        # index of the group's column to skip a sort, and look up every row in the table.
        source = "usage" if user or team else "usage INDEXED BY usage_report"
        rows = self._connection().execute(
            f"SELECT {key} AS key, {_SUMS} FROM {source} WHERE {where}"
            f" GROUP BY {key} ORDER BY {order}",
            args,
        )
        return [
            UsageGroup(key=k or "-", **dict(zip(_GROUP_FIELDS, sums, strict=True)))
            for k, *sums in rows
        ]

    # --- the Usage panel's questions (trainhub.usage.panel) ---------------------------------
    @staticmethod
    def _scope(since: float, user: str | None, team: str | None) -> tuple[str, list[Any]]:
        terms, args = ["finished_at >= ?"], [since]
        if user is not None:
            terms.append("user = ?")
            args.append(user)
        if team is not None:
            terms.append("team = ?")
            args.append(team)
        return " AND ".join(terms), args

    def waits(
        self, since: float, *, user: str | None = None, team: str | None = None
    ) -> list[float]:
        """Queue waits of the jobs that ended since ``since`` and were admitted."""
        where, args = self._scope(since, user, team)
        return [
            float(r[0])
            for r in self._connection().execute(
                f"SELECT queue_wait_s FROM usage WHERE {where} AND admitted_at IS NOT NULL", args
            )
        ]

    def failure_classes(
        self, since: float, *, user: str | None = None, team: str | None = None
    ) -> dict[str, int]:
        """How many of the jobs that ended since ``since`` failed, per failure class."""
        where, args = self._scope(since, user, team)
        rows = self._connection().execute(
            f"SELECT COALESCE(failure_class, 'unknown'), COUNT(*) FROM usage"
            f" WHERE {where} AND state = 'failed' GROUP BY 1",
            args,
        )
        return {k: int(n) for k, n in rows}

    def time_goodput(
        self, since: float, *, user: str | None = None, team: str | None = None
    ) -> float | None:
        """The productive share of the attempts' time of the jobs that logged steps, GPUs or
        not (for a user whose jobs had no GPU time to weigh the share by)."""
        where, args = self._scope(since, user, team)
        productive, total = (
            self._connection()
            .execute(
                "SELECT SUM(productive_s),"
                " SUM(productive_s + startup_s + checkpoint_s + redone_s + interrupted_s"
                " + data_wait_s)"
                f" FROM usage WHERE {where} AND goodput IS NOT NULL",
                args,
            )
            .fetchone()
        )
        return productive / total if total else None

    def most_wasteful(
        self, since: float, *, user: str | None = None, limit: int = 5
    ) -> list[dict[str, Any]]:
        """The jobs that lost the most GPU time (idle under the waste threshold, or not kept as
        progress), worst first; among jobs without GPUs, the lowest goodput first."""
        where, args = self._scope(since, user, None)
        lost = (
            "MAX(gpu_waste_s, CASE WHEN goodput IS NULL THEN 0"
            " ELSE gpu_allocated_s - gpu_productive_s END)"
        )
        cur = self._connection().execute(
            "SELECT job_id, state, finished_at, gpus, gpu_allocated_s, gpu_waste_s, goodput,"
            " productive_s, startup_s, checkpoint_s, redone_s, interrupted_s, data_wait_s"
            f" FROM usage WHERE {where} AND ({lost} > 0 OR goodput < 1)"
            f" ORDER BY {lost} DESC, COALESCE(goodput, 1), finished_at DESC LIMIT ?",
            [*args, limit],
        )
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur]
