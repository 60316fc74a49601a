"""Suspend and resume on the local backend, with real torchrun jobs (2 ranks, gloo on CPU).

The example notebook registers a save with ``trainhub.checkpoint.on_stop``: a suspend stops
its ranks with that save made, frees its CPU slots for the next job in the queue, and a
resume continues the same job from that step to the end.
"""

from __future__ import annotations

import json

import psutil
import pytest

from tests.local.conftest import Trainhub, job_processes, wait_for

pytestmark = pytest.mark.slow

# 4 epochs of 40 steps, 0.1 s each: long enough to be suspended between two saves.
LONG = ["-p", "epochs=4", "-p", "steps_per_epoch=40", "-p", "step_delay=0.1"]
QUICK = ["-p", "epochs=1", "-p", "steps_per_epoch=20"]


def processes_naming(job_id: str) -> list[psutil.Process]:
    """Live processes whose command line names the job (its launcher and supervisor)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] != psutil.STATUS_ZOMBIE and any(job_id in a for a in cmdline):
            found.append(proc)
    return found


def logged_steps(th: Trainhub, job_id: str) -> list[int]:
    path = th.job_dir(job_id) / "metrics" / "scalars.jsonl"
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e["step"] for e in lines if e.get("name") == "loss"]


def test_a_suspended_job_frees_its_slots_and_resumes_from_its_saved_step(trainhub_env: Trainhub):
    th = trainhub_env
    th.env["TRAINHUB_LOCAL_SLOTS"] = "2"  # room for one 2-rank job at a time
    first = th.submit("train_ddp.ipynb", "--nproc", "2", *LONG)
    wait_for(lambda: any(s >= 30 for s in logged_steps(th, first)), 180, "training past step 30")
    second = th.submit("train_ddp.ipynb", "--nproc", "2", *QUICK)
    assert th.describe(second)["state"] == "queued"  # the first job holds both slots

    out = th.run("suspend", first, "--wait").stdout
    assert f"{first}: suspending" in out
    job = th.describe(first)
    assert job["state"] == "suspended", job
    step = job["suspended_step"]
    # The ranks ran the on_stop callback (it saves what training reached since the last
    # periodic save); the step recorded is the latest checkpoint's.
    saved = [c["step"] for c in th.json("checkpoints", first)]
    assert step == max(saved) and step >= 30, saved
    assert "running the job's stop callbacks" in th.logs(first, rank=0)
    assert job["assigned_gpus"] == [] and job["verdict"] is None
    timeline = [e["type"] for e in job["timeline"]]
    assert timeline[-3:] == ["suspend_requested", "suspended", "state"], timeline
    # Nothing of it is left: no rank, no torchrun agent, no supervisor.
    wait_for(lambda: not job_processes(first) and not processes_naming(first), 15, "no process")
    # Its slots went to the queued job, which runs to its end meanwhile.
    assert th.wait(second)["state"] == "succeeded", th.logs(second)

    again = th.run("suspend", first, check=False)
    assert again.returncode != 0 and "already suspended" in again.stderr

    assert th.run("resume", first).stdout.strip() == first  # the same job, not a new one
    job = th.wait(first)
    assert job["state"] == "succeeded", th.logs(first)
    assert job["attempt"] == 1 and job["suspended_step"] is None
    for rank in (0, 1):
        assert f"resumed from step {step}" in th.logs(first, rank=rank)
    # The resumed attempt trained on to the end from the step after the saved one.
    steps = logged_steps(th, first)
    assert steps[-1] == 150 and min(s for s in steps if s > step) <= step + 10, steps


def test_a_queued_job_is_suspended_on_the_spot(trainhub_env: Trainhub):
    th = trainhub_env
    th.env["TRAINHUB_LOCAL_SLOTS"] = "2"
    blocker = th.submit("train_ddp.ipynb", "--nproc", "2", *LONG)
    queued = th.submit("train_ddp.ipynb", "--nproc", "2", *QUICK)
    assert th.run("suspend", queued).stdout.strip() == f"{queued}: suspended"
    job = th.describe(queued)
    assert job["state"] == "suspended" and job["suspended_step"] is None
    th.run("cancel", blocker, "--wait")
    th.run("resume", queued)
    assert th.wait(queued)["state"] == "succeeded", th.logs(queued)
