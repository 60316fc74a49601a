"""Local admission on (fake) GPUs: queue order, wait explanations, and no over-admission."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.local.conftest import Trainhub

pytestmark = pytest.mark.slow

HOLD = textwrap.dedent("""
    import json, os, pathlib, time
    start = time.time()
    time.sleep(float(os.environ.get("HOLD_SECONDS", "1")))
    out = pathlib.Path(os.environ["TRAINHUB_JOB_DIR"]) / f"hold-{os.environ['RANK']}.json"
    out.write_text(json.dumps({"start": start, "end": time.time(),
                               "gpus": os.environ["CUDA_VISIBLE_DEVICES"]}))
""")


@pytest.fixture
def gpu_env(trainhub_env: Trainhub, fake_nvml) -> Trainhub:
    env = fake_nvml.env
    env.update({k: v for k, v in trainhub_env.env.items() if k.startswith("TRAINHUB_")})
    env.pop("TRAINHUB_GPUS")
    trainhub_env.env = env
    trainhub_env.fake = fake_nvml
    (trainhub_env.workspace / "hold.py").write_text(HOLD)
    return trainhub_env


def test_waiting_jobs_say_why_and_keep_priority_order(gpu_env: Trainhub):
    gpu_env.fake.set_gpu_count(2)
    big = gpu_env.submit("hold.py", "--gpus", "2", "--env", "HOLD_SECONDS=600", "--name", "big")
    gpu_env.wait(big, {"running"}, timeout=60)
    second = gpu_env.submit("hold.py", "--gpus", "2", "--env", "HOLD_SECONDS=1", "--name", "second")
    urgent = gpu_env.submit(
        "hold.py",
        "--gpus",
        "1",
        "--priority",
        "high",
        "--env",
        "HOLD_SECONDS=1",
        "--name",
        "urgent",
    )

    jobs = {j["name"]: j for j in gpu_env.json("jobs")["jobs"]}
    assert jobs["urgent"]["state"] == "queued" and jobs["second"]["state"] == "queued"
    assert jobs["urgent"]["wait_reason"] == "needs 1 GPU, 0 free; next in line"
    assert jobs["second"]["wait_reason"] == "needs 2 GPUs, 0 free; 1 job ahead"
    assert jobs["second"]["position"] == 1

    refused = gpu_env.run("submit", "hold.py", "--gpus", "3", check=False)
    assert refused.returncode != 0 and "needs 3 GPUs, but this machine has 2 GPUs" in refused.stderr

    gpu_env.run("cancel", big, "--wait")
    assert gpu_env.wait(urgent)["state"] == "succeeded"
    assert gpu_env.wait(second)["state"] == "succeeded"
    urgent_hold = json.loads((gpu_env.job_dir(urgent) / "hold-0.json").read_text())
    second_hold = json.loads((gpu_env.job_dir(second) / "hold-0.json").read_text())
    assert urgent_hold["start"] < second_hold["start"]
    assert second_hold["gpus"] == "0,1"


def test_fifty_concurrent_submissions_never_exceed_the_gpus(gpu_env: Trainhub):
    gpu_env.fake.set_gpu_count(4)
    sizes = [1 + i % 2 for i in range(50)]
    # One process per job, whatever its GPUs: admission counts GPUs, and 25 torchrun agents
    # would only add their PyTorch imports (half of this test's CPU time) to a crowded machine.

    def submit(i: int) -> str:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "trainhub.cli",
                "submit",
                "hold.py",
                "--name",
                f"j{i}",
                "--gpus",
                str(sizes[i]),
                "--nproc",
                "1",
                "--env",
                "HOLD_SECONDS=0.5",
            ],
            cwd=gpu_env.workspace,
            env=gpu_env.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    with ThreadPoolExecutor(max_workers=50) as pool:
        ids = list(pool.map(submit, range(50)))
    assert len(set(ids)) == 50

    holds = []
    # One waiter for all fifty: a `trainhub wait` each would be fifty more processes.
    ended = gpu_env.wait_all(ids, timeout=900)
    for job_id, size, job in zip(ids, sizes, ended, strict=True):
        assert job["id"] == job_id
        assert job["state"] == "succeeded", gpu_env.logs(job_id)
        hold = json.loads((gpu_env.job_dir(job_id) / "hold-0.json").read_text())
        gpus = [int(g) for g in hold["gpus"].split(",")]
        assert len(gpus) == size and gpus == job["assigned_gpus"]
        holds.append((hold["start"], hold["end"], set(gpus)))

    # At every moment a job held its GPUs, no other job held any of the same ones.
    for i, (start, end, gpus) in enumerate(holds):
        overlapping = [g for j, (s, e, g) in enumerate(holds) if j != i and s < end and start < e]
        assert all(not (gpus & other) for other in overlapping)
    assert _max_concurrent(holds) <= 4


def _max_concurrent(holds) -> int:
    points = sorted(
        [(s, len(g)) for s, _, g in holds] + [(e, -len(g)) for _, e, g in holds],
        key=lambda p: (p[0], p[1]),
    )
    in_use = peak = 0
    for _, delta in points:
        in_use += delta
        peak = max(peak, in_use)
    return peak
