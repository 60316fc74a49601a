"""Latency of GET trainhub/api/jobs?limit=50 with 10,000 jobs, through the real server.

10,000 jobs are inserted into the store directly (no processes): mostly finished, 150 queued
(each of which the list explains: wait reason and position) and 50 running. A real Jupyter
server with the trainhub extension answers ~200 sequential requests per case; side by side:
the first page, a state filter, a deep page (keyset paging), and the same first page read
from the service in-process (no HTTP), which shows what the server adds.
Target: p95 of the first page <= 50 ms.

    python benchmarks/list_endpoint.py [jobs] [requests]
"""

from __future__ import annotations

import getpass
import json
import random
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from log_latency import JupyterServer, percentile, print_table

from trainhub.backends.local.backend import LocalBackend
from trainhub.backends.local.store_rows import LocalJob
from trainhub.jobs.models import JobRecord, ListJobsQuery
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState

TARGET_P95_MS = 50.0
QUEUED, RUNNING = 150, 50


def insert_jobs(
    backend: LocalBackend, jobs_root: Path, count: int, supervisor: psutil.Process
) -> None:
    """``count`` jobs of this user in one transaction; job directories are not needed to list."""
    rng = random.Random(7)
    user = getpass.getuser()
    spec = parse_spec({"name": "bench", "source": {"path": "bench.ipynb"}})
    now = time.time()
    finished = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)
    # Spread the unfinished jobs over the newest ones, where the first page looks.
    unfinished = dict.fromkeys(rng.sample(range(count - 500, count), QUEUED + RUNNING))
    kinds = [JobState.QUEUED] * QUEUED + [JobState.RUNNING] * RUNNING
    for i, state in zip(unfinished, kinds, strict=True):
        unfinished[i] = state
    with backend.store.transaction() as conn:
        for i in range(count):
            state = unfinished.get(i) or rng.choice(finished)
            job_id = f"bench-{i:05d}-{secrets.token_hex(2)}"
            running = state == JobState.RUNNING
            backend.store.insert(
                conn,
                JobRecord(
                    id=job_id,
                    name="bench",
                    user=user,
                    priority=rng.choice((0, 1, 2)),
                    state=state,
                    spec=spec,
                    job_dir=str(jobs_root / job_id),
                    gpus=0,
                    created_at=now - (count - i),
                    started_at=now - (count - i),
                    finished_at=None if state in (JobState.QUEUED, JobState.RUNNING) else now,
                ),
                LocalJob(
                    slots=1,
                    supervisor_pid=supervisor.pid if running else None,
                    supervisor_start=supervisor.create_time() if running else None,
                ),
            )


def timed(fn: Callable[[], Any], requests: int) -> dict[str, float]:
    fn()  # warm up
    samples = []
    for _ in range(requests):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return {
        "p50 ms": round(percentile(samples, 0.5), 2),
        "p95 ms": round(percentile(samples, 0.95), 2),
        "max ms": round(max(samples), 2),
    }


def run(jobs: int = 10_000, requests: int = 200) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-") as tmp:
        home, root = Path(tmp) / "home", Path(tmp) / "root"
        home.mkdir()
        root.mkdir()
        stand_in = subprocess.Popen(["sleep", "3600"])
        backend = LocalBackend(home, slots=4)
        try:
            insert_jobs(backend, home / "jobs", jobs, psutil.Process(stand_in.pid))
            service = JobService(backend, workspace_root=root, jobs_root=home / "jobs")
            rows = []
            # reconcile off: it would launch the queued jobs, which have nothing to run.
            with JupyterServer(
                home, root, reconcile_interval=0, backend_kwargs={"slots": 4}
            ) as server:
                first = server.get("trainhub/api/jobs?limit=50")
                assert len(first["jobs"]) == 50 and first["total"] == jobs, first["total"]
                middle = first["jobs"][0]["seq"] - jobs // 2
                cases: list[tuple[str, Callable[[], Any]]] = [
                    ("GET jobs?limit=50", lambda: server.get("trainhub/api/jobs?limit=50")),
                    (
                        "GET jobs?state=queued&limit=50",
                        lambda: server.get("trainhub/api/jobs?state=queued&limit=50"),
                    ),
                    (
                        "GET jobs?limit=50&before=<middle>",
                        lambda: server.get(f"trainhub/api/jobs?limit=50&before={middle}"),
                    ),
                    (
                        "service.list_jobs(limit=50), in-process",
                        lambda: service.list_jobs(ListJobsQuery(limit=50), user=getpass.getuser()),
                    ),
                ]
                for name, fn in cases:
                    rows.append(
                        {"case": name, "jobs": jobs, "requests": requests, **timed(fn, requests)}
                    )
        finally:
            stand_in.kill()
            stand_in.wait()
            backend.close()
    base = rows[-1]["p50 ms"]
    for row in rows:
        row["p50 / in-process"] = round(row["p50 ms"] / base, 1) if base else None
    return rows


def run_from_argv(
    measure: Callable[[int, int], list[dict[str, Any]]],
) -> tuple[int, list[dict[str, Any]]]:
    """``measure(jobs, requests)`` with the command line's ``[jobs] [requests]`` (10,000 and 200
    by default), its table printed: the number of jobs and the rows."""
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    requests = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rows = measure(jobs, requests)
    print_table(rows)
    return jobs, rows


def main() -> None:
    jobs, rows = run_from_argv(run)
    p95 = rows[0]["p95 ms"]
    verdict = "meets" if p95 <= TARGET_P95_MS else "MISSES"
    print(
        f"\nfirst page p95 {p95} ms with {jobs} jobs: "
        f"{verdict} the <= {TARGET_P95_MS:.0f} ms target"
    )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
