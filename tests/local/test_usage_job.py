"""Usage accounting of a real job on the local backend with fake GPUs: the row the supervisor
records as the job ends matches what the job was given and what the fake driver reported."""

from __future__ import annotations

import csv
import io
import re
import sqlite3

import pytest

from tests.fixtures.fake_nvml.fake import FakeNvml
from tests.local.conftest import Trainhub

# Sleeps while the supervisor finds its ranks (long enough for a sampler slowed down by a busy
# machine), then burns CPU time (not wall time) and reports how much the rank used in all.
WORK = """
import time
time.sleep(8)
spin_until = time.process_time() + 1.5
while time.process_time() < spin_until:
    pass
time.sleep(2)
print(f"cpu-seconds {time.process_time():.3f}", flush=True)
"""
SAMPLER_INTERVAL = 1.0


@pytest.fixture
def gpu_env(trainhub_env: Trainhub, fake_nvml: FakeNvml) -> Trainhub:
    """The CLI seeing two fake GPUs: GPU 0 busy at 80 %, GPU 1 idling at 5 %."""
    fake_nvml.set(0, utilization_gpu=80).set(1, utilization_gpu=5)
    env = {k: v for k, v in trainhub_env.env.items() if k != "TRAINHUB_GPUS"}
    env["LD_LIBRARY_PATH"] = fake_nvml.env["LD_LIBRARY_PATH"]
    env["FAKE_NVML_STATE"] = fake_nvml.env["FAKE_NVML_STATE"]
    trainhub_env.env = env
    (trainhub_env.workspace / "work.py").write_text(WORK)
    return trainhub_env


def usage_row(th: Trainhub, job_id: str) -> dict | None:
    with sqlite3.connect(th.home / "trainhub.db") as conn:
        conn.row_factory = sqlite3.Row
        found = conn.execute("SELECT * FROM usage WHERE job_id = ?", (job_id,)).fetchone()
    return None if found is None else dict(found)


def test_a_gpu_job_is_accounted_as_it_ends(gpu_env: Trainhub):
    th = gpu_env
    # Two ranks, one GPU each.
    job = th.wait(th.submit("work.py", "--gpus", "2", "--nproc", "2"))
    assert job["state"] == "succeeded", job
    assert sorted(job["assigned_gpus"]) == [0, 1]
    row = usage_row(th, job["id"])  # written by the supervisor, before any report
    assert row is not None

    runtime = job["finished_at"] - job["started_at"]
    assert (row["gpus"], row["state"], row["failure_class"]) == (2, "succeeded", None)
    assert row["wall_s"] == pytest.approx(runtime)
    admitted = next(e["time"] for e in job["timeline"] if e.get("state") == "starting")
    assert row["queue_wait_s"] == pytest.approx(admitted - job["created_at"], abs=0.1)
    # Allocated: both GPUs from the running state to the end (the sampler's resolution apart).
    assert row["gpu_allocated_s"] == pytest.approx(2 * runtime, abs=2 * SAMPLER_INTERVAL)
    # The sampler ran through the attempt: all of it, but for a tick at either end.
    per_gpu = row["gpu_sampled_s"] / 2
    assert per_gpu == pytest.approx(runtime, abs=2 * SAMPLER_INTERVAL)
    # Busy: 80 % of GPU 0's sampled time plus 5 % of GPU 1's; waste: GPU 1's (5 % < 10 %).
    assert row["gpu_busy_s"] == pytest.approx(0.85 * per_gpu, rel=0.02)
    assert row["gpu_waste_s"] == pytest.approx(per_gpu, rel=0.02)
    assert row["waste_utilization_pct"] == 10

    # CPU: what the ranks say they used, less what they used before the sampler found them.
    used = [
        float(m) for r in (0, 1) for m in re.findall(r"cpu-seconds (\S+)", th.logs(job["id"], r))
    ]
    assert len(used) == 2 and min(used) >= 1.5
    assert 2 * 1.5 - 2 * SAMPLER_INTERVAL <= row["cpu_s"] <= sum(used) + SAMPLER_INTERVAL

    # The CLI's report carries the same figures; JSON, CSV and the table agree.
    report = th.json("usage", "--by", "user")
    (group,) = report["groups"]
    assert group["jobs"] == 1
    for name in ("gpu_allocated_s", "gpu_busy_s", "gpu_waste_s", "cpu_s", "wall_s"):
        assert group[name] == pytest.approx(row[name])
    (line,) = csv.DictReader(io.StringIO(th.run("usage", "--csv", "--by", "day").stdout))
    assert float(line["gpu_waste_s"]) == pytest.approx(row["gpu_waste_s"])
    table = th.run("usage").stdout.splitlines()
    assert table[1].split()[:4] == [
        job["user"],
        "1",
        "1/0/0",
        f"{row['gpu_allocated_s'] / 3600:.1f}",
    ]


def test_the_row_can_be_derived_again_and_a_new_threshold_applied(gpu_env: Trainhub):
    th = gpu_env
    job = th.wait(th.submit("work.py", "--gpus", "2", "--nproc", "2"))
    first = usage_row(th, job["id"])
    assert first is not None

    # A job that ended before accounting existed has no row: the next report derives it.
    with sqlite3.connect(th.home / "trainhub.db") as conn:
        conn.execute("DELETE FROM usage")
    assert th.json("usage")["groups"][0]["gpu_busy_s"] == pytest.approx(first["gpu_busy_s"])
    again = usage_row(th, job["id"])
    assert {k: v for k, v in again.items()} == pytest.approx(first)

    # Over 90 %, both GPUs idle; the operator recomputes after changing the threshold.
    th.env["TRAINHUB_WASTE_UTILIZATION_PCT"] = "90"
    report = th.json("usage", "--recompute")
    assert report["waste_utilization_pct"] == 90
    assert report["groups"][0]["gpu_waste_s"] == pytest.approx(first["gpu_sampled_s"])

    th.env["TRAINHUB_WASTE_UTILIZATION_PCT"] = "lots"
    refused = th.run("usage", check=False)
    assert refused.returncode == 1
    assert "TRAINHUB_WASTE_UTILIZATION_PCT" in refused.stderr
    bad_since = th.run("usage", "--since", "soon", check=False)
    assert bad_since.returncode == 1
    assert "since: 'soon' is neither a span back from now" in bad_since.stderr
