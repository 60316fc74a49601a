"""The example notebook resumes from its last checkpoint (a retry, a fork), also when no step is
left to train.

Real torchrun jobs with 2 ranks (gloo on CPU), and the same notebook run twice interactively.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.local.conftest import EXAMPLE, Trainhub

pytestmark = pytest.mark.slow

# One epoch of 20 steps: a single checkpoint, at step 19, the last step.
QUICK = ["-p", "epochs=1", "-p", "steps_per_epoch=20"]
QUICK_PAPERMILL = ["-p", "epochs", "1", "-p", "steps_per_epoch", "20"]
LAST_STEP = 19

# Cells a test puts between the example's training loop and its last cell.
RANK_LOST_AFTER_THE_LAST_CHECKPOINT = """
import os, signal
checkpoint.wait_all()  # the last checkpoint is saved; then rank 1's machine goes away
if rank == 1 and os.environ["TRAINHUB_ATTEMPT"] == "0":
    os.kill(os.getpid(), signal.SIGKILL)
"""
# Fails as a bug would, after training; "fixed" once the job is a resumed one.
BUG_AFTER_TRAINING = """
import os
if "TRAINHUB_RESUME_FROM" not in os.environ:
    raise RuntimeError("the report could not be written")
"""


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def final_accuracy(log: str) -> str:
    """What the notebook's last cell printed; one line per run in an appended log."""
    found = re.findall(r"done: validation accuracy (\d\.\d{3})", log)
    assert found, log
    return found[-1]


def last_checkpoint_accuracy(th: Trainhub, job_id: str) -> str:
    checkpoints = th.json("checkpoints", job_id)
    assert [c["step"] for c in checkpoints] == [LAST_STEP]
    return f"{checkpoints[0]['metrics']['val_accuracy']:.3f}"


def example_with_a_cell_before_the_last(path: Path, source: str) -> None:
    """The example with ``source`` run after its training loop, where a failure would strike."""
    nb = nbformat.read(EXAMPLE, as_version=4)
    nb.cells.insert(len(nb.cells) - 1, nbformat.v4.new_code_cell(source.strip()))
    nbformat.write(nb, path)


def assert_resumed_at_the_end(th: Trainhub, job_id: str, trained: str) -> None:
    """The job loaded the last checkpoint, trained no further step and finished every cell."""
    for rank in (0, 1):
        log = th.logs(job_id, rank=rank)
        assert f"resumed from step {LAST_STEP}" in log
        # Evaluated from the restored model: the accuracy the last checkpoint recorded.
        assert final_accuracy(log) == trained


def test_a_finished_example_resumes_from_its_last_checkpoint(trainhub_env: Trainhub):
    th = trainhub_env
    first = th.submit("train_ddp.ipynb", "--nproc", "2", *QUICK)
    assert th.wait(first)["state"] == "succeeded", th.logs(first)
    trained = last_checkpoint_accuracy(th, first)
    assert final_accuracy(th.logs(first)) == trained

    resumed = th.run("fork", first).stdout.strip()
    job = th.wait(resumed)
    assert job["state"] == "succeeded", th.logs(resumed)
    assert job["world_size"] == 2
    started = next(e for e in job["timeline"] if e.get("state") == "running")
    assert Path(started["resume_from"]).name == f"{LAST_STEP:010d}"
    assert_resumed_at_the_end(th, resumed, trained)
    assert th.json("checkpoints", resumed) == []  # no step was left to train


def test_a_rank_lost_after_the_last_checkpoint_is_retried_and_succeeds(trainhub_env: Trainhub):
    th = trainhub_env
    example_with_a_cell_before_the_last(
        th.workspace / "lost.ipynb", RANK_LOST_AFTER_THE_LAST_CHECKPOINT
    )
    job_id = th.submit("lost.ipynb", "--nproc", "2", "--retry-backoff", "0", *QUICK)
    job = th.wait(job_id)
    assert job["state"] == "succeeded", th.logs(job_id)
    assert job["attempt"] == 1 and job["retries"] == {"infrastructure": 1}
    events = read_jsonl(th.job_dir(job_id) / "events.jsonl")
    verdict = next(e for e in events if e["type"] == "verdict")
    assert verdict["failure_class"] == "infrastructure" and verdict["rank"] == 1
    retry = next(e for e in events if e["type"] == "retry")
    assert retry["resume_step"] == LAST_STEP
    assert_resumed_at_the_end(th, job_id, last_checkpoint_accuracy(th, job_id))


def test_a_code_failure_after_the_last_checkpoint_is_resumed_and_succeeds(trainhub_env: Trainhub):
    th = trainhub_env
    # A code failure is never retried; once fixed, a fork finishes the run: here asked for by
    # its older spelling, which does it and names it.
    example_with_a_cell_before_the_last(th.workspace / "buggy.ipynb", BUG_AFTER_TRAINING)
    failed = th.submit("buggy.ipynb", "--nproc", "2", *QUICK)
    job = th.wait(failed)
    assert job["state"] == "failed" and job["verdict"]["failure_class"] == "code"
    trained = last_checkpoint_accuracy(th, failed)

    older = th.run("resume", failed)
    assert "trainhub fork" in older.stderr
    resumed = older.stdout.strip()
    assert th.wait(resumed)["state"] == "succeeded", th.logs(resumed)
    assert_resumed_at_the_end(th, resumed, trained)


def test_the_example_run_twice_interactively_resumes_the_second_time(tmp_path: Path):
    """One process, a Jupyter kernel (papermill), checkpoints in a directory of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINHUB_")}
    env["TRAINHUB_CHECKPOINT_DIR"] = str(tmp_path / "checkpoints")

    def run(name: str) -> str:
        out = tmp_path / name
        proc = subprocess.run(
            [sys.executable, "-m", "papermill", EXAMPLE, out, *QUICK_PAPERMILL],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        nb = nbformat.read(out, as_version=4)
        return "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))

    first = run("first.ipynb")
    assert "resumed" not in first
    second = run("second.ipynb")
    assert f"resumed from step {LAST_STEP}" in second
    assert final_accuracy(second) == final_accuracy(first)
