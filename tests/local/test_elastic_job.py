"""An elastic job on one machine with real torchrun agents (gloo on CPU): it starts with the
workers that fit, grows when a blocking job ends, shrinks when a higher-priority job takes a
worker's slot, survives a worker killed while the group re-forms, and ends with the result of
a fixed-size run. Gates (files the test removes) hold each job where the test needs it, so no
step depends on timing."""

from __future__ import annotations

import json
import os
import signal
import textwrap
from pathlib import Path

import psutil
import pytest
import torch

from tests.local.conftest import Trainhub, job_processes, wait_for

pytestmark = pytest.mark.slow

# Full-batch gradient descent, each rank summing the gradient of its share of the rows: the
# same weights at every world size. A checkpoint each step; a restart resumes from the latest.
TRAIN = textwrap.dedent("""
    import json, os, pathlib, time
    import torch, torch.distributed as dist
    import trainhub.checkpoint as ckpt

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    rows, steps = 1200, 30
    g = torch.Generator().manual_seed(0)
    x = torch.randn(rows, 4, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 3.0, 0.5]) + 0.1
    w = torch.zeros(4)
    start = ckpt.resume_step()
    if start:
        w = ckpt.load()["w"]
    job = pathlib.Path(os.environ["TRAINHUB_JOB_DIR"])
    gate = pathlib.Path(os.environ["GATE"]) if os.environ.get("GATE") else None
    if rank == 0:
        with open(job / "sizes.jsonl", "a") as f:
            f.write(json.dumps({"step": start, "world": world}) + "\\n")
    mine = slice(rank * rows // world, (rank + 1) * rows // world)
    for step in range(start, steps):
        grad = 2 * x[mine].T @ (x[mine] @ w - y[mine])
        dist.all_reduce(grad)
        w = w - 0.05 * grad / rows
        ckpt.save({"w": w}, step)
        while gate is not None and step >= 5:  # held here while the test resizes the job,
            held = torch.tensor([float(gate.exists())])  # in step with the others, as
            dist.all_reduce(held)  # training is: a worker that left fails this at once
            if not held.item():
                break
            time.sleep(0.2)
    if rank == 0:
        (job / "result.json").write_text(json.dumps(w.tolist()))
""")
HOLD = textwrap.dedent("""
    import os, pathlib, time
    while pathlib.Path(os.environ["GATE"]).exists():
        time.sleep(0.2)
""")


@pytest.fixture
def machine(trainhub_env: Trainhub) -> Trainhub:
    trainhub_env.env.update(TRAINHUB_LOCAL_SLOTS="3", OMP_NUM_THREADS="1")
    (trainhub_env.workspace / "train.py").write_text(TRAIN)
    (trainhub_env.workspace / "hold.py").write_text(HOLD)
    return trainhub_env


def gate(th: Trainhub, name: str) -> Path:
    path = th.workspace / f"{name}.gate"
    path.touch()
    return path


def resizes(th: Trainhub, job_id: str) -> list[str]:
    return [e["reason"] for e in th.describe(job_id)["timeline"] if e["type"] == "resize"]


def sizes(th: Trainhub, job_id: str) -> list[int]:
    path = th.job_dir(job_id) / "sizes.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["world"] for line in lines]


def expected_weights() -> torch.Tensor:
    """What a fixed-size run computes (one process, the same steps)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1200, 4, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 3.0, 0.5]) + 0.1
    w = torch.zeros(4)
    for _ in range(30):
        w = w - 0.05 * (2 * x.T @ (x @ w - y)) / 1200
    return w


def test_an_elastic_job_grows_shrinks_and_ends_as_a_fixed_size_run(machine: Trainhub):
    blocker_gate, high_gate, train_gate = (gate(machine, n) for n in ("blocker", "high", "train"))
    blocker = machine.submit(
        "hold.py", "--nproc", "2", "--env", f"GATE={blocker_gate}", "--name", "blocker"
    )
    elastic = machine.submit("train.py", "--workers", "1:3", "--env", f"GATE={train_gate}")
    wait_for(lambda: sizes(machine, elastic) == [1], 120, "the elastic job running with 1 worker")
    assert machine.describe(elastic)["spec"]["resources"]["min_workers"] == 1

    blocker_gate.unlink()
    wait_for(lambda: sizes(machine, elastic)[-1:] == [3], 180, "the job grown to 3 workers")
    assert resizes(machine, elastic) == [f"grew to 3 workers: slots freed by job {blocker}"]

    high = machine.submit(
        "hold.py", "--priority", "high", "--env", f"GATE={high_gate}", "--name", "high"
    )
    wait_for(lambda: sizes(machine, elastic)[-1:] == [2], 180, "the job shrunk to 2 workers")
    assert resizes(machine, elastic)[1] == f"shrank to 2 workers: worker 2 preempted by job {high}"
    assert machine.describe(high)["state"] == "running"

    high_gate.unlink()
    train_gate.unlink()
    done = machine.wait(elastic, timeout=300)
    assert done["state"] == "succeeded", machine.logs(elastic, check=False)
    assert not done["retries"], done
    result = torch.tensor(json.loads((machine.job_dir(elastic) / "result.json").read_text()))
    assert torch.allclose(result, expected_weights(), atol=1e-4), result

    # Each agent's account of the rendezvous: the rounds it tried and joined, at each size,
    # without its heartbeats; none of it in the agents' output, which the verdict reads.
    logs = machine.job_dir(elastic) / "logs"
    accounts = [a.read_text() for a in sorted(logs.glob("rendezvous-pid*-attempt-0.log"))]
    assert len(accounts) >= 3, accounts  # the first worker, the two it grew by (and more)
    assert all("attempts to join the next round" in text for text in accounts), accounts
    for size in (1, 3, 2):
        assert any(f"in a world of size {size}." in text for text in accounts), (size, accounts)
    assert not any(
        "keep-alive heartbeat" in text or "successfully synced" in text for text in accounts
    )
    assert "has joined round" not in machine.logs(elastic, check=False)


def test_a_worker_killed_while_the_group_reforms_leaves_the_others_going(machine: Trainhub):
    train_gate = gate(machine, "train")
    job = machine.submit("train.py", "--workers", "2:3", "--env", f"GATE={train_gate}")
    # Admitted with 2 workers; the third joins at once (the machine has 3 slots): kill it
    # while the group re-forms around it.
    wait_for(lambda: any(r.startswith("grew to 3") for r in resizes(machine, job)), 120, "growth")
    newest = max(_agents_of(job), key=lambda p: p.create_time(), default=None)
    assert newest is not None
    os.killpg(newest.pid, signal.SIGKILL)
    wait_for(
        lambda: any("agent killed by SIGKILL" in r for r in resizes(machine, job)), 60, "the loss"
    )
    train_gate.unlink()
    done = machine.wait(job, timeout=300)
    assert done["state"] == "succeeded", machine.logs(job, check=False)
    assert not done["retries"], done  # the others went on: no new attempt
    result = torch.tensor(json.loads((machine.job_dir(job) / "result.json").read_text()))
    assert torch.allclose(result, expected_weights(), atol=1e-4), result


def _agents_of(job_id: str) -> list[psutil.Process]:
    return [p for p in job_processes(job_id) if "trainhub.rank.agent" in " ".join(p.cmdline())]
