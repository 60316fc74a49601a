"""trainhub.jobs.world: a world of ranks that a later one superseded publishes no checkpoint,
on either write path (rank 0 with torch.save, every rank with torch.distributed.checkpoint),
and its failure is told as the platform's (infrastructure), not the code's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

import trainhub.checkpoint as ckpt
from trainhub.checkpoint.layout import TEMP_PREFIX, list_checkpoints
from trainhub.jobs import world
from trainhub.jobs.directory import JobDir
from trainhub.jobs.states import FailureClass
from trainhub.lifecycle.classify import explain_exception


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> JobDir:
    """Rank 0 of a one-rank world in a job, which claimed the job's directory."""
    job = JobDir(tmp_path / "job").create()
    for name in ("TRAINHUB_CHECKPOINT_DIR", "TRAINHUB_RESUME_FROM", "TRAINHUB_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRAINHUB_JOB_DIR", str(job.root))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("TRAINHUB_ATTEMPT", "0")
    world.claim(job, world_size=1, attempt=0)
    yield job
    ckpt.wait_all()
    world.forget()


def claimed_by_another_process(job: JobDir, world_size: int = 2) -> None:
    """A later world's rank 0, elsewhere, claims the directory."""
    code = (
        "import sys; from trainhub.jobs import world; from trainhub.jobs.directory import JobDir;"
        f"world.claim(JobDir(sys.argv[1]), world_size={world_size}, attempt=0)"
    )
    subprocess.run([sys.executable, "-c", code, str(job.root)], check=True, timeout=60)


def no_temps(job: JobDir) -> bool:
    return not [p for p in job.checkpoints.iterdir() if p.name.startswith(TEMP_PREFIX)]


@pytest.mark.parametrize("async_", [False, True], ids=["sync", "async"])
def test_a_superseded_world_publishes_nothing_and_says_which_world_took_over(
    job: JobDir, async_: bool
) -> None:
    ckpt.save({"w": torch.ones(4)}, 1, async_=async_).wait()
    claimed_by_another_process(job, world_size=2)
    # The later world's save in progress, which a writer's cleanup of stale temps would take.
    theirs = job.checkpoints / f"{TEMP_PREFIX}0000000002-1-later"
    theirs.mkdir()
    with pytest.raises(world.WorldSuperseded) as refused:
        ckpt.save({"w": torch.zeros(4)}, 2, async_=async_)
        ckpt.wait_all()  # where the runner learns of a background save's failure
    text = str(refused.value)
    assert text.startswith("not writing checkpoint step 2: this world of 1")
    assert "is no longer the job's: a world of 2 started on" in text
    assert [c.step for c in list_checkpoints(job.checkpoints)] == [1]  # step 1 untouched
    assert [p.name for p in job.checkpoints.iterdir() if p.name.startswith(TEMP_PREFIX)] == [
        theirs.name
    ]
    evidence = explain_exception("trainhub.jobs.world.WorldSuperseded", text, "")
    assert (evidence.failure_class, evidence.rule) == (
        FailureClass.INFRASTRUCTURE,
        "world-superseded",
    )


def test_the_world_that_claimed_last_goes_on_saving(job: JobDir) -> None:
    claimed_by_another_process(job)
    world.claim(job, world_size=1, attempt=0)  # this process's world re-formed after it
    assert ckpt.save({"w": torch.ones(4)}, 3).wait().step == 3


def test_a_process_that_claimed_nothing_is_not_fenced(job: JobDir) -> None:
    world.forget()  # a script under torchrun without trainhub's runner: nothing to compare
    claimed_by_another_process(job)
    assert ckpt.save({"w": torch.ones(4)}, 4).wait().step == 4


def test_a_sharded_save_of_a_superseded_world_is_refused_on_every_rank(
    job: JobDir, tmp_path: Path
) -> None:
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        ckpt.save({"w": torch.ones(4)}, 1, sharded=True)
        claimed_by_another_process(job)
        with pytest.raises(world.WorldSuperseded, match="not writing checkpoint step 2"):
            ckpt.save({"w": torch.zeros(4)}, 2, sharded=True)
    finally:
        dist.destroy_process_group()
    assert [c.step for c in list_checkpoints(job.checkpoints)] == [1]
    assert no_temps(job)


def test_a_peers_report_of_the_refusal_is_infrastructure_too() -> None:
    """The other ranks learn of rank 0's refusal through the writer's agreement, by name."""
    text = "checkpoint step 7 failed publishing: rank 0: WorldSuperseded: not publishing ..."
    evidence = explain_exception("trainhub.checkpoint.CheckpointError", text, "")
    assert evidence.failure_class is FailureClass.INFRASTRUCTURE


def test_the_last_worlds_size_is_read_from_its_claim_of_that_attempt(job: JobDir) -> None:
    assert world.last_size(job, 0) == 1  # the fixture's world
    world.claim(job, world_size=3, attempt=0)
    world.claim(job, world_size=2, attempt=0)  # the world after a shrink
    assert world.last_size(job, 0) == 2
    assert world.last_size(job, 1) is None  # a claim of another attempt says nothing of this
    (job.root / world.WORLD).unlink()
    (job.root / world.WORLD).symlink_to(job.root / "spec.json")
    assert world.last_size(job, 0) is None  # the job's own files, never through a link
