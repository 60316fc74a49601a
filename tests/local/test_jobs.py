"""The local engine end to end, with real torchrun processes (gloo on CPU)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from tests.local.conftest import Trainhub, job_processes, wait_for
from trainhub.metrics.ranks import rank_roots

pytestmark = pytest.mark.slow

QUICK = ["-p", "epochs=1", "-p", "steps_per_epoch=20"]


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_example_notebook_succeeds_with_two_ranks(trainhub_env: Trainhub):
    job_id = trainhub_env.submit("train_ddp.ipynb", "--nproc", "2", *QUICK)
    job = trainhub_env.wait(job_id)
    assert job["state"] == "succeeded", trainhub_env.logs(job_id)
    assert job["world_size"] == 2
    for rank in (0, 1):
        assert f"rank {rank} of 2 on cpu" in trainhub_env.logs(job_id, rank=rank)
    assert "done: validation accuracy" in trainhub_env.logs(job_id)

    jobdir = trainhub_env.job_dir(job_id)
    scalars = read_jsonl(jobdir / "metrics" / "scalars.jsonl")
    assert {s["name"] for s in scalars} >= {"loss", "val_accuracy"}
    assert all(s["rank"] == 0 for s in scalars)
    system = read_jsonl(jobdir / "metrics" / "system.jsonl")
    assert {r.get("rank") for r in system} >= {0, 1}
    events = read_jsonl(jobdir / "events.jsonl")
    assert any(e["type"] == "metrics" and e.get("gpu") is False for e in events)
    cell_ends = {
        (e["rank"], e["cell_index"]) for e in events if e["type"] == "cell" and e["phase"] == "end"
    }
    assert {(0, 6), (1, 6)} <= cell_ends  # the last cell ran on both ranks

    checkpoints = trainhub_env.json("checkpoints", job_id)
    assert [c["step"] for c in checkpoints] == [19]
    assert "val_accuracy" in checkpoints[0]["metrics"]

    lineage = json.loads((jobdir / "lineage.json").read_text())
    assert lineage["notebook_sha256"] and lineage["content_hash"]
    assert "torch" in lineage["packages"]
    timeline = [e.get("state") for e in job["timeline"] if e["type"] == "state"]
    assert timeline[0] == "starting" and timeline[-1] == "succeeded" and "running" in timeline


def _notebook(path, *sources, tags=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# a notebook")]
    for src in sources:
        nb.cells.append(nbformat.v4.new_code_cell(textwrap.dedent(src).strip()))
    nbformat.write(nb, path)


def test_error_in_cell_is_reported_as_that_cell_and_not_retried(trainhub_env: Trainhub):
    _notebook(
        trainhub_env.workspace / "broken.ipynb",
        "x = 1",
        "y = 2\nprint('before the error')\nz = y / (x - 1)\nprint('never')",
    )
    job_id = trainhub_env.submit("broken.ipynb", "--nproc", "2", "--retry-infrastructure", "3")
    job = trainhub_env.wait(job_id)
    assert job["state"] == "failed"
    verdict = job["verdict"]
    assert verdict["failure_class"] == "code"
    assert verdict["cell_index"] == 2 and verdict["line"] == 3
    assert verdict["exception"] == "ZeroDivisionError"
    assert "cell 3, line 3" in verdict["reason"]
    assert job["attempt"] == 0 and job["retries"] == {}
    # The raising rank's log (the other may be stopped first, as the failed rank ends the job).
    assert verdict["rank"] in (0, 1)
    assert "before the error" in trainhub_env.logs(job_id, rank=verdict["rank"])


def test_missing_module_is_an_environment_failure(trainhub_env: Trainhub):
    _notebook(trainhub_env.workspace / "env.ipynb", "import a_module_nobody_installed")
    job = trainhub_env.wait(trainhub_env.submit("env.ipynb"))
    assert job["state"] == "failed"
    assert job["verdict"]["failure_class"] == "environment"
    assert job["verdict"]["cell_index"] == 1


def _rank_pid(job_id: str, rank: int) -> int | None:
    """The process running the rank's cells, once it runs them."""
    found = []
    for proc in job_processes(job_id):
        try:
            found.append((proc.pid, proc.ppid(), proc.environ()))
        except psutil.Error:
            continue
    pid = rank_roots(found).get(rank)
    envs = {p: env for p, _, env in found}
    if pid is None or not Path(envs[pid]["TRAINHUB_JOB_DIR"], "logs", f"rank-{rank}.log").exists():
        return None
    return pid


def test_killed_rank_is_infrastructure_and_the_retry_resumes_from_the_latest_checkpoint(
    trainhub_env: Trainhub,
):
    job_id = trainhub_env.submit(
        "train_ddp.ipynb",
        "--nproc",
        "2",
        "--retry-backoff",
        "1",
        "-p",
        "epochs=3",
        "-p",
        "steps_per_epoch=40",
        "-p",
        "step_delay=0.05",
        "-p",
        "async_checkpoints=false",
    )
    ckpts = trainhub_env.job_dir(job_id) / "checkpoints"
    wait_for(lambda: list(ckpts.glob("0*")), 180, "a first checkpoint")
    pid = wait_for(lambda: _rank_pid(job_id, 1), 30, "rank 1")
    saved_before_kill = max(int(p.name) for p in ckpts.glob("0*"))
    os.kill(pid, signal.SIGKILL)

    job = trainhub_env.wait(job_id, timeout=300)
    assert job["state"] == "succeeded", trainhub_env.logs(job_id)
    assert job["attempt"] == 1 and job["retries"] == {"infrastructure": 1}
    events = read_jsonl(trainhub_env.job_dir(job_id) / "events.jsonl")
    verdict = next(e for e in events if e["type"] == "verdict")
    assert verdict["failure_class"] == "infrastructure" and verdict["signal"] == "SIGKILL"
    assert verdict["rank"] == 1 and verdict["retriable"] is True
    retry = next(e for e in events if e["type"] == "retry")
    assert retry["resume_step"] >= saved_before_kill
    log = trainhub_env.logs(job_id)
    assert f"resumed from step {retry['resume_step']}" in log


def test_cancel_stops_every_process(trainhub_env: Trainhub):
    job_id = trainhub_env.submit(
        "train_ddp.ipynb", "--nproc", "2", "-p", "epochs=50", "-p", "step_delay=0.05"
    )
    wait_for(lambda: _rank_pid(job_id, 1), 120, "rank 1 to start")
    started = time.monotonic()
    trainhub_env.run("cancel", job_id, "--wait", "--reason", "not needed any more")
    job = trainhub_env.describe(job_id)
    assert job["state"] == "cancelled"
    assert job["verdict"]["failure_class"] == "cancelled"
    assert job["verdict"]["reason"] == "not needed any more"
    assert job_processes(job_id) == []
    assert time.monotonic() - started < 30


def test_a_cancel_while_the_ranks_start_leaves_no_process(trainhub_env: Trainhub):
    job_id = trainhub_env.submit("train_ddp.ipynb", "--nproc", "2")
    # Whichever it reaches first: the launcher, or torchrun loading PyTorch.
    trainhub_env.run("cancel", job_id, "--wait")
    job = trainhub_env.describe(job_id)
    assert job["state"] == "cancelled" and job["verdict"]["failure_class"] == "cancelled"
    wait_for(lambda: not job_processes(job_id), 15, "the job's processes to end")
    assert not (trainhub_env.job_dir(job_id) / "run").exists()


def test_jobs_tell_the_truth_after_the_submitter_is_killed(trainhub_env: Trainhub):
    script = textwrap.dedent("""
        import sys, time, trainhub
        job = trainhub.submit("train_ddp.ipynb", processes_per_worker=2,
                              parameters={"epochs": 1, "steps_per_epoch": 40, "step_delay": 0.05})
        print(job.id, flush=True)
        time.sleep(600)
    """)
    submitter = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=trainhub_env.workspace,
        env=trainhub_env.env,
        stdout=subprocess.PIPE,
        text=True,
    )
    job_id = submitter.stdout.readline().strip()
    wait_for(lambda: _rank_pid(job_id, 0), 120, "rank 0 to start")
    submitter.kill()
    submitter.wait()
    listed = {j["id"]: j for j in trainhub_env.json("jobs")["jobs"]}
    assert listed[job_id]["state"] in {"starting", "running"}
    job = trainhub_env.wait(job_id)
    assert job["state"] == "succeeded"


def test_a_job_whose_supervisor_died_does_not_stay_running(trainhub_env: Trainhub):
    job_id = trainhub_env.submit(
        "train_ddp.ipynb",
        "--nproc",
        "2",
        "-p",
        "epochs=50",
        "-p",
        "step_delay=0.05",
        "--retry-infrastructure",
        "0",
    )
    wait_for(lambda: _rank_pid(job_id, 1), 120, "rank 1 to start")
    wait_for(
        lambda: trainhub_env.describe(job_id)["state"] == "running", 30, "the job to be running"
    )
    supervisor = next(
        p
        for p in psutil.process_iter(["cmdline"])
        if p.info["cmdline"]
        and job_id in p.info["cmdline"]
        and "trainhub.backends.local.launcher" in p.info["cmdline"]
    )
    supervisor.kill()
    supervisor.wait(10)
    jobs = {j["id"]: j for j in trainhub_env.json("jobs")["jobs"]}  # reconciles
    assert jobs[job_id]["state"] == "failed"
    job = trainhub_env.describe(job_id)
    assert job["verdict"]["failure_class"] == "infrastructure"
    assert "supervisor" in job["verdict"]["reason"]
    wait_for(lambda: not job_processes(job_id), 15, "the job's processes to end")
