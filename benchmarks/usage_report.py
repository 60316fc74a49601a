"""Latency of the usage report (`trainhub usage`) over 100,000 ended jobs.

100,000 jobs and their usage rows are written into a local store directly (no processes),
spread over 90 days, 40 users, 6 teams and 3 pools. Each case runs the report the way
`trainhub usage` does (``LocalBackend.usage``: the backfill check for ended jobs without a
row, then one GROUP BY), 50 times. Side by side, the peer: the same report by user computed by
a plain Python loop over every row read from the table. Target: p95 <= 200 ms.

    python benchmarks/usage_report.py [jobs] [repeats]
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import print_table
from trainhub.backends.local.backend import LocalBackend
from trainhub.backends.local.store import Store
from trainhub.jobs.spec import parse_spec
from trainhub.usage.compute import UsageRow
from trainhub.usage.models import UsageBy, since_time, utc_day
from trainhub.usage.store import UsageStore

TARGET_P95_MS = 200.0
DAY = 86400.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fill(store: Store, count: int) -> None:
    """``count`` ended jobs and their usage rows, in one transaction."""
    rng = random.Random(7)
    spec = json.dumps(
        parse_spec({"name": "bench", "source": {"path": "bench.py", "kind": "script"}}).model_dump(
            mode="json"
        )
    )
    now = time.time()
    users = [f"user{i:02d}" for i in range(40)]
    teams = ["vision", "nlp", "speech", "rl", "infra", ""]
    states = ("succeeded", "failed", "cancelled")
    jobs, rows = [], []
    for i in range(count):
        end = now - rng.uniform(0, 90 * DAY)
        start = end - rng.uniform(10, 8 * 3600)
        created = start - rng.uniform(0, 3600)
        gpus = rng.choice((0, 1, 2, 4, 8))
        user, team, state = rng.choice(users), rng.choice(teams), rng.choice(states)
        allocated = gpus * (end - start)
        busy = allocated * rng.random()
        jobs.append(
            (
                f"job-{i}",
                "bench",
                user,
                team,
                1,
                state,
                spec,
                f"/jobs/job-{i}",
                gpus,
                created,
                created + 1,
                start,
                end,
                now,
            )
        )
        rows.append(
            UsageRow(
                job_id=f"job-{i}",
                user=user,
                team=team,
                pool=rng.choice(("a100", "h100", "cpu")),
                state=state,
                failure_class=None if state == "succeeded" else "code",
                gpus=gpus,
                created_at=created,
                admitted_at=created + 1,
                started_at=start,
                finished_at=end,
                day=utc_day(end),
                wall_s=end - start,
                queue_wait_s=start - created,
                gpu_allocated_s=allocated,
                gpu_busy_s=busy,
                gpu_waste_s=(allocated - busy) / 2,
                gpu_sampled_s=allocated,
                cpu_s=rng.uniform(0, 4) * (end - start),
                attempts=1,
                retries=rng.randint(0, 2),
                waste_utilization_pct=10.0,
                # Most jobs log steps: their goodput columns are summed too.
                **(goodput_parts(rng, allocated) if rng.random() < 0.7 else {}),
            )
        )
    usage = UsageStore(store.connection)
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO jobs (id, name, user, team, priority, state, spec, job_dir, gpus,"
            " created_at, admitted_at, started_at, finished_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            jobs,
        )
        usage.record(rows, conn)


def goodput_parts(rng: random.Random, allocated: float) -> dict[str, float]:
    startup, checkpoint, redone = (allocated * rng.uniform(0, 0.1) for _ in range(3))
    productive = allocated - startup - checkpoint - redone
    return {
        "goodput": productive / allocated if allocated else 0.0,
        "goodput_allocated_s": allocated,
        "gpu_productive_s": productive,
        "gpu_startup_s": startup,
        "gpu_checkpoint_s": checkpoint,
        "gpu_redone_s": redone,
        "redone_steps": rng.randint(0, 50),
    }


def python_loop(conn: sqlite3.Connection, since: float) -> dict[str, list[float]]:
    """The peer: every row read, the report by user summed in Python."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0] * 8)
    for user, finished, alloc, busy, waste, cpu, wall, wait, retries in conn.execute(
        "SELECT user, finished_at, gpu_allocated_s, gpu_busy_s, gpu_waste_s, cpu_s, wall_s,"
        " queue_wait_s, retries FROM usage"
    ):
        if finished < since:
            continue
        group = sums[user]
        for k, v in enumerate((1, alloc, busy, waste, cpu, wall, wait, retries)):
            group[k] += v
    return sums


def timed(call, repeats: int) -> list[float]:
    call()  # warm: the first call creates the table if needed and fills the page cache
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def run(jobs: int = 100_000, repeats: int = 50) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="trainhub-usage-bench-") as tmp:
        backend = LocalBackend(Path(tmp), slots=4)
        started = time.perf_counter()
        fill(backend.store, jobs)
        print(f"{jobs} jobs written in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        since = since_time("30d")
        cases = [
            (f"report by {by.value}, 30d", lambda by=by: backend.usage(by, since)) for by in UsageBy
        ]
        cases.append(("report by user, all 90 days", lambda: backend.usage(UsageBy.USER, 0.0)))
        cases.append(
            (
                "one user's report by day (REST)",
                lambda: backend.usage(UsageBy.DAY, since, user="user07"),
            )
        )
        results = {name: timed(call, repeats) for name, call in cases}
        results["peer: Python loop by user, 30d"] = timed(
            lambda: python_loop(backend.store.connection(), since), max(5, repeats // 5)
        )
        # The two agree (the peer is a check as much as a yardstick).
        sql = {g.key: g.gpu_allocated_s for g in backend.usage(UsageBy.USER, since)}
        loop = {k: v[1] for k, v in python_loop(backend.store.connection(), since).items()}
        assert sql.keys() == loop.keys()
        assert all(abs(sql[k] - loop[k]) <= 1e-6 * max(1.0, loop[k]) for k in sql)
        backend.close()
    peer = percentile(results["peer: Python loop by user, 30d"], 0.95)
    rows = []
    for name, ms in results.items():
        p95 = percentile(ms, 0.95)
        rows.append(
            {
                "case": name,
                "jobs": jobs,
                "p50 ms": f"{percentile(ms, 0.5):.1f}",
                "p95 ms": f"{p95:.1f}",
                "target p95 ms": "" if name.startswith("peer") else f"{TARGET_P95_MS:.0f}",
                "peer p95 / this p95": f"{peer / p95:.1f}x",
            }
        )
    return rows


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print_table("usage_report", run(*args))
