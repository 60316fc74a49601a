"""Schedule firing delay on the local backend: scheduled time -> job submitted.

``schedules`` schedules of a tiny notebook, every minute (``* * * * *``), are created through
the job service, which starts the real local scheduler (``trainhub scheduler``, detached);
for ``minutes`` minutes it fires them all at each minute. A run's delay is its job's
``created_at`` (the row the submit wrote) minus its scheduled time. Side by side, the peer: a
plain loop in this process that sleeps until the same minutes and submits the same notebook
as many times through the same ``JobService.submit`` — the floor a scheduler adds to.
Target: p95 <= 5 s.

    python benchmarks/schedule_firing.py [schedules] [minutes]
"""

from __future__ import annotations

import getpass
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import print_table
from trainhub.backends.local.backend import LocalBackend
from trainhub.jobs.filter import EVERY_JOB
from trainhub.jobs.service import JobService
from trainhub.schedules import local

TARGET_P95_S = 5.0


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _peer(service: JobService, spec: dict[str, Any], count: int, minutes: int) -> list[float]:
    """Sleep until each minute and submit ``count`` jobs: their delays."""
    delays = []
    due = (time.time() // 60 + 1) * 60
    for _ in range(minutes):
        time.sleep(max(0.0, due - time.time()))
        for _ in range(count):
            job = service.submit(spec, user=getpass.getuser())
            delays.append(service.backend.get(job.id).created_at - due)
        due += 60
    return delays


def run(schedules: int = 5, minutes: int = 4) -> list[dict[str, Any]]:
    # Cancelled jobs may still be writing their directories as it is removed.
    with tempfile.TemporaryDirectory(prefix="trainhub-bench-", ignore_cleanup_errors=True) as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "ws"
        workspace.mkdir()
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("print('tick')")]
        nbformat.write(nb, workspace / "tick.ipynb")
        os.environ.update(TRAINHUB_HOME=str(home), TRAINHUB_GPUS="0")
        backend = LocalBackend(home)
        service = JobService(backend, workspace_root=workspace, jobs_root=backend.jobs_root)
        local.attach(service, home)
        spec = {"name": "tick", "source": {"path": "tick.ipynb"}}
        ids = [
            service.schedules.create(
                {
                    "name": f"tick{i}",
                    "target": {"kind": "notebook", "job": spec},
                    "cron": "* * * * *",
                    "concurrency": "allow",
                },
                user=getpass.getuser(),
            ).id
            for i in range(schedules)
        ]
        started = time.time()
        peer: list[float] = []
        thread = threading.Thread(
            target=lambda: peer.extend(_peer(service, spec, schedules, minutes))
        )
        thread.start()
        thread.join()
        time.sleep(5)  # the last minute's runs noted
        delays = []
        for sid in ids:
            record = service.schedules.records.get(sid)
            assert record is not None
            for r in record.runs:
                if r.job_id is not None and r.at is not None and r.at > started:
                    delays.append(backend.get(r.job_id).created_at - r.at)
        for sid in ids:
            service.schedules.delete(sid, user=getpass.getuser())
        for job in backend.list_jobs(EVERY_JOB, limit=1000):
            if not job.state.terminal:
                backend.cancel(job.id, "the benchmark is over")
        deadline = time.time() + 60
        while time.time() < deadline and any(
            not j.state.terminal for j in backend.list_jobs(EVERY_JOB, limit=1000)
        ):
            backend.reconcile()
            time.sleep(1)
    rows = []
    for name, values in (("local scheduler", delays), ("peer: a sleep-and-submit loop", peer)):
        rows.append(
            {
                "firing delay (scheduled -> submitted)": name,
                "fires": len(values),
                "p50 s": f"{statistics.median(values):.2f}",
                "p95 s": f"{_p(values, 0.95):.2f}",
                "max s": f"{max(values):.2f}",
                "target p95 s": "" if name.startswith("peer") else f"<= {TARGET_P95_S:.0f}",
            }
        )
    return rows


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print_table("schedule_firing", run(*args))
