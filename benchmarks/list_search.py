"""Latency of GET trainhub/api/jobs?limit=50 with 10,000 jobs, with and without a search term,
through the real server.

10,000 finished jobs of this user are inserted into the store directly (no processes), named,
tagged and given parameters the way sweeps make them (``sweep-lr-<n>``, ``lr``, ``batch``,
``optimizer``). Side by side in one run: the first page, a search every job matches, a search
a few hundred match (a parameter value), one that only 10 jobs match (the whole index is
scanned), one that matches none, a search with a state filter, and the searched page read from
the service in-process (no HTTP). Ratios are to the unsearched first page.
Targets: p95 of the first page <= 30 ms; with a search term <= 50 ms.

    python benchmarks/list_search.py [jobs] [requests]
"""

from __future__ import annotations

import getpass
import json
import random
import secrets
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from list_endpoint import run_from_argv, timed
from log_latency import JupyterServer

from trainhub.backends.local.backend import LocalBackend
from trainhub.jobs.models import JobRecord, ListJobsQuery
from trainhub.jobs.service import JobService
from trainhub.jobs.spec import parse_spec
from trainhub.jobs.states import JobState

TARGET_PAGE_MS = 30.0
TARGET_SEARCH_MS = 50.0
RARE = 10  # jobs tagged "rare"


def insert_jobs(backend: LocalBackend, jobs_root: Path, count: int) -> None:
    """``count`` ended jobs of this user, in one transaction."""
    rng = random.Random(11)
    user = getpass.getuser()
    now = time.time()
    rare = set(rng.sample(range(count), RARE))
    ended = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)
    with backend.store.transaction() as conn:
        for i in range(count):
            parameters = {
                "lr": rng.choice((0.1, 0.03, 0.01, 0.003, 0.001, 0.0003)),
                "batch": rng.choice((32, 64, 128, 256)),
                "optimizer": rng.choice(("adam", "sgd", "adamw")),
                "epochs": rng.randint(1, 400),
            }
            tags = ["rare"] if i in rare else [rng.choice(("baseline", "ablation", "sweep"))]
            name = f"sweep-lr-{i % 100}"
            spec = parse_spec(
                {"name": name, "source": {"path": "bench.ipynb"}, "parameters": parameters}
            )
            job_id = f"{name}-{secrets.token_hex(4)}"
            backend.store.insert(
                conn,
                JobRecord(
                    id=job_id,
                    name=name,
                    user=user,
                    priority=1,
                    state=rng.choice(ended),
                    spec=spec,
                    job_dir=str(jobs_root / job_id),
                    gpus=0,
                    created_at=now - (count - i),
                    started_at=now - (count - i),
                    finished_at=now,
                    tags=tags,
                ),
            )


def run(jobs: int = 10_000, requests: int = 200) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-") as tmp:
        home, root = Path(tmp) / "home", Path(tmp) / "root"
        home.mkdir()
        root.mkdir()
        backend = LocalBackend(home, slots=4)
        try:
            insert_jobs(backend, home / "jobs", jobs)
            service = JobService(backend, workspace_root=root, jobs_root=home / "jobs")
            user = getpass.getuser()
            rows = []
            with JupyterServer(
                home, root, reconcile_interval=0, backend_kwargs={"slots": 4}
            ) as server:

                def page(query: str) -> Callable[[], Any]:
                    return lambda: server.get(f"trainhub/api/jobs?limit=50{query}")

                rare = server.get("trainhub/api/jobs?limit=50&q=rare")
                assert rare["total"] == RARE, rare["total"]
                cases: list[tuple[str, Callable[[], Any]]] = [
                    ("GET jobs?limit=50", page("")),
                    ("GET jobs?limit=50&q=sweep (every job)", page("&q=sweep")),
                    ("GET jobs?limit=50&q=epochs=7 (a few)", page("&q=epochs%3D7")),
                    (f"GET jobs?limit=50&q=rare ({RARE} jobs)", page("&q=rare")),
                    ("GET jobs?limit=50&q=nothing (none)", page("&q=nothing")),
                    (
                        "GET jobs?limit=50&q=adam lr=0.001&state=failed",
                        page("&q=adam%20lr%3D0.001&state=failed"),
                    ),
                    (
                        "service.list_jobs(q=rare), in-process",
                        lambda: service.list_jobs(
                            ListJobsQuery(limit=50, search="rare"), user=user
                        ),
                    ),
                ]
                for name, fn in cases:
                    rows.append(
                        {"case": name, "jobs": jobs, "requests": requests, **timed(fn, requests)}
                    )
        finally:
            backend.close()
    base = rows[0]["p95 ms"]
    for row in rows:
        row["p95 / first page"] = round(row["p95 ms"] / base, 2) if base else None
    return rows


def main() -> None:
    jobs, rows = run_from_argv(run)
    page = rows[0]["p95 ms"]
    search = max(r["p95 ms"] for r in rows[1:-1])
    for what, p95, target in (
        ("first page", page, TARGET_PAGE_MS),
        ("slowest search", search, TARGET_SEARCH_MS),
    ):
        verdict = "meets" if p95 <= target else "MISSES"
        print(f"{what} p95 {p95} ms with {jobs} jobs: {verdict} the <= {target:.0f} ms target")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
