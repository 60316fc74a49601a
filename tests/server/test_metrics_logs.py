"""What the Metrics and Logs tabs read over REST from a real job: CPU and memory of each rank's
processes and of the machine (metrics/system.jsonl), and a rank log whose cells follow their
markers with trainhub's own lines marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.server.conftest import spec
from tests.server.test_jobs import wait_for_state
from trainhub.rank.logmarks import PREFIX, parse_cell_start


async def test_system_metrics_and_marked_logs_of_a_real_job(api: Any, workspace: Path) -> None:
    nbformat.write(
        new_notebook(
            cells=[
                new_code_cell("import time\nprint('warming up', flush=True)"),
                new_code_cell("x = sum(range(10**6))\ntime.sleep(3)\nprint('done', x)"),
            ]
        ),
        workspace / "busy.ipynb",
    )
    status, job, _ = await api("POST", "jobs", body=spec("busy.ipynb"))
    assert status == 201, job
    job = await wait_for_state(api, job["id"], {"succeeded", "failed"})
    assert job["state"] == "succeeded", job["verdict"]

    status, page, _ = await api("GET", "jobs", job["id"], "metrics", "system")
    assert status == 200
    ranks = [r for r in page["records"] if r["rank"] is not None]
    machine = [r for r in page["records"] if r["rank"] is None]
    assert {r["rank"] for r in ranks} == {0}
    assert all(r["rss_bytes"] > 0 and r["pid"] > 0 for r in ranks)
    # The first reading of a process has no interval to measure CPU over; later ones do.
    assert ranks[0]["cpu_percent"] is None
    assert any(isinstance(r["cpu_percent"], float) for r in ranks[1:]), ranks
    assert machine and all(0 < r["memory_used"] <= r["memory_total"] for r in machine)
    assert all(0 <= r["cpu_percent"] <= 100 for r in machine)
    assert page["next_offset"] > 0

    status, log, _ = await api("GET", "jobs", job["id"], "logs", "0")
    assert status == 200
    lines = log["text"].splitlines()
    cells = [(i, parse_cell_start(line)) for i, line in enumerate(lines)]
    cells = [(i, m[0]) for i, m in cells if m]
    assert [n for _, n in cells] == [1, 2]
    assert lines[cells[0][0] + 1] == "warming up"
    assert lines[cells[1][0] + 1] == "done 499999500000"
    own = [line for line in lines if line.startswith(PREFIX)]
    assert set(lines) - set(own) == {"warming up", "done 499999500000"}
