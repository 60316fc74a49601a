"""Goodput of real jobs on the local backend with fake GPUs: a clean run loses only its
start-up and checkpoint stalls; a run whose first attempt is killed after step 27, with its
latest checkpoint at step 20, redoes steps 21..27 on the retry and keeps less of its GPU
time. The CLI's report sums both per team."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.fixtures.fake_nvml.fake import FakeNvml
from tests.local.conftest import Trainhub

STEPS = 80
TRAIN = """
import os, signal, time
import trainhub, trainhub.checkpoint as ckpt

kill_at = KILL_AT
attempt = int(os.environ.get("TRAINHUB_ATTEMPT", "0"))
for step in range(ckpt.resume_step(), STEPS):
    time.sleep(0.2)
    trainhub.log(step=step, loss=1.0 / (step + 1))
    if step in (10, 20):
        ckpt.save({"step": step}, step)
    if attempt == 0 and step == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)  # the machine lost it: retried from step 20
"""


@pytest.fixture
def gpu_env(trainhub_env: Trainhub, fake_nvml: FakeNvml) -> Trainhub:
    fake_nvml.set(0, utilization_gpu=90)
    env = {k: v for k, v in trainhub_env.env.items() if k != "TRAINHUB_GPUS"}
    env["LD_LIBRARY_PATH"] = fake_nvml.env["LD_LIBRARY_PATH"]
    env["FAKE_NVML_STATE"] = fake_nvml.env["FAKE_NVML_STATE"]
    trainhub_env.env = env
    (trainhub_env.workspace / "train.py").write_text(
        TRAIN.replace("KILL_AT", "-1").replace("STEPS", str(STEPS))
    )
    (trainhub_env.workspace / "killed.py").write_text(
        TRAIN.replace("KILL_AT", "27").replace("STEPS", str(STEPS))
    )
    return trainhub_env


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def usage_row(th: Trainhub, job_id: str) -> dict:
    with sqlite3.connect(th.home / "trainhub.db") as conn:
        conn.row_factory = sqlite3.Row
        return dict(conn.execute("SELECT * FROM usage WHERE job_id = ?", (job_id,)).fetchone())


def test_a_retry_from_an_older_checkpoint_costs_goodput(gpu_env: Trainhub):
    th = gpu_env
    args = ("--gpus", "1", "--team", "optics", "--retry-backoff", "1")
    clean = th.wait(th.submit("train.py", *args), timeout=300)
    killed = th.wait(th.submit("killed.py", *args, "--retry-infrastructure", "1"), timeout=300)
    assert clean["state"] == killed["state"] == "succeeded", th.logs(killed["id"])
    assert killed["attempt"] == 1

    events = read_jsonl(th.job_dir(killed["id"]) / "events.jsonl")
    assert next(e for e in events if e["type"] == "retry")["resume_step"] == 20

    c, k = usage_row(th, clean["id"]), usage_row(th, killed["id"])
    # The clean run: nothing redone or interrupted; what it lost is start-up and saves.
    assert (c["redone_steps"], c["gpu_redone_s"], c["gpu_interrupted_s"]) == (0, 0, 0)
    assert c["steps"] == k["steps"] == STEPS
    stalls = sum(
        e["stall_seconds"]
        for e in read_jsonl(th.job_dir(clean["id"]) / "events.jsonl")
        if e["type"] == "checkpoint"
    )
    assert c["gpu_checkpoint_s"] == pytest.approx(stalls, abs=0.01)
    lost = c["gpu_startup_s"] + c["gpu_checkpoint_s"]
    assert c["goodput"] == pytest.approx(1 - lost / c["gpu_allocated_s"])
    assert c["goodput"] > 0.5  # 16 s of steps against the interpreter's start-up

    # The killed run: steps 21..27 twice, at 0.2 s each, and waiting between its attempts.
    assert k["redone_steps"] == 7
    assert k["gpu_redone_s"] == pytest.approx(7 * 0.2, abs=0.5)
    assert k["requeue_s"] >= 1  # the backoff
    # What the retry cost counts against it: of its GPU time, what is left after its start-ups
    # and saves, less the redone steps and the killed attempt's tail. (Not against the clean
    # run's goodput: that one's start-up, at another moment, is as slow as the machine was.)
    overheads = k["gpu_startup_s"] + k["gpu_checkpoint_s"]
    retry_cost = k["gpu_redone_s"] + k["gpu_interrupted_s"]
    assert k["goodput"] == pytest.approx(1 - (overheads + retry_cost) / k["gpu_allocated_s"])
    assert 0 < k["goodput"] < 1 - overheads / k["gpu_allocated_s"]

    # Per team in the CLI's report: the productive share of both jobs' GPU time.
    (team,) = th.json("usage", "--by", "team")["groups"]
    assert team["key"] == "optics"
    assert team["gpu_redone_s"] == pytest.approx(k["gpu_redone_s"])
    assert team["goodput"] == pytest.approx(
        (c["gpu_productive_s"] + k["gpu_productive_s"])
        / (c["gpu_allocated_s"] + k["gpu_allocated_s"])
    )
    line = next(x for x in th.run("usage", "--by", "team").stdout.splitlines() if "optics" in x)
    assert f"{100 * team['goodput']:.0f}%" in line.split()
